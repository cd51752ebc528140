"""Rounding recipes: trunc, floor, ceil, round-half-to-even and sign, written exactly with
rml's cast, comparisons and select. Every f32 of magnitude 2^23 or more is an integer
already, and every smaller one converts to i32 exactly, so the conversion is only taken
below 2^23. NaN and infinities pass through; a zero result is +0 where the framework
may give -0 (equal values)."""
from __future__ import annotations

import numpy as np

from .base import Lowering, Value

EXACT_INTEGERS = np.float32(2.0**23)  # from here up, every f32 is an integer


def _f32(x: float) -> np.float32:
    return np.float32(x)


def trunc(L: Lowering, x) -> Value:
    """x rounded toward zero."""
    x = L.value(x)
    if L.b.dtype(x) == "i32":
        return x
    small = L.op("lt", [L.op("abs", [x]), EXACT_INTEGERS])
    through_i32 = L.op("cast", [L.op("cast", [x], {"to": "i32"})], {"to": "f32"})
    return L.op("select", [small, through_i32, x])


def floor(L: Lowering, x) -> Value:
    """The largest integer <= x: trunc(x), less one where that rounded a negative up."""
    x = L.value(x)
    if L.b.dtype(x) == "i32":
        return x
    t = trunc(L, x)
    return L.op("sub", [t, L.op("gt", [t, x])])


def ceil(L: Lowering, x) -> Value:
    """The smallest integer >= x."""
    x = L.value(x)
    if L.b.dtype(x) == "i32":
        return x
    t = trunc(L, x)
    return L.op("add", [t, L.op("lt", [t, x])])


def round_half_even(L: Lowering, x) -> Value:
    """x to the nearest integer, halves to the even one (torch.round, jnp.round, tf.round):
    floor(x), plus one where the fraction (exact: x - floor(x) loses no bits below 2^23)
    is over a half, or a half and floor(x) odd."""
    x = L.value(x)
    if L.b.dtype(x) == "i32":
        return x
    low = floor(L, x)
    fraction = L.op("sub", [x, low])
    half = L.op("mul", [low, _f32(0.5)])
    odd = L.op("ne", [floor(L, half), half])
    up = L.op("maximum", [L.op("gt", [fraction, _f32(0.5)]),
                          L.op("mul", [L.op("eq", [fraction, _f32(0.5)]), odd])])
    return L.op("add", [low, up])


def sign(L: Lowering, x, nan_propagates: bool = False) -> Value:
    """-1, 0 or 1 in x's dtype; for NaN 0 (torch.sign) or NaN (`nan_propagates`: lax.sign)."""
    x = L.value(x)
    zero = np.zeros((), np.int32 if L.b.dtype(x) == "i32" else np.float32)
    s = L.op("sub", [L.op("gt", [x, zero]), L.op("lt", [x, zero])])
    if L.b.dtype(x) == "i32":
        return L.op("cast", [s], {"to": "i32"})
    return L.op("select", [L.op("ne", [x, x]), x, s]) if nan_propagates else s


def round_half_away(L: Lowering, x) -> Value:
    """x to the nearest integer, halves away from zero (lax.round's default): trunc(x), one
    further from zero where the dropped fraction (exact below 2^23) is at least a half."""
    x = L.value(x)
    if L.b.dtype(x) == "i32":
        return x
    t = trunc(L, x)
    away = L.op("ge", [L.op("abs", [L.op("sub", [x, t])]), _f32(0.5)])
    return L.op("add", [t, L.op("mul", [away, sign(L, x)])])
