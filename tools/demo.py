"""`make demo`: one zoo model from PyTorch, JAX and TensorFlow, run by rml's C++
executor, next to the frameworks.

    python tools/demo.py [--model transformer_block] [--size bench] [--batch 1]
                         [--threads 1] [--repeat 200] [--rml build/rml]

Builds the model in each framework on the same weights, exports it with each
direct exporter, writes the graphs and the shared inputs under build/demo/, and
runs each graph with the `rml` command-line tool (C++, no Python). Prints the
pairwise largest absolute difference of the three framework outputs and the
three rml results, and the median latency of each framework (PyTorch eager,
jax.jit, tf.function) and of rml, on as many threads.
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
from zoo.inputs import example_inputs  # noqa: E402

TOLERANCE = 1e-5  # the spec's bound between any two results
UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def median_seconds(run, repeat: int) -> float:
    for _ in range(3):
        run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def torch_route(model, size, inputs, threads, repeat):
    """(version, framework output, framework latency, rml Builder)."""
    import torch

    from rml.from_torch import export
    from zoo.torch_zoo import build

    torch.set_num_threads(threads)
    module, _ = build(model, size)
    tensors = tuple(torch.from_numpy(x) for x in inputs)
    with torch.inference_mode():
        output = module(*tensors).numpy()
        seconds = median_seconds(lambda: module(*tensors), repeat)
    names = [f"input.{i}" for i in range(len(tensors))]
    return f"PyTorch {torch.__version__}", output, seconds, export(module, tensors, input_names=names)


def jax_route(model, size, inputs, threads, repeat):
    import jax

    from rml.from_jax import export
    from zoo.jax_zoo import build

    fn, params, _ = build(model, size)
    compiled = jax.jit(fn)
    output = np.asarray(compiled(params, *inputs))
    seconds = median_seconds(lambda: compiled(params, *inputs).block_until_ready(), repeat)
    return f"JAX {jax.__version__}", output, seconds, export(fn, params, inputs)


def tf_route(model, size, inputs, threads, repeat):
    import tensorflow as tf

    from rml.from_tf import export
    from zoo.tf_zoo import build

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    module, _ = build(model, size)
    function = tf.function(module)
    tensors = [tf.constant(x) for x in inputs]
    output = function(*tensors).numpy()
    seconds = median_seconds(lambda: function(*tensors).numpy(), repeat)
    return f"TensorFlow {tf.__version__}", output, seconds, export(module, inputs)


ROUTES = {"torch": torch_route, "jax": jax_route, "tf": tf_route}  # PyTorch first: see tools/make_fixtures.py


def rml_run(rml_cli: str, graph: Path, inputs: Path, output: Path, threads: int, repeat: int) -> float:
    """Runs `rml run`; returns the median latency it reports, in seconds."""
    command = [rml_cli, "run", str(graph), "--inputs", str(inputs), "--output", str(output),
               "--threads", str(threads), "--repeat", str(repeat)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr}")
    found = re.search(r"latency: median ([0-9.]+) ([a-zµ]+)", result.stdout)
    if not found:
        raise SystemExit(f"no latency in the output of {' '.join(command)}:\n{result.stdout}")
    return float(found.group(1)) * UNITS[found.group(2)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="transformer_block", choices=MODELS)
    parser.add_argument("--size", default="bench", choices=("tiny", "bench"))
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--routes", default=",".join(ROUTES), help="comma-separated: torch, jax, tf")
    parser.add_argument("--rml", default=str(REPO / "build" / "rml"), help="the rml command-line tool")
    parser.add_argument("--out", type=Path, default=REPO / "build" / "demo")
    args = parser.parse_args(argv)
    routes = args.routes.split(",")
    if any(r not in ROUTES for r in routes):
        parser.error(f"--routes: choose from {', '.join(ROUTES)}")

    args.out.mkdir(parents=True, exist_ok=True)
    inputs = example_inputs(args.model, args.batch, args.size)
    names = [f"input.{i}" for i in range(len(inputs))]
    feeds = args.out / f"{args.model}.inputs.safetensors"
    rml.write_tensors(str(feeds), dict(zip(names, inputs)))
    print(f"{args.model} ({args.size}: {config(args.model, args.size)}), batch {args.batch}, "
          f"{args.threads} thread(s), medians of {args.repeat} runs\n", flush=True)

    results, latencies = [], []
    for route in routes:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            version, output, seconds, builder = ROUTES[route](args.model, args.size, inputs, args.threads, args.repeat)
        graph = args.out / f"{route}_{args.model}.json"
        builder.write(str(graph))
        result = args.out / f"{route}_{args.model}.result.safetensors"
        rml_seconds = rml_run(args.rml, graph, feeds, result, args.threads, args.repeat)
        results += [(version.split()[0], output), (f"rml ({route})", rml.read_tensors(str(result))["output"])]
        nodes = rml.load(str(graph)).node_count  # after the clean-up passes
        latencies.append((version, seconds, nodes, rml_seconds))
        print(f"exported from {version}: {nodes} nodes ({time.perf_counter() - start:.1f} s)", flush=True)

    width = max(len(label) for label, _ in results) + 2
    print("\nmax |a - b|".ljust(width + 1) + "".join(label.rjust(13) for label, _ in results))
    worst = 0.0
    for label, a in results:
        row = []
        for _, b in results:
            difference = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
            worst = max(worst, difference)
            row.append(f"{difference:13.2e}")
        print(label.ljust(width) + "".join(row))

    print(f"\n{'':{width}s}{'framework':>13s}{'rml':>13s}{'speed-up':>10s}")
    for version, seconds, _, rml_seconds in latencies:
        print(f"{version.split()[0]:{width}s}{seconds * 1e3:10.3f} ms{rml_seconds * 1e3:10.3f} ms{seconds / rml_seconds:9.2f}x")
    verdict = "within" if worst <= TOLERANCE else "OUTSIDE"
    print(f"\nall {len(results)} results agree {verdict} {TOLERANCE:g} (worst {worst:.2e}); "
          "speed-up > 1: rml is faster than the framework")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
