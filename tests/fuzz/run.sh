#!/usr/bin/env bash
# Runs every libFuzzer harness for SECONDS each (make fuzz FUZZ_SECONDS=N) and
# prints one line per harness: executions, speed, corpus size, findings.
# usage: tests/fuzz/run.sh BUILD_DIR SECONDS [HARNESS...]
# The C++ harnesses are BUILD_DIR/fuzz_HARNESS; stablehlo is the atheris
# harness tests/fuzz/fuzz_stablehlo.py, run by $PYTHON (default: the
# repository's .venv, made by make venv).
# FUZZ_RUNS=N in the environment also stops each harness after N executions.
# FUZZ_FAST=1 trades two checks for about three times the speed, for long local
# campaigns: ASan's stack-use-after-return detection and allocation stack
# traces are off, and libFuzzer's entropic scheduling (costly with the op
# harness's 30k coverage features) too. CI runs with every check on.
# A finding (crash, sanitizer report, leak, time-out, memory past 2 GB) stops
# the run with exit 1 and leaves its input as BUILD_DIR/findings/HARNESS-*;
# replay it with BUILD_DIR/fuzz_HARNESS FILE, then make it a fixture in
# tests/bad_inputs/ (expected.tsv; fuzz_op.cpp says how to write one) or a
# Python regression test (stablehlo) before fixing it.
set -euo pipefail
build=$1
seconds=$2
shift 2
[ $# -gt 0 ] || set -- safetensors graph op protobuf stablehlo
harnesses=("$@")
root=$(cd "$(dirname "$0")/../.." && pwd)
python=${PYTHON:-$root/.venv/bin/python}

# Seed corpora: the files rml ships and the catalogue of bad inputs.
seeds() {
  case $1 in
    safetensors) ls "$root"/tests/bad_inputs/*.safetensors "$root"/examples/*.safetensors "$root"/testdata/*.safetensors 2>/dev/null ;;
    graph) ls "$root"/tests/bad_inputs/*.json "$root"/examples/*.json 2>/dev/null ;;
    protobuf) ls "$root"/tests/fuzz/seeds/protobuf/*.onnx ;;
    stablehlo) ls "$root"/tests/fuzz/seeds/stablehlo/*.mlir ;;
  esac
}

fast_options=()
if [ "${FUZZ_FAST:-0}" = 1 ]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_stack_use_after_return=0:malloc_context_size=0
  fast_options=(-entropic=0)
fi

mkdir -p "$build/findings"
status=0
for h in "${harnesses[@]}"; do
  corpus=$build/corpus/$h
  mkdir -p "$corpus"
  # A fresh corpus starts from copies of the seeds (libFuzzer adds to the first folder only).
  if [ -z "$(ls -A "$corpus")" ]; then seeds "$h" | while read -r f; do cp "$f" "$corpus/"; done; fi
  log=$build/fuzz_$h.log
  harness=("$build/fuzz_$h")
  [ "$h" != stablehlo ] || harness=("$python" "$root/tests/fuzz/fuzz_stablehlo.py")
  start=$(date +%s)
  found_before=$(ls "$build/findings" | grep -c "^$h-" || true)
  rc=0
  "${harness[@]}" -max_total_time="$seconds" -runs="${FUZZ_RUNS:--1}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "${fast_options[@]}" \
      -artifact_prefix="$build/findings/$h-" "$corpus" >"$log" 2>&1 || rc=$?
  # What a run ended with is read from what it left: a finding is a new file in
  # findings/; libFuzzer exits with 72 when stopped by a signal (Ctrl-C, kill).
  found=$(( $(ls "$build/findings" | grep -c "^$h-" || true) - found_before ))
  if [ "$found" -gt 0 ]; then result="FINDING (see $log)"; status=1
  elif [ "$rc" = 0 ]; then result="no findings"
  elif [ "$rc" = 72 ]; then result="stopped by a signal, no findings"; status=1
  else result="FAILED with exit status $rc, no input saved (see $log)"; status=1; fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  elapsed=$(( $(date +%s) - start ))
  printf '%-12s %12s executions in %5d s (%6d/s), corpus %5d inputs: %s\n' "$h" "${runs:-?}" "$elapsed" \
    "$(( ${runs:-0} / (elapsed > 0 ? elapsed : 1) ))" "$(ls "$corpus" | wc -l)" "$result"
done
exit $status
