"""Ops rml runs as recipes of other ops, timed against PyTorch's dedicated kernels, on one
core: transposed and 3-D convolutions, 3-D pools, group norm, bilinear resize, argmax.

    .venv/bin/python bench/recipes.py [--rounds 5] [--target 0.2]

Each case is exported by the PyTorch direct route and run by the Python binding (one
thread) and by PyTorch eager (one thread), alternating, in one process pinned to one core.
A cell is the median over the rounds of each round's median, in ms. "same MACs" is rml's
plain conv2d doing the multiply-adds a dedicated kernel would (the floor for one).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import rml
from rml.from_torch import export

F = torch.nn.functional


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def cases() -> list[tuple[str, torch.nn.Module, torch.Tensor, tuple | None]]:
    """(name, module, input, (module, input) with the same multiply-adds as a dedicated kernel, or None)."""
    torch.manual_seed(0)
    image = torch.randn(1, 64, 56, 56)
    volume = torch.randn(1, 16, 16, 56, 56)
    return [
        ("ConvTranspose2d 64->32, k4 s2 (56->112)", torch.nn.ConvTranspose2d(64, 32, 4, 2, 1), image,
         (torch.nn.Conv2d(64, 32, 4, padding="same"), image)),
        ("ConvTranspose2d 64->32, k3 s1", torch.nn.ConvTranspose2d(64, 32, 3, 1, 1), image, None),
        ("Conv3d 16->32, k3 (16x56x56)", torch.nn.Conv3d(16, 32, 3, padding=1), volume,
         (torch.nn.Conv2d(48, 32, 3, padding=1), torch.randn(16, 48, 56, 56))),
        ("MaxPool3d 2 (16x16x56x56)", Fn(lambda x: F.max_pool3d(x, 2)), volume, None),
        ("AvgPool3d 3 s1 p1 (16x16x56x56)", Fn(lambda x: F.avg_pool3d(x, 3, 1, 1)), volume, None),
        ("GroupNorm 8 groups (64x56x56)", torch.nn.GroupNorm(8, 64), image, None),
        ("bilinear resize 56->112 (64 ch)", Fn(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear")), image,
         None),
        ("argmax over 1000 (64 rows)", Fn(lambda x: torch.argmax(x, -1).float()), torch.randn(64, 1000), None),
    ]


def timed(run, target: float) -> float:
    """The median of a round's runs, in ms, after three warm-up runs; runs enough for ~target s."""
    for _ in range(3):
        run()
    start = time.perf_counter()
    run()
    count = max(3, int(target / max(time.perf_counter() - start, 1e-6)))
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3


def rml_runner(module, x, folder: Path, name: str):
    builder = export(module.eval(), (x,), input_names=["input.0"])
    path = folder / f"{name}.json"
    builder.write(str(path))
    model, feeds = rml.load(str(path)), {"input.0": x.numpy()}
    with torch.no_grad():
        want = module(x).numpy()
    got = model.run(feeds, threads=1)["output"]
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)
    return lambda: model.run(feeds, threads=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--target", type=float, default=0.2, help="seconds per system per round")
    args = parser.parse_args()
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    torch.set_num_threads(1)
    print("| op | rml recipe (ms) | PyTorch (ms) | rml / PyTorch | rml, same MACs as a dedicated kernel (ms) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch, torch.no_grad():
        for i, (name, module, x, floor) in enumerate(cases()):
            print(f"[{i + 1}] {name} ...", file=sys.stderr, flush=True)
            systems = {"rml": rml_runner(module, x, Path(scratch), f"case{i}"), "torch": lambda: module(x)}
            if floor is not None:
                systems["floor"] = rml_runner(floor[0], floor[1], Path(scratch), f"floor{i}")
            rounds: dict[str, list[float]] = {s: [] for s in systems}
            for r in range(args.rounds):
                order = list(systems)[r % len(systems):] + list(systems)[:r % len(systems)]
                for system in order:
                    rounds[system].append(timed(systems[system], args.target))
            ms = {s: statistics.median(v) for s, v in rounds.items()}
            floor_cell = f"{ms['floor']:.3g}" if "floor" in ms else ""
            print(f"| {name} | {ms['rml']:.3g} | {ms['torch']:.3g} | {ms['rml'] / ms['torch']:.2f} | {floor_cell} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
