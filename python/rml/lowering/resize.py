"""Resampling recipes on NCHW images: bilinear and nearest resizing with the frameworks'
coordinate conventions, adaptive average pooling, and reflection and replication
padding, from rml's gather, slice, concat, broadcast_to and the elementwise ops."""
from __future__ import annotations

import numpy as np

from .base import Lowering, Value
from .index import BIG

H, W = 2, 3  # NCHW


def torch_scale(in_size: int, out_size: int, align_corners: bool, scale: float | None) -> np.float32:
    """The source pixels per output pixel, as torch's upsample kernels compute it."""
    if align_corners:
        return np.float32((in_size - 1) / (out_size - 1)) if out_size > 1 else np.float32(0)
    return np.float32(1.0 / scale) if scale else np.float32(in_size / out_size)


def linear_taps(in_size: int, out_size: int, align_corners: bool, scale: float | None):
    """(first source index, second source index, weight of the first, weight of the second)
    per output index, in f32 as torch's bilinear kernel has them (the source coordinate
    clamped at 0, the second tap at the edge)."""
    s = torch_scale(in_size, out_size, align_corners, scale)
    dst = np.arange(out_size, dtype=np.float32)
    src = s * dst if align_corners else np.maximum(s * (dst + np.float32(0.5)) - np.float32(0.5), np.float32(0))
    first = src.astype(np.int64)
    second = np.minimum(first + 1, in_size - 1)
    w_second = (src - first.astype(np.float32)).astype(np.float32)
    return first.astype(np.int32), second.astype(np.int32), (np.float32(1) - w_second), w_second


def _along(L: Lowering, x, axis: int, taps) -> Value:
    """w0 * x[first] + w1 * x[second] along `axis`."""
    first, second, w0, w1 = taps
    shape = [1] * L.rank(x)
    shape[axis] = len(first)
    a = L.op("gather", [x, first], {"axis": axis})
    b = L.op("gather", [x, second], {"axis": axis})
    return L.op("add", [L.op("mul", [a, w0.reshape(shape)]), L.op("mul", [b, w1.reshape(shape)])])


def resize_bilinear(L: Lowering, x, out_h: int, out_w: int, align_corners: bool, scales=(None, None)) -> Value:
    """torch's bilinear upsampling of an NCHW image: along W, then along H (the order of
    its own sums)."""
    _, _, h, w = L.shape(x)
    y = _along(L, x, W, linear_taps(w, out_w, align_corners, scales[1]))
    return _along(L, y, H, linear_taps(h, out_h, align_corners, scales[0]))


def nearest_indices(in_size: int, out_size: int, scale: float | None) -> np.ndarray:
    """torch's nearest source index per output index: floor(dst * scale), at most in - 1."""
    s = torch_scale(in_size, out_size, False, scale)
    return np.minimum(np.floor(np.arange(out_size, dtype=np.float32) * s).astype(np.int64), in_size - 1).astype(np.int32)


def resize_nearest(L: Lowering, x, out_h: int, out_w: int, scales=(None, None)) -> Value:
    _, _, h, w = L.shape(x)
    y = L.op("gather", [x, nearest_indices(w, out_w, scales[1])], {"axis": W})
    return L.op("gather", [y, nearest_indices(h, out_h, scales[0])], {"axis": H})


def adaptive_avg_pool(L: Lowering, x, out_sizes) -> Value:
    """Adaptive average pooling of the trailing axes: output i of an axis of n averages
    [floor(i n / out), ceil((i + 1) n / out)). An even split is avg_pool2d (one window per
    output); otherwise each axis in turn is cut into its windows and averaged."""
    rank = L.rank(x)
    axes = list(range(rank - len(out_sizes), rank))
    sizes = [L.shape(x)[a] for a in axes]
    if len(axes) == 2 and all(n % o == 0 for n, o in zip(sizes, out_sizes)):
        kernel = [n // o for n, o in zip(sizes, out_sizes)]
        return L.op("avg_pool2d", [x], {"kernel": kernel, "strides": kernel, "pads": [0, 0, 0, 0]})
    for a, n, o in zip(axes, sizes, out_sizes):
        if n == o:
            continue
        windows = [L.op("reduce_mean", [L.op("slice", [x], {"axes": [a], "starts": [i * n // o],
                                                             "ends": [-((i + 1) * n // -o)]})],
                        {"axes": [a], "keep_dims": True}) for i in range(o)]
        x = windows[0] if o == 1 else L.op("concat", windows, {"axis": a})
    return x


def pad_edges(L: Lowering, x, pads, mode: str) -> Value:
    """x padded on each axis by (before, after) pairs (`pads`, one per axis, zeros for
    axes left alone), with its mirror image without the edge ("reflect") or the edge
    repeated ("replicate")."""
    for a, (before, after) in enumerate(pads):
        if before == 0 and after == 0:
            continue
        n = L.shape(x)[a]
        pieces = []
        if before:
            pieces.append(_edge(L, x, a, n, before, mode, leading=True))
        pieces.append(x)
        if after:
            pieces.append(_edge(L, x, a, n, after, mode, leading=False))
        x = L.op("concat", pieces, {"axis": a})
    return x


def _edge(L, x, a, n, count, mode, leading):
    if mode == "reflect":  # x[count], ..., x[1] before; x[n-2], ..., x[n-1-count] after
        start, end = (count, 0) if leading else (n - 2, n - 2 - count)
        return L.op("slice", [x], {"axes": [a], "starts": [start], "ends": [end if end >= 0 else -BIG],
                                   "steps": [-1]})
    edge = L.op("slice", [x], {"axes": [a], "starts": [0 if leading else n - 1], "ends": [1 if leading else n]})
    shape = list(L.shape(edge))
    shape[a] = count
    return L.op("broadcast_to", [edge], {"shape": shape})
