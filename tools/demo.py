"""`make demo`: a zoo model from PyTorch, run by rml's C++ executor, next to PyTorch.

    python tools/demo.py [--model transformer_block] [--size bench] [--batch 1]
                         [--threads 1] [--repeat 50] [--rml build/rml]

Exports the model with the PyTorch direct exporter, writes the graph and its
inputs under build/demo/, runs the graph with the `rml` command-line tool (C++,
no Python) fused, unfused and on the reference kernels, and prints each
result's largest absolute difference from PyTorch's output and the median
latency of each, PyTorch's measured in this process on as many threads.
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import rml  # noqa: E402
from zoo.configs import MODELS, config  # noqa: E402

TOLERANCE = 1e-5  # the spec's bound for the executor against the framework
UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def torch_latency(module, inputs, repeat: int) -> float:
    import torch
    with torch.inference_mode():
        for _ in range(3):
            module(*inputs)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            module(*inputs)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def rml_run(rml_cli: str, graph: Path, inputs: Path, output: Path, threads: int, repeat: int, *flags) -> float:
    """Runs `rml run`; returns the median latency it reports, in seconds."""
    command = [rml_cli, "run", str(graph), "--inputs", str(inputs), "--output", str(output),
               "--threads", str(threads), "--repeat", str(repeat), *flags]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr}")
    found = re.search(r"latency: median ([0-9.]+) ([a-zµ]+)", result.stdout)
    if not found:
        raise SystemExit(f"no latency in the output of {' '.join(command)}:\n{result.stdout}")
    return float(found.group(1)) * UNITS[found.group(2)]


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1e3:9.3f} ms"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="transformer_block", choices=MODELS)
    parser.add_argument("--size", default="bench", choices=("tiny", "bench"))
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--rml", default=str(REPO / "build" / "rml"), help="the rml command-line tool")
    parser.add_argument("--out", type=Path, default=REPO / "build" / "demo")
    args = parser.parse_args(argv)

    import torch

    from rml.from_torch import export
    from zoo.torch_zoo import build

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    module, make_inputs = build(args.model, args.size)
    inputs = make_inputs(args.batch)
    names = [f"input.{i}" for i in range(len(inputs))]
    print(f"{args.model} ({args.size}: {config(args.model, args.size)}), batch {args.batch}, "
          f"PyTorch {torch.__version__}, {args.threads} thread(s)", flush=True)

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        builder = export(module, inputs, input_names=names)
    graph = args.out / f"torch_{args.model}.json"
    builder.write(str(graph))
    feeds = args.out / f"torch_{args.model}.inputs.safetensors"
    rml.write_tensors(str(feeds), {n: t.numpy() for n, t in zip(names, inputs)})
    print(f"exported {builder.node_count} nodes to {graph.relative_to(REPO) if graph.is_relative_to(REPO) else graph} "
          f"in {time.perf_counter() - start:.1f} s", flush=True)

    with torch.inference_mode():
        expected = module(*inputs).numpy()
    rows = [("PyTorch (eager)", None, torch_latency(module, inputs, args.repeat))]
    runs = [("rml executor, fused", args.repeat, ()), ("rml executor, unfused", args.repeat, ("--no-fuse",)),
            ("rml reference kernels", max(3, args.repeat // 10), ("--reference",))]
    for label, repeat, flags in runs:
        result = args.out / "result.safetensors"
        seconds = rml_run(args.rml, graph, feeds, result, args.threads, repeat, *flags)
        got = rml.read_tensors(str(result))["output"]
        rows.append((label, float(np.max(np.abs(got.astype(np.float64) - expected))), seconds))

    torch_seconds = rows[0][2]
    print(f"\n{'':24s} {'max |x - torch|':>16s} {'median latency':>15s} {'vs PyTorch':>11s}")
    for label, difference, seconds in rows:
        shown = "-" if difference is None else f"{difference:.2e}"
        print(f"{label:24s} {shown:>16s} {milliseconds(seconds):>15s} {torch_seconds / seconds:10.2f}x")
    worst = max(d for _, d, _ in rows[1:])
    verdict = "within" if worst <= TOLERANCE else "OUTSIDE"
    print(f"\nevery rml result is {verdict} {TOLERANCE:g} of PyTorch's (worst {worst:.2e}); "
          f"'vs PyTorch' > 1 means faster than PyTorch")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
