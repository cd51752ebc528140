"""Neural-network recipes: inference batch norm and top-k."""
from __future__ import annotations

import numpy as np

from .base import Lowering, Value


def batch_norm(L: Lowering, x, weight, bias, mean, variance, eps: float, per_channel=None) -> Value:
    """Inference batch norm: x * scale + shift, with scale = weight / sqrt(variance + eps)
    and shift = bias - mean * scale (constants when the statistics are). `per_channel` is
    the shape scale and shift take to broadcast against x (None: they already do)."""
    scale = L.op("rsqrt", [L.op("add", [variance, np.float32(eps)])])
    if weight is not None:
        scale = L.op("mul", [weight, scale])
    shift = L.op("mul", [L.op("neg", [mean]), scale])
    if bias is not None:
        shift = L.op("add", [shift, bias])
    if per_channel is not None:
        scale, shift = L.reshape(scale, per_channel), L.reshape(shift, per_channel)
    return L.op("add", [L.op("mul", [x, scale]), shift])


def top_k(L: Lowering, x, k: int) -> tuple[Value, Value]:
    """(values, indices) of the k largest entries along the last axis, ties in index order."""
    return L.op_multi("top_k", [x], 2, {"k": int(k)})
