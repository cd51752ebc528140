"""Elementwise recipes: ops rml writes as a few others."""
from __future__ import annotations

import numpy as np

from .base import Lowering, Value


def erfc(L: Lowering, x) -> Value:
    """1 - erf(x): exact to an ulp of 1 (tf.nn.gelu writes GELU as 0.5 x erfc(-x / sqrt 2))."""
    return L.op("sub", [np.float32(1), L.op("erf", [x])])


def clamp(L: Lowering, x, low=None, high=None) -> Value:
    """minimum(maximum(x, low), high), either bound optional."""
    if low is not None:
        x = L.binary("maximum", x, low)
    if high is not None:
        x = L.binary("minimum", x, high)
    return x


def convert(L: Lowering, x, to: str) -> Value:
    """x as rml dtype `to` ("f32" or "i32"), or as a bool ("bool": f32 0/1, x != 0)."""
    if to == "bool":
        return L.op("ne", [x, np.zeros((), np.int32 if L.b.dtype(x) == "i32" else np.float32)])
    return x if L.b.dtype(x) == to else L.op("cast", [x], {"to": to})
