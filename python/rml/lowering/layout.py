"""Layout recipes: slicing along one axis, nearest upsampling, running extremes."""
from __future__ import annotations

from .base import Lowering, Value


def slice_axis(L: Lowering, x, axis: int, start: int, end: int) -> Value:
    return L.op("slice", [x], {"axes": [axis], "starts": [start], "ends": [end]})


def split(L: Lowering, x, axis: int, sizes) -> list[Value]:
    """Consecutive pieces of x along `axis`, one per size."""
    pieces, start = [], 0
    for size in sizes:
        pieces.append(slice_axis(L, x, int(axis), start, start + int(size)))
        start += int(size)
    return pieces


def upsample_nearest(L: Lowering, x, fh: int, fw: int, channels_last: bool = False) -> Value:
    """Nearest upsampling of an NCHW (or NHWC) image by integer factors: each pixel gets
    axes of 1 after its row and column, broadcast to the factors, then merged."""
    if channels_last:
        n, h, w, c = L.shape(x)
        placed, spread, out = [n, h, 1, w, 1, c], [n, h, fh, w, fw, c], [n, h * fh, w * fw, c]
    else:
        n, c, h, w = L.shape(x)
        placed, spread, out = [n, c, h, 1, w, 1], [n, c, h, fh, w, fw], [n, c, h * fh, w * fw]
    y = L.op("reshape", [x], {"shape": placed})
    y = L.op("broadcast_to", [y], {"shape": spread})
    return L.op("reshape", [y], {"shape": out})


def running_extreme(L: Lowering, x, axis: int, op: str, reverse: bool = False) -> Value:
    """The running maximum or minimum (`op`: "maximum" or "minimum") along `axis`, in
    log2(n) steps: each step combines every element with the one `shift` before it (after
    it when reversed), and the first `shift` with themselves. Exact in any order, NaN
    carried as the op carries it."""
    n = L.shape(x)[axis]
    y, shift = L.value(x), 1
    while shift < n:
        if reverse:
            pieces = [slice_axis(L, y, axis, shift, n), slice_axis(L, y, axis, n - shift, n)]
        else:
            pieces = [slice_axis(L, y, axis, 0, shift), slice_axis(L, y, axis, 0, n - shift)]
        y = L.op(op, [y, L.op("concat", pieces, {"axis": axis})])
        shift *= 2
    return y
