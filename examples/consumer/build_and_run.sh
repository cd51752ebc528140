#!/usr/bin/env bash
# Builds and runs the downstream consumers of rml against this checkout,
# with each C++ compiler given (default: g++), in WORK (a scratch folder):
#   find_package   - rml installed by `cmake --install` into WORK/prefix
#   fetch_content  - FetchContent pointed at this checkout
#   single_header  - only single_include/rml/run.hpp, copied into WORK/vendor
#   split          - split mode (RML_SPLIT), on the installed tree and on the
#                    single header: one file compiles rml, the other sees
#                    declarations only
# usage: examples/consumer/build_and_run.sh WORK [COMPILER...]   (ctest: consumers)
set -euo pipefail
work=$1
shift
[ $# -gt 0 ] || set -- g++
root=$(cd "$(dirname "$0")/../.." && pwd)
model=$root/examples/tiny_net/torch.json
rm -rf "$work"
mkdir -p "$work/vendor/rml"

echo "== installing rml into $work/prefix"
cmake -S "$root" -B "$work/rml-build" -DRML_BUILD_TESTS=OFF -DRML_BUILD_PROGRAMS=OFF >"$work/install.log"
cmake --install "$work/rml-build" --prefix "$work/prefix" >>"$work/install.log"
cp "$root/single_include/rml/run.hpp" "$work/vendor/rml/"
# The vendored header needs nothing but the standard library.
if grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]\(nlohmann\|xtensor\|flatbuffers\)' "$work/vendor/rml/run.hpp"; then
  echo "single_include/rml/run.hpp includes a third-party header" >&2
  exit 1
fi

for cxx in "$@"; do
  for consumer in find_package fetch_content single_header split; do
    build=$work/$(basename "$cxx")/$consumer
    mkdir -p "$(dirname "$build")"
    echo "== $consumer with $cxx ($("$cxx" --version | head -1))"
    cmake -S "$root/examples/consumer/$consumer" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$work/prefix" -DRML_CHECKOUT="$root" -DRML_VENDOR_DIR="$work/vendor" >"$build.log" 2>&1 \
      || { cat "$build.log"; exit 1; }
    cmake --build "$build" -j 2 >>"$build.log" 2>&1 || { cat "$build.log"; exit 1; }
    "$build/check_tiny_net" "$model"
    [ "$consumer" != split ] || "$build/check_tiny_net_single_header" "$model"
  done
done
echo "consumers: all built and exact"
