"""`make bench-frameworks`: every zoo model at bench size through rml and the frameworks, side by side.

    python bench/frameworks.py [--models mlp,cnn] [--batches 1,16] [--threads 1,2]
                               [--systems rml_cpp,torch,...] [--rounds 7] [--target 0.2] [--quick]
                               [--out docs/benchmarks.md] [--chart docs/images/benchmarks.png]
                               [--note TEXT] [--from-json RESULTS.json]

Systems (bench/frameworks_worker.py): rml's C++ executor (the `rml` binary) and its
Python binding, PyTorch eager, torch.compile, jax.jit, tf.function with and without
XLA, ONNX Runtime on torch.onnx.export's model and on `rml convert --to onnx`'s, and
the LiteRT interpreter (TFLite's runtime) on `rml convert --to tflite`'s.
Each model is exported once from PyTorch into --scratch; every system reads the same
inputs (zoo/inputs.py) and checks its output against PyTorch's.

For each (model, batch, threads), every system gets a fresh worker process, pinned
with `taskset` to the first THREADS of the cores this process may use, with every
thread-count knob set to THREADS. Workers start one after another (each reports its
load/first-result time), then the rounds run: in round r each system times one round
(the median of its runs; runs per round chosen so a round lasts about --target
seconds), in an order rotated by r, so drift hits every system alike. The report gives
the median of the round medians and their min-max, then each worker's peak memory.
--quick: 3 rounds of about 0.05 s, and unless given, mlp,cnn,transformer_block at batch 1 on 1 thread.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "docs" / "benchmarks.md"
DEFAULT_CHART = REPO / "docs" / "images" / "benchmarks.png"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from frameworks_report import environment, write_report  # noqa: E402
from frameworks_worker import SYSTEMS, paths  # noqa: E402
from zoo.configs import MODELS  # noqa: E402

PYTHON = sys.executable
WORKER = REPO / "bench" / "frameworks_worker.py"
QUICK = {"models": "mlp,cnn,transformer_block", "batches": "1", "threads": "1", "rounds": 3, "target": 0.05}
FULL = {"models": ",".join(MODELS), "batches": "1,16", "threads": "1,2", "rounds": 7, "target": 0.2}
SETTLE_S = 0.05  # a pause before each round, so the previous system's spinning threads go to sleep


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help=f"comma-separated zoo models (default: all {len(MODELS)})")
    parser.add_argument("--batches", help="comma-separated batch sizes (default 1,16)")
    parser.add_argument("--threads", help="comma-separated thread counts (default 1,2)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, of: {', '.join(SYSTEMS)}")
    parser.add_argument("--rounds", type=int, help="rounds per measurement (default 7)")
    parser.add_argument("--target", type=float, help="seconds per round and system (default 0.2)")
    parser.add_argument("--quick", action="store_true", help="3 short rounds, and a small subset unless given")
    parser.add_argument("--rml", default=str(REPO / "build" / "rml"), help="the rml command-line tool")
    parser.add_argument("--scratch", type=Path, default=REPO / "build" / "bench-frameworks")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--chart", type=Path,
                        help="the bar chart (default: docs/images/benchmarks.png for the default --out, "
                             "else --out with .png: a subset run must not overwrite the published chart)")
    parser.add_argument("--note", default="", help="a paragraph for the top of the report")
    parser.add_argument("--from-json", type=Path, help="write the report from an earlier run's results.json")
    args = parser.parse_args(argv)
    if args.chart is None:
        args.chart = DEFAULT_CHART if args.out.resolve() == DEFAULT_OUT else args.out.with_suffix(".png")
    for key, value in (QUICK if args.quick else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.models, args.systems = args.models.split(","), args.systems.split(",")
    args.batches, args.threads = [int(b) for b in args.batches.split(",")], [int(t) for t in args.threads.split(",")]
    if unknown := [m for m in args.models if m not in MODELS] + [s for s in args.systems if s not in SYSTEMS]:
        parser.error(f"unknown model or system: {', '.join(unknown)}")
    if max(args.threads) > len(os.sched_getaffinity(0)):
        parser.error(f"--threads {max(args.threads)}: only {len(os.sched_getaffinity(0))} cores granted")
    return args


def log(message: str) -> None:
    print(message, flush=True)


def pinned(threads: int) -> list[str]:
    """taskset onto the first `threads` cores granted to this process."""
    cores = sorted(os.sched_getaffinity(0))[:threads]
    return ["taskset", "-c", ",".join(map(str, cores))]


def worker_env(system: str, threads: int, cache: Path) -> dict[str, str]:
    """Every thread-count knob at `threads`; XLA's Eigen pool off on one thread (above one,
    XLA sizes its pool from the taskset mask)."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads), TF_CPP_MIN_LOG_LEVEL="2", JAX_PLATFORMS="cpu",
               TORCHINDUCTOR_COMPILE_THREADS="1", TORCHINDUCTOR_CACHE_DIR=str(cache), PYTHONWARNINGS="ignore")
    if threads == 1:
        env["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    return env


# What `rml convert` writes for the systems that run rml's converted models; a model the
# TFLite converter refuses has no .tflite and LiteRT is skipped on it, with the reason.
CONVERSIONS = {"rml_onnx": ("onnx", True), "rml_tflite": ("tflite", False)}  # key: (format, must succeed)


def prepare(args) -> None:
    """Exports each model from PyTorch (once per scratch folder) and converts it with `rml convert`."""
    args.scratch.mkdir(parents=True, exist_ok=True)
    for model in args.models:
        missing = [b for b in args.batches if not paths(args.scratch, model, b)["graph"].exists()]
        if missing:
            start = time.perf_counter()
            subprocess.run([*pinned(max(args.threads)), PYTHON, "-W", "ignore", str(WORKER), "prepare", model,
                            "--batches", ",".join(map(str, missing)), "--scratch", str(args.scratch)],
                           check=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), stderr=subprocess.DEVNULL)
            log(f"exported {model} (batches {','.join(map(str, missing))}) in {time.perf_counter() - start:.1f} s")
        for batch in args.batches:
            where = paths(args.scratch, model, batch)
            for key, (fmt, required) in CONVERSIONS.items():
                if where[key].exists():
                    continue
                done = subprocess.run([args.rml, "convert", str(where["graph"]), "--to", fmt, "-o", str(where[key])],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                if done.returncode != 0:
                    if required:
                        raise SystemExit(f"rml convert --to {fmt} failed on {model} batch {batch}: {done.stderr.strip()}")
                    log(f"{model} b{batch}: no {fmt} model: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}")


class Worker:
    """One system's worker process for one (model, batch, threads)."""

    def __init__(self, args, system: str, model: str, batch: int, threads: int):
        self.system = system
        tag = f"{model}_b{batch}_t{threads}_{system}"
        logs = args.scratch / "logs"
        logs.mkdir(exist_ok=True)
        self.log = open(logs / f"{tag}.log", "w")  # the framework's own chatter
        cache = args.scratch / "inductor" / tag
        shutil.rmtree(cache, ignore_errors=True)  # torch.compile's load time is a cold compile
        self.process = subprocess.Popen(
            [*pinned(threads), PYTHON, "-W", "ignore", str(WORKER), "serve", system, model, "--batch", str(batch),
             "--threads", str(threads), "--scratch", str(args.scratch), "--rml", args.rml, "--target", str(args.target)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
            env=worker_env(system, threads, cache))
        self.ready = self.ask(None)

    def ask(self, request: str | None) -> dict:
        try:
            if request is not None:
                self.process.stdin.write(request + "\n")
                self.process.stdin.flush()
            line = self.process.stdout.readline()
        except BrokenPipeError:
            line = ""
        return json.loads(line) if line else {"error": f"the worker exited ({self.process.wait()})"}

    def close(self) -> int | None:
        peak = self.ask("quit").get("peak_kib") if "error" not in self.ready else None
        self.process.wait()
        self.log.close()
        return peak


def measure_cell(args, model: str, batch: int, threads: int) -> list[dict]:
    """Every system on one (model, batch, threads): load each, then interleaved rounds."""
    cell = f"{model} b{batch} t{threads}"
    workers, results = [], {}
    for system in args.systems:
        worker = Worker(args, system, model, batch, threads)
        ready = worker.ready
        results[system] = {"model": model, "batch": batch, "threads": threads, "system": system, **ready, "rounds": []}
        if "error" in ready:
            log(f"{cell} {SYSTEMS[system]:<22} skipped: {ready['error']}")
            worker.close()
            continue
        log(f"{cell} {SYSTEMS[system]:<22} loaded, first result in {ready['load_s'] * 1e3:9.1f} ms; "
            f"{ready['repeat']} runs in round 1; max |diff| to PyTorch {ready['max_diff']:.1e}")
        workers.append(worker)
    for r in range(args.rounds):
        shift = r % len(workers) if workers else 0
        for worker in workers[shift:] + workers[:shift]:
            time.sleep(SETTLE_S)
            reply = worker.ask("time")
            if "median_s" not in reply:  # the worker died: the system is skipped on this cell
                results[worker.system]["error"] = reply.get("error", "no answer")
                log(f"{cell} {SYSTEMS[worker.system]:<22} failed in round {r + 1}: {results[worker.system]['error']}")
                workers.remove(worker)
                worker.close()
                continue
            results[worker.system]["rounds"].append(reply["median_s"])
            log(f"{cell} {SYSTEMS[worker.system]:<22} round {r + 1}/{args.rounds}: {reply['median_s'] * 1e3:10.4f} ms"
                f" (median of {reply['runs']})")
    for worker in workers:
        result = results[worker.system]
        result["peak_kib"] = worker.close()
        result["median_s"] = statistics.median(result["rounds"])
    return [results[s] for s in args.systems]


def recorded_command(argv: list[str]) -> str:
    """The command line for the report, less --note (its text is in the report already)."""
    kept, skip = [], False
    for a in argv:
        if skip or a.startswith("--note="):
            skip = False
        elif a == "--note":
            skip = True
        else:
            kept.append(shlex.quote(a))
    return " ".join(["python bench/frameworks.py", *kept])


def main(argv=None) -> int:
    args = parse_args(argv)
    command = recorded_command(sys.argv[1:] if argv is None else argv)
    if args.from_json:
        run = json.loads(args.from_json.read_text())
    else:
        prepare(args)
        results = []  # environment() after the runs: it imports every framework
        for threads in args.threads:
            for batch in args.batches:
                for model in args.models:
                    results += measure_cell(args, model, batch, threads)
        run = {"command": command, "environment": environment(), "note": args.note, "results": results}
        (args.scratch / "results.json").write_text(json.dumps(run, indent=1) + "\n")
    if args.note:
        run["note"] = args.note
    write_report(run, args.out, args.chart)
    log(f"wrote {args.out} and {args.chart}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
