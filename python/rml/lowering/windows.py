"""Windowed ops: convolution and pooling, which rml has only as 2-D NCHW ops, on data in
other layouts, and the window arithmetic (padding, axes) they need."""
from __future__ import annotations

from typing import Callable

import numpy as np

from .._rml import ExportError
from .base import Lowering, Value, rml_pads
from .index import flip
from .volumes import conv3d, pool3d


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
    """A 1-D, 2-D or 3-D convolution as XLA states one (conv_general_dilated): `padding` holds a
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
    if len(window_strides) not in (2, 3):
        raise ExportError(f"conv_general_dilated with {len(window_strides)} spatial axes has no lowering (1-D to 3-D)")
    if batch_group_count != 1:
        raise ExportError("conv_general_dilated with batch_group_count > 1 has no lowering")
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        raise ExportError("conv_general_dilated with negative padding has no lowering")
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if len(window_strides) == 3:  # a transposed one over the zero-dilated volume
        weight = L.transpose(w, rhs_spec)
        return in_nchw(L, x, lhs_spec, lambda y: conv3d(L, dilate(L, y, lhs_dilation), weight, window_strides, padding,
                                                         rhs_dilation, feature_group_count), out_spec)
    attrs = {"strides": [int(s) for s in window_strides], "pads": rml_pads(padding),
             "dilations": [int(d) for d in rhs_dilation], "groups": int(feature_group_count)}
    weight = L.transpose(w, rhs_spec)

    def conv(y):
        if all(s == 1 for s in window_strides) and all(d == 1 for d in rhs_dilation):
            phased = by_phases(L, y, weight, lhs_dilation, padding, int(feature_group_count))
            if phased is not None:
                return phased
        return L.op("conv2d", [dilate(L, y, lhs_dilation), weight], attrs)
    return in_nchw(L, x, lhs_spec, conv, out_spec)


def _cut(L: Lowering, x, axes, starts, ends) -> Value:
    """x[starts:ends] on `axes`, with no op where that is all of x."""
    shape = L.shape(x)
    if all(b == 0 and e == shape[a] for a, b, e in zip(axes, starts, ends)):
        return L.value(x)
    return L.op("slice", [x], {"axes": list(axes), "starts": list(starts), "ends": list(ends)})


def by_phases(L: Lowering, x, w, lhs_dilation, padding, groups: int, bias=None) -> Value | None:
    """The convolution (window stride 1, no kernel dilation) of NCHW x dilated by
    `lhs_dilation` with OIHW w, as one convolution per output phase over x itself. Along an
    axis dilated by s, output q·s + r reads only the taps j = j0 + m·s with
    j0 = (before − r) mod s, and those meet x at consecutive pixels: a plain convolution with
    w's taps j0, j0 + s, ... The dilation's zeros are skipped (s² times fewer multiply-adds
    for a stride-s transposed convolution) and every nonzero product is the same. The phases'
    outputs are interleaved by one transpose. None where some phase reads no tap (a kernel
    narrower than the dilation). A bias is added by each phase's convolution."""
    n, _, *sizes = L.shape(x)
    out_channels, _, *kernel = L.shape(w)
    steps = [int(d) for d in lhs_dilation]
    if all(s == 1 for s in steps) or any(k < s for k, s in zip(kernel, steps)):
        return None
    axes = []  # per axis: the phases' (first tap, input pixels before and after, negative: cut), and Q and out
    for size, k, s, (before, after) in zip(sizes, kernel, steps, padding):
        out = (size - 1) * s + 1 + before + after - (k - 1)
        count = -(-out // s)  # outputs per phase (the last phases' extra ones are cut at the end)
        phases = []
        for r in range(s):
            j0 = (before - r) % s
            taps = -(-(k - j0) // s)
            first = (r - before + j0) // s  # the input pixel output 0 of this phase reads with tap j0
            phases.append((j0, -first, count + first + taps - 1 - size))
        axes.append((phases, count, out))
    (rows, qh, out_h), (columns, qw, out_w) = axes
    phase_outputs = []
    for jh, top, bottom in rows:
        for jw, left, right in columns:
            kernel_phase = L.op("slice", [w], {"axes": [2, 3], "starts": [jh, jw], "ends": kernel, "steps": steps})
            image = _cut(L, x, [2, 3], [max(0, -top), max(0, -left)],
                         [sizes[0] - max(0, -bottom), sizes[1] - max(0, -right)])
            pads = [max(0, top), max(0, left), max(0, bottom), max(0, right)]
            y = L.op("conv2d", [image, kernel_phase] + ([] if bias is None else [bias]),
                     {"strides": [1, 1], "pads": pads, "dilations": [1, 1], "groups": groups})
            phase_outputs.append(L.reshape(y, [1, n, out_channels, qh, qw]))
    # (sh, sw, N, O, Qh, Qw) -> (N, O, Qh, sh, Qw, sw): one transpose interleaves the phases
    y = L.reshape(L.op("concat", phase_outputs, {"axis": 0}), [*steps, n, out_channels, qh, qw])
    y = L.reshape(L.transpose(y, [2, 3, 4, 0, 5, 1]), [n, out_channels, qh * steps[0], qw * steps[1]])
    return _cut(L, y, [2, 3], [0, 0], [out_h, out_w])


def dilate(L: Lowering, x, dilation) -> Value:
    """An NCHW image (or NCDHW volume) with dilation - 1 zeros between neighbouring pixels
    (XLA's lhs dilation, which makes a transposed convolution a plain one): each pixel gets
    a unit axis after it on every spatial axis, padded with zeros, merged, and the zeros
    after the last pixel cut off. The zeros add only exact zero products to the sums."""
    dilation = [int(d) for d in dilation]
    if all(d == 1 for d in dilation):
        return L.value(x)
    n, c, *sizes = L.shape(x)
    y = L.reshape(x, [n, c, *(d for size in sizes for d in (size, 1))])
    pads = [0] * (2 * L.rank(y))
    for i, d in enumerate(dilation):
        pads[L.rank(y) + 3 + 2 * i] = d - 1
    y = L.op("pad", [y], {"pads": pads, "value": 0.0})
    y = L.reshape(y, [n, c, *(size * d for size, d in zip(sizes, dilation))])
    spatial = list(range(2, 2 + len(sizes)))
    return L.op("slice", [y], {"axes": spatial, "starts": [0] * len(sizes),
                               "ends": [(size - 1) * d + 1 for size, d in zip(sizes, dilation)]})


def transposed_kernel(L: Lowering, w, groups: int) -> Value:
    """A transposed convolution's kernel, laid out (I, O / groups, k...) as PyTorch keeps
    it, as the plain convolution's (O, I / groups, k...) over the dilated input: each
    group's in and out channels swapped, the window flipped."""
    cin, cout_group, *kernel = L.shape(w)
    w = L.reshape(w, [groups, cin // groups, cout_group, *kernel])
    w = L.transpose(w, [0, 2, 1, *range(3, 3 + len(kernel))])
    w = L.reshape(w, [groups * cout_group, cin // groups, *kernel])
    return flip(L, w, range(2, 2 + len(kernel)))


def transposed_convolution(L: Lowering, x, w, strides, pads, dilations, groups: int, bias=None) -> Value:
    """The NCHW (or NCDHW) transposed convolution (the gradient of a convolution with
    respect to its input) with kernel `w` in (I, O / groups, k...), plus `bias` if given:
    the input dilated by the strides and convolved with the transposed kernel, by phases
    where it can (2-D). `pads` are the plain convolution's (before, after) per axis:
    dilation (k - 1) - padding before, and after that again plus whatever output padding
    the framework adds."""
    kernel = transposed_kernel(L, w, groups)
    if L.rank(x) == 4 and all(d == 1 for d in dilations):
        phased = by_phases(L, x, kernel, strides, pads, groups, bias)
        if phased is not None:
            return phased
    spatial = L.rank(x) - 2
    layout = tuple(range(L.rank(x)))
    y = convolution(L, x, kernel, [1] * spatial, pads, strides, dilations, (layout, layout, layout), groups, 1)
    return y if bias is None else L.op("add", [y, L.reshape(bias, [1, L.shape(bias)[0], *[1] * spatial])])


def pool_window(window_dimensions, window_strides, padding, base_dilation, window_dilation) -> tuple[list, dict]:
    """(the layout that makes a rank-4 value NCHW, or a rank-5 one NCDHW, with the windowed
    axes as the spatial ones, the window per spatial axis: kernel, strides, (before, after)
    pairs, dilations) for a window as XLA states one (reduce_window)."""
    rank = len(window_dimensions)
    if rank not in (4, 5):
        raise ExportError(f"reduce_window on rank {rank} has no lowering (ranks 4 and 5)")
    if any(d != 1 for d in base_dilation):
        raise ExportError("reduce_window with base dilation has no lowering")
    trivial = [d for d in range(rank) if window_dimensions[d] == 1 and window_strides[d] == 1
               and tuple(padding[d]) == (0, 0) and window_dilation[d] == 1]
    spatial = [d for d in range(rank) if d not in trivial]
    if len(spatial) > rank - 2:
        raise ExportError(f"reduce_window over more than {rank - 2} axes of a rank-{rank} value has no lowering")
    # The untouched axes, in order, become N and C; the windowed ones the spatial axes
    # (fewer windowed axes take the last untouched ones as their partners).
    while len(spatial) < rank - 2:
        spatial = sorted(spatial + [max(d for d in trivial if d not in spatial)])
    layout = [d for d in range(rank) if d not in spatial] + spatial
    window = {"kernel": [int(window_dimensions[d]) for d in spatial],
              "strides": [int(window_strides[d]) for d in spatial],
              "pads": [tuple(int(p) for p in padding[d]) for d in spatial],
              "dilations": [int(window_dilation[d]) for d in spatial]}
    return layout, window


def _pool(L: Lowering, x, name: str, window_args, count_include_pad: bool = False) -> Value:
    """The pool of x by the 2-D pool `name` (max_pool2d or avg_pool2d) over an XLA-stated
    window, in NCHW or NCDHW."""
    layout, window = pool_window(*window_args)
    if len(layout) == 5:
        return in_nchw(L, x, layout, lambda y: pool3d(L, y, name, window["kernel"], window["strides"],
                                                       window["pads"], window["dilations"], count_include_pad))
    attrs = {**window, "pads": rml_pads(window["pads"])}
    if name == "avg_pool2d":
        attrs["count_include_pad"] = count_include_pad
    return in_nchw(L, x, layout, lambda y: L.op(name, [y], attrs))


def reduce_window_max(L: Lowering, x, window_dimensions, window_strides, padding, base_dilation,
                      window_dilation) -> Value:
    return _pool(L, x, "max_pool2d", (window_dimensions, window_strides, padding, base_dilation, window_dilation))


def reduce_window_min(L: Lowering, x, window_dimensions, window_strides, padding, base_dilation,
                      window_dilation) -> Value:
    """-max(-x): negation is exact, and the max pool's -inf padding becomes the +inf a min pads with."""
    negated = reduce_window_max(L, L.op("neg", [x]), window_dimensions, window_strides, padding, base_dilation,
                                window_dilation)
    return L.op("neg", [negated])


def reduce_window_sum(L: Lowering, x, window_dimensions, window_strides, padding, base_dilation,
                      window_dilation) -> Value:
    """A window sum is the mean over the whole window (padding counted) times its size."""
    window_args = (window_dimensions, window_strides, padding, base_dilation, window_dilation)
    count = np.float32(np.prod(pool_window(*window_args)[1]["kernel"]))
    return L.op("mul", [_pool(L, x, "avg_pool2d", window_args, count_include_pad=True), count])
