"""3-D convolution and pooling on NCDHW volumes, from rml's 2-D windowed ops.

A pool's box window is separable: the 2-D pool of every depth plane, then a 2-D pool whose
window runs along depth only (depth as H, the plane's pixels as W). Max is exact in any
order; an average divides twice, by the in-bounds count of the plane window and then of the
depth window, whose product is the box's count.

A convolution's depth taps are not separable (each has its own weights), so the kd planes
each output plane reads are stacked beside the channels: one conv2d over (N·D', C·kd, H, W)
with the kernel's depth folded into its input channels. It does the direct kernel's
multiply-adds, on kd copies of the input."""
from __future__ import annotations

from .._rml import ExportError
from .base import Lowering, Value, rml_pads


def _depth_planes(L: Lowering, x, kernel: int, stride: int, dilation: int, pads) -> tuple[list[Value], int]:
    """(the planes each depth tap reads, the output depth) for (N, D, ...) x: x padded with
    zeros along D, then for tap t the planes t·dilation + i·stride of every output plane i."""
    before, after = (int(p) for p in pads)
    if before or after:
        rank = L.rank(x)
        padding = [0] * (2 * rank)
        padding[1], padding[rank + 1] = before, after
        x = L.op("pad", [x], {"pads": padding, "value": 0.0})
    depth = L.shape(x)[1]
    out = (depth - dilation * (kernel - 1) - 1) // stride + 1
    if out < 1:
        raise ExportError(f"a depth window of {kernel} (dilation {dilation}) is longer than the padded depth {depth}")
    planes = []
    for t in range(kernel):
        start, end = t * dilation, t * dilation + (out - 1) * stride + 1
        whole = start == 0 and end == depth and (stride == 1 or out == 1)
        planes.append(L.value(x) if whole else
                      L.op("slice", [x], {"axes": [1], "starts": [start], "ends": [end], "steps": [stride]}))
    return planes, out


def conv3d(L: Lowering, x, w, strides, pads, dilations, groups: int) -> Value:
    """The NCDHW convolution of x with w (O, C / groups, kd, kh, kw): `pads` holds a
    (before, after) pair for D, H and W. Input channel c·kd + t of the stacked planes is
    channel c at depth tap t, which is the order of w reshaped to (O, C / groups · kd, kh, kw),
    and keeps each group's channels together."""
    strides, dilations = [int(s) for s in strides], [int(d) for d in dilations]
    n, c, _, h, wd = L.shape(x)
    o, per_group, kd, kh, kw = L.shape(w)
    planes, depth = _depth_planes(L, L.transpose(x, [0, 2, 1, 3, 4]), kd, strides[0], dilations[0], pads[0])
    taps = [L.reshape(p, [n, depth, c, 1, h, wd]) for p in planes]
    stacked = taps[0] if kd == 1 else L.op("concat", taps, {"axis": 3})
    y = L.op("conv2d", [L.reshape(stacked, [n * depth, c * kd, h, wd]), L.reshape(w, [o, per_group * kd, kh, kw])],
             {"strides": strides[1:], "pads": rml_pads(pads[1:]), "dilations": dilations[1:], "groups": int(groups)})
    _, _, oh, ow = L.shape(y)
    return L.transpose(L.reshape(y, [n, depth, o, oh, ow]), [0, 2, 1, 3, 4])


def pool3d(L: Lowering, x, name: str, kernel, strides, pads, dilations=(1, 1, 1),
           count_include_pad: bool = False) -> Value:
    """The pool of NCDHW x over a (kd, kh, kw) box by the 2-D pool `name` (max_pool2d or
    avg_pool2d): the plane pool, then the depth pool. `pads` holds a (before, after) pair
    for D, H and W; an average counts the padding only when count_include_pad."""
    kernel, strides, dilations = ([int(v) for v in values] for values in (kernel, strides, dilations))
    n, c, d, h, w = L.shape(x)

    def pool(y, kernel, strides, pads, dilations):
        if kernel == [1, 1] and strides == [1, 1] and not any(pads):
            return L.value(y)  # a one-element window
        attrs = {"kernel": kernel, "strides": strides, "pads": pads, "dilations": dilations}
        if name == "avg_pool2d":
            attrs["count_include_pad"] = bool(count_include_pad)
        return L.op(name, [y], attrs)
    planes = pool(L.reshape(x, [n, c * d, h, w]), kernel[1:], strides[1:], rml_pads(pads[1:]), dilations[1:])
    oh, ow = L.shape(planes)[2:]
    before, after = (int(p) for p in pads[0])
    y = pool(L.reshape(planes, [n, c, d, oh * ow]), [kernel[0], 1], [strides[0], 1], [before, 0, after, 0],
             [dilations[0], 1])
    return L.reshape(y, [n, c, L.shape(y)[2], oh, ow])
