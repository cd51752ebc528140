"""Writes the seed corpus of tests/fuzz/fuzz_stablehlo.py: small StableHLO modules
that JAX prints, one per construct the importer lowers (dense, convolution,
reductions, pooling, gather, dynamic_slice, loops, compare/select, sort and top_k,
layout ops, softmax).

Each module is `jax.export.export(jax.jit(fn))(*inputs).mlir_module()` with the
weights closed over (so they are inlined as constants and @main's arguments are
the inputs only, as the harness expects) and kept tiny so that every file stays
at a few KB. The weights come from a fixed seed and the debug locations are
stripped, so the output is the same on every run with the same JAX version.

usage: python tests/fuzz/make_stablehlo_seeds.py [OUT_DIR]
       (default: tests/fuzz/seeds/stablehlo next to this script)
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

RNG = np.random.default_rng(20261202)


def weights(*shape):
    return jnp.asarray(RNG.standard_normal(shape).astype(np.float32).round(2))


def f32(*shape):
    return jax.ShapeDtypeStruct(shape, jnp.float32)


def i32(*shape):
    return jax.ShapeDtypeStruct(shape, jnp.int32)


def seeds():
    """name -> (function, argument specs)."""
    w1, b1, w2 = weights(4, 3), weights(3), weights(3, 2)
    kernel = weights(2, 1, 2, 2)
    table = weights(5, 3)

    def dense(x):
        return jax.nn.relu(x @ w1 + b1) @ w2

    def conv(x):  # NCHW, OIHW
        y = lax.conv_general_dilated(x, kernel, (1, 1), ((1, 0), (0, 1)))
        return jnp.tanh(y)

    def reduce(x):
        return x.sum(axis=1, keepdims=True) + x.max(axis=0, keepdims=True) - x.min() + jnp.any(x > 0, axis=1, keepdims=True)

    def pool(x):  # NHWC max pool and average pool
        m = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        s = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "SAME")
        return m, s / 4

    def gather(ids, x):
        return jnp.take(table, ids, axis=0) + x[jnp.array([2, 0, 1])]

    def dynamic_slice(x):
        return lax.dynamic_slice(x, (1, 0), (2, 3)) * 2 + lax.dynamic_update_slice(x, jnp.ones((1, 3)), (2, 0))[:2]

    def while_loop(x):
        return lax.fori_loop(0, 3, lambda i, acc: acc * 0.5 + i, x)

    def scan(xs):
        def step(carry, x):
            carry = jnp.tanh(carry + x)
            return carry, carry * 2
        return lax.scan(step, jnp.zeros(xs.shape[1:]), xs)

    def compare_select(x, y):
        return jnp.where((x > y) & (x != 0), x, jnp.clip(y, -1, 1)), (x == y).astype(jnp.int32)

    def sort_top_k(x):
        values, indices = lax.top_k(x, 2)
        return values, indices, -jnp.sort(-x, axis=-1)

    def layout(x):
        y = jnp.transpose(x.reshape(2, 3, 2), (2, 0, 1))
        z = jnp.broadcast_to(x[:1], (3, 4)) + jnp.concatenate([x[:, 2:], x[:, :2]], axis=1)
        return y, jnp.pad(z, ((1, 0), (0, 2)), constant_values=0.5)[::2]

    def softmax(x):
        return jax.nn.softmax(x, axis=-1), jax.nn.gelu(x), jax.nn.sigmoid(x)

    def convert_iota(x):
        return (x * 4).astype(jnp.int32) + jnp.arange(4, dtype=jnp.int32), jnp.floor(jnp.arange(4.0) / 3) * x

    def branch(x):
        return lax.cond(True, lambda v: v + 1, lambda v: v - 1, x), lax.switch(1, [jnp.sin, jnp.cos, jnp.exp], x)

    return {
        "dense": (dense, [f32(2, 4)]),
        "conv": (conv, [f32(1, 1, 4, 4)]),
        "reduce": (reduce, [f32(3, 4)]),
        "pool": (pool, [f32(1, 4, 4, 2)]),
        "gather": (gather, [i32(3), f32(4, 3)]),
        "dynamic_slice": (dynamic_slice, [f32(3, 3)]),
        "while_loop": (while_loop, [f32(2, 2)]),
        "scan": (scan, [f32(3, 2)]),
        "compare_select": (compare_select, [f32(2, 3), f32(2, 3)]),
        "sort_top_k": (sort_top_k, [f32(2, 5)]),
        "layout": (layout, [f32(3, 4)]),
        "softmax": (softmax, [f32(2, 3)]),
        "convert_iota": (convert_iota, [f32(2, 4)]),
        "branch": (branch, [f32(3)]),
    }


_LOC = re.compile(r"\s*loc\((?:[^()]|\([^()]*\))*\)")


def module_text(fn, specs) -> str:
    text = jax.export.export(jax.jit(fn))(*specs).mlir_module()
    # The debug locations name this file's path and lines: without them the text
    # depends only on the functions.
    text = "\n".join(line for line in text.splitlines() if not line.startswith("#loc"))
    return _LOC.sub("", text) + "\n"


def main(argv):
    out = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent / "seeds" / "stablehlo"
    out.mkdir(parents=True, exist_ok=True)
    for name, (fn, specs) in seeds().items():
        text = module_text(fn, specs)
        (out / f"{name}.mlir").write_text(text)
        print(f"{out / (name + '.mlir')}: {len(text)} bytes")


if __name__ == "__main__":
    main(sys.argv)
