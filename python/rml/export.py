"""Command line: export a model to an rml-graph file.

    python -m rml.export {torch,jax,tf} MODULE:FACTORY --example-inputs f32:2x12 [i32:2x5 ...] -o out.json

MODULE:FACTORY names a function (imported from the current directory or the
Python path) returning the model: an nn.Module for torch, a pair (fn, params)
with `fn(params, *inputs)` for jax, a tf.Module, Keras model or tf.function
for tf. Each example input is DTYPE:SHAPE (f32, i32 or i64; SHAPE like 2x12,
or "scalar"), filled from a seeded generator, or a .npy file. Inputs are
named input.0, input.1, ... (with --argument-names, after the model's own
arguments, as rml.lowering.names says); the clean-up passes run before writing.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import numpy as np

from ._rml import Error
from .lowering.names import ARGUMENTS


def parse_example(spec: str, rng: np.random.Generator) -> np.ndarray:
    if spec.endswith(".npy"):
        return np.load(spec)
    try:
        dtype, shape_text = spec.split(":")
        shape = () if shape_text == "scalar" else tuple(int(d) for d in shape_text.split("x"))
    except ValueError:
        raise SystemExit(f"bad --example-inputs entry {spec!r}: expected DTYPE:SHAPE such as f32:2x12, or a .npy file")
    if dtype == "f32":
        return rng.standard_normal(shape).astype(np.float32)
    if dtype in ("i32", "i64"):
        return rng.integers(0, 8, shape).astype(np.int64 if dtype == "i64" else np.int32)
    raise SystemExit(f"bad dtype {dtype!r} in --example-inputs (f32, i32 or i64)")


def load_factory(reference: str):
    module_name, _, factory = reference.partition(":")
    if not factory:
        raise SystemExit(f"expected MODULE:FACTORY, got {reference!r}")
    sys.path.insert(0, str(Path.cwd()))
    return getattr(importlib.import_module(module_name), factory)


def _torch(model, examples, names):
    import torch

    from .from_torch import export
    return export(model, tuple(torch.from_numpy(e) for e in examples), input_names=names)


def _jax(model, examples, names):
    from .from_jax import export
    try:
        fn, params = model
    except (TypeError, ValueError):
        raise SystemExit("a jax factory must return (fn, params) with fn(params, *inputs)") from None
    return export(fn, params, examples, input_names=names)


def _tf(model, examples, names):
    from .from_tf import export
    return export(model, examples, input_names=names)


EXPORTERS = {"torch": _torch, "jax": _jax, "tf": _tf}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rml.export", description=__doc__.splitlines()[0])
    parser.add_argument("framework", choices=["torch", "jax", "tf"])
    parser.add_argument("factory", help="MODULE:FACTORY returning the model")
    parser.add_argument("--example-inputs", nargs="+", required=True, metavar="DTYPE:SHAPE")
    parser.add_argument("-o", "--output", required=True, help="the .json graph to write")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--argument-names", action="store_true",
                        help="name the inputs after the model's arguments instead of input.0, input.1, ...")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    examples = [parse_example(s, rng) for s in args.example_inputs]
    names = ARGUMENTS if args.argument_names else None
    try:
        builder = EXPORTERS[args.framework](load_factory(args.factory)(), examples, names)
        builder.write(args.output)
    except Error as e:
        print(f"rml.export: error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {args.output} ({builder.node_count} nodes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
