"""Export time of the 50-layer Keras ResNet (keras.applications.ResNet50, 64x64 input,
random weights) by the TensorFlow direct route and by TensorFlow's StableHLO route,
alternating, best and median of the rounds.

    .venv/bin/python bench/export_time.py [--rounds 3] [--profile]

--profile prints the direct route's cProfile, cumulative, after the rounds.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch  # noqa: F401  (frameworks load in one order: PyTorch first)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "python"))
from real_architectures import keras_architectures  # noqa: E402

from rml import from_stablehlo, from_tf  # noqa: E402

ROUTES = {"tf direct": from_tf.export, "tf -> stablehlo": from_stablehlo.export_tf}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    architecture = next(a for a in keras_architectures() if a.name == "keras_resnet50")
    model, inputs = architecture.build(), architecture.inputs(1)
    seconds: dict[str, list[float]] = {route: [] for route in ROUTES}
    for r in range(args.rounds):
        for route, export in ROUTES.items():
            start = time.perf_counter()
            builder = export(model, inputs)
            seconds[route].append(time.perf_counter() - start)
            print(f"round {r + 1}/{args.rounds}: {route}: {seconds[route][-1]:.2f} s, {builder.node_count} nodes",
                  flush=True)
    for route, times in seconds.items():
        print(f"{route}: best {min(times):.2f} s, median {statistics.median(times):.2f} s")
    direct, stablehlo = (statistics.median(seconds[r]) for r in ROUTES)
    print(f"direct / stablehlo: {direct / stablehlo:.2f}x")
    if args.profile:
        import cProfile
        import pstats
        cProfile.runctx("from_tf.export(model, inputs)", globals(), {"model": model, "inputs": inputs},
                        "/tmp/rml_export.prof")
        pstats.Stats("/tmp/rml_export.prof").sort_stats("cumulative").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
