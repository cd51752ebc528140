"""Windowed ops: convolution and pooling, which rml has only as 2-D NCHW ops, on data in
other layouts, and the window arithmetic (padding, axes) they need."""
from __future__ import annotations

from typing import Callable

import numpy as np

from .._rml import ExportError
from .base import Lowering, Value
from .index import flip


def rml_pads(pairs) -> list[int]:
    """rml's [top, left, bottom, right] from (before, after) pairs for height and width."""
    (top, bottom), (left, right) = pairs
    return [int(top), int(left), int(bottom), int(right)]


def _inverse(perm) -> list[int]:
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return inverse


def in_nchw(L: Lowering, x, layout, lower: Callable, result_layout=None) -> Value:
    """lower(x as NCHW), laid back out: `layout` lists x's N, C, H and W axes, and
    `result_layout` those of the result (the same unless given)."""
    y = lower(L.transpose(x, layout))
    return L.transpose(y, _inverse(layout if result_layout is None else result_layout))


def with_unit_axis(L: Lowering, x, axis: int) -> Value:
    """x with an axis of size 1 inserted before `axis`: a 1-D window's other spatial
    axis, put first so that the window runs along W, the executor's rows."""
    shape = L.shape(x)
    return L.reshape(x, [*shape[:axis], 1, *shape[axis:]])


def _with_unit_height(spec) -> tuple:
    """The (N, C, H, W) axes of a 1-D layout (N, C, S) once a unit axis is inserted
    before S: the unit axis is H, S (moved up by one) is W."""
    n, c, s = spec
    return (n + (n >= s), c + (c >= s), s, s + 1)


def convolution(L: Lowering, x, w, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                feature_group_count, batch_group_count) -> Value:
    """A 1-D or 2-D convolution as XLA states one (conv_general_dilated): `padding` holds a
    (before, after) pair per spatial axis; `dimension_numbers` the (N, C, H, W) axes of
    x, the (O, I, H, W) axes of w and the (N, C, H, W) axes of the result. A 1-D
    convolution is the 2-D one with a unit H axis before its spatial axis (exactly: the
    unit axis adds no terms), so the window runs along the executor's rows."""
    if len(window_strides) == 1:
        spatial = [spec[2] for spec in dimension_numbers]
        unit = [_with_unit_height(spec) for spec in dimension_numbers]
        y = convolution(L, with_unit_axis(L, x, spatial[0]), with_unit_axis(L, w, spatial[1]), [1, *window_strides],
                        [(0, 0), *padding], [1, *lhs_dilation], [1, *rhs_dilation], unit, feature_group_count,
                        batch_group_count)
        shape = L.shape(y)
        return L.reshape(y, shape[:spatial[2]] + shape[spatial[2] + 1:])
    if len(window_strides) != 2:
        raise ExportError(f"conv_general_dilated with {len(window_strides)} spatial axes has no lowering (1-D and 2-D only)")
    if batch_group_count != 1:
        raise ExportError("conv_general_dilated with batch_group_count > 1 has no lowering")
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        raise ExportError("conv_general_dilated with negative padding has no lowering")
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    attrs = {"strides": [int(s) for s in window_strides], "pads": rml_pads(padding),
             "dilations": [int(d) for d in rhs_dilation], "groups": int(feature_group_count)}
    conv = lambda y: L.op("conv2d", [dilate(L, y, lhs_dilation), L.transpose(w, rhs_spec)], attrs)  # noqa: E731
    return in_nchw(L, x, lhs_spec, conv, out_spec)


def dilate(L: Lowering, x, dilation) -> Value:
    """An NCHW image with dilation - 1 zeros between neighbouring pixels (XLA's lhs
    dilation, which makes a transposed convolution a plain one): each pixel gets a unit
    axis after its row and column, padded with zeros, merged, and the zeros after the last
    pixel cut off. The zeros add only exact zero products to the convolution's sums."""
    dh, dw = (int(d) for d in dilation)
    if dh == 1 and dw == 1:
        return L.value(x)
    n, c, h, w = L.shape(x)
    y = L.reshape(x, [n, c, h, 1, w, 1])
    y = L.op("pad", [y], {"pads": [0] * 6 + [0, 0, 0, dh - 1, 0, dw - 1], "value": 0.0})
    y = L.reshape(y, [n, c, h * dh, w * dw])
    return L.op("slice", [y], {"axes": [2, 3], "starts": [0, 0], "ends": [(h - 1) * dh + 1, (w - 1) * dw + 1]})


def transposed_kernel(L: Lowering, w, groups: int) -> Value:
    """A transposed convolution's kernel, laid out (I, O / groups, kh, kw) as PyTorch keeps
    it, as the plain convolution's (O, I / groups, kh, kw) over the dilated input: each
    group's in and out channels swapped, the window flipped."""
    cin, cout_group, kh, kw = L.shape(w)
    w = L.reshape(w, [groups, cin // groups, cout_group, kh, kw])
    w = L.reshape(L.transpose(w, [0, 2, 1, 3, 4]), [groups * cout_group, cin // groups, kh, kw])
    return flip(L, w, [2, 3])


def transposed_convolution(L: Lowering, x, w, strides, pads, dilations, groups: int) -> Value:
    """The NCHW transposed convolution (the gradient of a convolution with respect to its
    input) with kernel `w` in (I, O / groups, kh, kw): the input dilated by the strides and
    convolved with the transposed kernel. `pads` are the plain convolution's
    (before, after) per axis: dilation (k - 1) - padding before, and after that again plus
    whatever output padding the framework adds."""
    kernel = transposed_kernel(L, w, groups)
    nchw, oihw = (0, 1, 2, 3), (0, 1, 2, 3)
    return convolution(L, x, kernel, [1, 1], pads, strides, dilations, (nchw, oihw, nchw), groups, 1)


def pool_window(window_dimensions, window_strides, padding, base_dilation, window_dilation) -> tuple[list, dict]:
    """(the layout that makes a rank-4 value NCHW with the windowed axes as H and W, the
    pool attributes) for a 2-D window as XLA states one (reduce_window)."""
    if len(window_dimensions) != 4:
        raise ExportError(f"reduce_window on rank {len(window_dimensions)} has no lowering (rank 4 only)")
    if any(d != 1 for d in base_dilation):
        raise ExportError("reduce_window with base dilation has no lowering")
    trivial = [d for d in range(4) if window_dimensions[d] == 1 and window_strides[d] == 1 and padding[d] == (0, 0)
               and window_dilation[d] == 1]
    spatial = [d for d in range(4) if d not in trivial]
    if len(spatial) > 2:
        raise ExportError("reduce_window over more than two axes has no lowering")
    # The untouched axes, in order, become N and C; the windowed ones H and W
    # (a window along one axis takes the last untouched axis as its partner).
    while len(spatial) < 2:
        spatial = sorted(spatial + [max(d for d in trivial if d not in spatial)])
    layout = [d for d in range(4) if d not in spatial] + spatial
    attrs = {"kernel": [int(window_dimensions[d]) for d in spatial],
             "strides": [int(window_strides[d]) for d in spatial],
             "pads": rml_pads([padding[d] for d in spatial]),
             "dilations": [int(window_dilation[d]) for d in spatial]}
    return layout, attrs


def reduce_window_max(L: Lowering, x, window_dimensions, window_strides, padding, base_dilation,
                      window_dilation) -> Value:
    layout, attrs = pool_window(window_dimensions, window_strides, padding, base_dilation, window_dilation)
    return in_nchw(L, x, layout, lambda y: L.op("max_pool2d", [y], attrs))


def reduce_window_min(L: Lowering, x, window_dimensions, window_strides, padding, base_dilation,
                      window_dilation) -> Value:
    """-max(-x): negation is exact, and the max pool's -inf padding becomes the +inf a min pads with."""
    negated = reduce_window_max(L, L.op("neg", [x]), window_dimensions, window_strides, padding, base_dilation,
                                window_dilation)
    return L.op("neg", [negated])


def reduce_window_sum(L: Lowering, x, window_dimensions, window_strides, padding, base_dilation,
                      window_dilation) -> Value:
    """A window sum is the mean over the whole window (padding counted) times its size."""
    layout, attrs = pool_window(window_dimensions, window_strides, padding, base_dilation, window_dilation)
    count = np.float32(attrs["kernel"][0] * attrs["kernel"][1])

    def window_sum(y):
        mean = L.op("avg_pool2d", [y], {**attrs, "count_include_pad": True})
        return L.op("mul", [mean, count])
    return in_nchw(L, x, layout, window_sum)
