"""Neural-network recipes: batch norm, top-k, variance, log-softmax and the normalisations
on computed statistics (instance and group norm)."""
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


def variance(L: Lowering, x, axes, correction: float = 0, keep_dims: bool = False, mean=None) -> Value:
    """Sum of squared deviations from the mean (x's over `axes`, kept as 1, unless given)
    over `axes`, divided by (count - correction)."""
    count = int(np.prod([L.shape(x)[a] for a in axes]))
    if mean is None:
        mean = L.op("reduce_mean", [x], {"axes": list(axes), "keep_dims": True})
    deviation = L.op("sub", [x, mean])
    squares = L.op("reduce_sum", [L.op("mul", [deviation, deviation])], {"axes": list(axes), "keep_dims": keep_dims})
    return L.op("div", [squares, np.float32(max(count - correction, 0))])


def log_softmax(L: Lowering, x, axis: int) -> Value:
    """x - max - log(sum(exp(x - max))) along `axis`."""
    shifted = L.op("sub", [x, L.op("reduce_max", [x], {"axes": [axis], "keep_dims": True})])
    total = L.op("reduce_sum", [L.op("exp", [shifted])], {"axes": [axis], "keep_dims": True})
    return L.op("sub", [shifted, L.op("log", [total])])


def normalize_over(L: Lowering, x, axes, eps: float) -> tuple[Value, Value, Value]:
    """((x - mean) / sqrt(var + eps), mean, 1 / sqrt(var + eps)) over `axes` (kept as 1):
    batch norm on batch statistics, instance norm, group norm."""
    mean = L.op("reduce_mean", [x], {"axes": list(axes), "keep_dims": True})
    rstd = L.op("rsqrt", [L.op("add", [variance(L, x, axes, keep_dims=True, mean=mean), np.float32(eps)])])
    return L.op("mul", [L.op("sub", [x, mean]), rstd]), mean, rstd


def group_norm(L: Lowering, x, groups: int, weight, bias, eps: float) -> tuple[Value, Value, Value]:
    """Group norm of an (N, C, ...) value: statistics over each group of C / groups
    channels and all positions, then a per-channel scale and shift. Returns (out, mean,
    rstd), the statistics as (N, groups)."""
    shape = list(L.shape(x))
    grouped = L.reshape(x, [shape[0], int(groups), int(np.prod(shape[1:])) // int(groups)])
    normalized, mean, rstd = normalize_over(L, grouped, [2], eps)
    out = L.reshape(normalized, shape)
    per_channel = [shape[1]] + [1] * (len(shape) - 2)
    if weight is not None:
        out = L.op("mul", [out, L.reshape(weight, per_channel)])
    if bias is not None:
        out = L.op("add", [out, L.reshape(bias, per_channel)])
    stats = [shape[0], int(groups)]
    return out, L.reshape(mean, stats), L.reshape(rstd, stats)


def product(L: Lowering, x, axis: int, keep_dims: bool = False) -> Value:
    """The product along `axis` as a tree of multiplies: each level multiplies the even
    and odd entries (an odd one out is carried), so log2(n) levels of elementwise ops."""
    n = L.shape(x)[axis]
    if n == 0:
        shape = list(L.shape(x))
        shape[axis] = 1
        x = L.op("broadcast_to", [np.ones((), np.int32 if L.b.dtype(x) == "i32" else np.float32)], {"shape": shape})
    while n > 1:
        pairs = n // 2
        even = L.op("slice", [x], {"axes": [axis], "starts": [0], "ends": [2 * pairs], "steps": [2]})
        odd = L.op("slice", [x], {"axes": [axis], "starts": [1], "ends": [2 * pairs], "steps": [2]})
        products = L.op("mul", [even, odd])
        if n % 2:
            products = L.op("concat", [products, L.op("slice", [x], {"axes": [axis], "starts": [n - 1], "ends": [n]})],
                            {"axis": axis})
        x, n = products, pairs + n % 2
    if keep_dims:
        return x
    shape = list(L.shape(x))
    return L.reshape(x, shape[:axis] + shape[axis + 1:])
