"""Index recipes: arg-max/min, gathers along an axis, diagonals, flips, repeats, and
scatters whose positions are known at export time, from rml's top_k, gather, slice,
concat, broadcast_to and select."""
from __future__ import annotations

import numpy as np

from .._rml import ExportError
from .base import Lowering, Value
from .nn import top_k

BIG = 2**62  # a slice end past any axis


def move_axis_last(L: Lowering, x, axis: int) -> tuple[Value, list[int]]:
    """(x with `axis` moved to the end, the permutation that moves it back)."""
    rank = L.rank(x)
    perm = [d for d in range(rank) if d != axis] + [axis]
    back = [0] * rank
    for i, p in enumerate(perm):
        back[p] = i
    return L.transpose(x, perm), back


def descending_key(L: Lowering, x) -> Value:
    """A value whose descending order is x's ascending order: -x for f32 (NaN stays the
    largest, as an arg-min that propagates NaN wants), -x - 1 for i32 (no overflow)."""
    x = L.value(x)
    if L.b.dtype(x) == "i32":
        return L.op("sub", [L.op("neg", [x]), np.int32(1)])
    return L.op("neg", [x])


def extreme_along(L: Lowering, x, axis: int | None, keep_dims: bool, smallest: bool) -> tuple[Value, Value]:
    """(values, i32 indices) of the largest (or smallest) entry along `axis` (None: of the
    flattened x), the first one on ties, NaN counting as the extreme (torch.max(dim),
    argmax, argmin; jnp.argmax)."""
    x = L.value(x)
    shape = list(L.shape(x))
    if axis is None:
        flat = L.reshape(x, [int(np.prod(shape))])
        values, indices = extreme_along(L, flat, 0, False, smallest)
        out = [1] * len(shape) if keep_dims else []
        return L.reshape(values, out), L.reshape(indices, out)
    last, back = move_axis_last(L, x, axis)
    values, indices = top_k(L, descending_key(L, last) if smallest else last, 1)
    if smallest:
        values = descending_key(L, values)  # its own inverse
    values, indices = L.transpose(values, back), L.transpose(indices, back)
    out = shape[:axis] + ([1] if keep_dims else []) + shape[axis + 1:]
    return L.reshape(values, out), L.reshape(indices, out)


def xla_scatter(L: Lowering, name: str, x, indices, updates, combine: str | None, **scatter) -> Value:
    """XLA's scatter (`name` for errors) of `updates` into x at `indices` known at export
    time, replacing (combine None) or combining by the rml op `combine`; `scatter` holds
    lax.scatter's dimension_numbers and mode. Where each update lands is found by running
    lax.scatter on the updates' numbers; then one gather and one select. Updates that would
    land on one element are refused: XLA leaves their order unspecified."""
    from jax import lax

    shape, update_shape = L.shape(x), L.shape(updates)
    numbers = np.arange(int(np.prod(update_shape)), dtype=np.float32).reshape(update_shape)  # exact below 2^24
    landed = lax.scatter_add(np.zeros(shape, np.float32), indices, np.ones(update_shape, np.float32), **scatter)
    if np.any(np.asarray(landed) > 1):
        raise ExportError(f"{name} with several updates into one element has no lowering (XLA leaves their order "
                          "unspecified)")
    source = np.asarray(lax.scatter(np.full(shape, -1, np.float32), indices, numbers, **scatter)).astype(np.int32)
    if combine is None:
        return scatter_by_map(L, x, updates, source)
    flat = L.reshape(updates, [int(np.prod(update_shape))])
    taken = L.op("gather", [flat, np.maximum(source, 0)], {"axis": 0})
    return L.op("select", [(source >= 0).astype(np.float32), L.op(combine, [x, taken]), x])


def sort_along(L: Lowering, x, axis: int, descending: bool = False) -> tuple[Value, Value]:
    """(sorted values, their indices) along `axis`, by top_k over the whole axis: ties in
    index order (a stable sort), NaN last ascending and first descending. A NaN and a +inf
    tie ascending (they are ordered by index), and -0 ties with +0."""
    last, back = move_axis_last(L, x, axis)
    key = last
    if not descending:
        key = descending_key(L, last)
        if L.b.dtype(last) == "f32":  # NaN last: a key below every number's
            key = L.op("select", [L.op("ne", [last, last]), np.float32(-np.inf), key])
    _, indices = L.op_multi("top_k", [key], 2, {"k": int(L.shape(last)[-1])})
    values = gather_along(L, last, L.rank(last) - 1, indices)
    return L.transpose(values, back), L.transpose(indices, back)


def gather_along(L: Lowering, x, axis: int, index) -> Value:
    """out[..., i, ...] = x[..., index[..., i, ...], ...] (torch.gather, jnp.take_along_axis):
    index has x's rank and is no larger on the other axes. Both move `axis` last, x is
    cut to index's other extents and flattened, and each index is offset by its row."""
    x, index = L.value(x), L.value(index)
    xt, back = move_axis_last(L, x, axis)
    it, _ = move_axis_last(L, index, axis)
    rows = list(L.shape(it)[:-1])
    n = L.shape(xt)[-1]
    if list(L.shape(xt)[:-1]) != rows:
        xt = L.op("slice", [xt], {"axes": list(range(len(rows))), "starts": [0] * len(rows), "ends": rows})
    row_starts = (np.arange(int(np.prod(rows)), dtype=np.int32) * np.int32(n)).reshape(rows + [1])
    flat_index = L.op("add", [it, row_starts])
    taken = L.op("gather", [L.reshape(xt, [int(np.prod(rows)) * n]), flat_index], {"axis": 0})
    return L.transpose(taken, back)


def diagonal(L: Lowering, x, offset: int, axis1: int, axis2: int) -> Value:
    """The diagonal of the (axis1, axis2) planes, as a last axis (torch.diagonal): both axes
    moved last and merged, then every (m + 1)-th element from the first on the diagonal."""
    rank = L.rank(x)
    rest = [d for d in range(rank) if d not in (axis1, axis2)]
    planes = L.transpose(x, rest + [axis1, axis2])
    shape = list(L.shape(planes))
    n, m = shape[-2], shape[-1]
    count = max(0, min(n, m - offset) if offset >= 0 else min(n + offset, m))
    start = offset if offset >= 0 else -offset * m
    flat = L.reshape(planes, shape[:-2] + [n * m])
    if count == 0:
        return L.op("slice", [flat], {"axes": [rank - 2], "starts": [0], "ends": [0]})
    return L.op("slice", [flat], {"axes": [rank - 2], "starts": [start], "ends": [start + (count - 1) * (m + 1) + 1],
                                  "steps": [m + 1]})


def flip(L: Lowering, x, axes) -> Value:
    """x reversed along each of `axes`."""
    axes = sorted(set(int(a) for a in axes))
    if not axes:
        return L.value(x)
    return L.op("slice", [x], {"axes": axes, "starts": [-1] * len(axes), "ends": [-BIG] * len(axes),
                               "steps": [-1] * len(axes)})


def tile(L: Lowering, x, repeats) -> Value:
    """x repeated `repeats` times along each axis, whole (torch.Tensor.repeat, np.tile;
    extra leading repeats add axes): a unit axis before each, broadcast, merged."""
    shape = list(L.shape(x))
    shape = [1] * (len(repeats) - len(shape)) + shape
    placed = [d for n in shape for d in (1, n)]
    spread = [d for r, n in zip(repeats, shape) for d in (int(r), n)]
    y = L.op("broadcast_to", [L.reshape(x, placed)], {"shape": spread})
    return L.reshape(y, [int(r) * n for r, n in zip(repeats, shape)])


def scatter_by_map(L: Lowering, x, updates, source: np.ndarray) -> Value:
    """x with the elements where `source` (x's shape, i32) is >= 0 replaced by the
    flattened updates at those positions: a scatter whose positions are known at export
    time, as one gather and one select."""
    x = L.value(x)
    if source.shape != tuple(L.shape(x)):
        raise ExportError(f"scatter map of shape {source.shape} for a value of shape {L.shape(x)}")
    flat = L.reshape(updates, [int(np.prod(L.shape(L.value(updates))))])
    taken = L.op("gather", [flat, np.maximum(source, 0).astype(np.int32)], {"axis": 0})
    return L.op("select", [(source >= 0).astype(np.float32), taken, x])
