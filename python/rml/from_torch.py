"""The PyTorch direct exporter: torch.export -> core ATen -> rml.Builder.

`export(module, example_inputs)` traces the module with `torch.export.export`,
decomposes to core ATen (keeping scaled dot-product attention and
upsample_nearest2d whole: they become rml's `sdpa` and a reshape +
broadcast_to + reshape upsample), and lowers node by node through the C++
Builder. Parameters and buffers become named constants; a node whose tensor
inputs are all constant runs in torch itself and becomes a constant. Every
lowered value's shape is checked against the shape torch recorded. An ATen op
with no lowering raises `ExportError` naming it: there is no fallback.
"""
from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np
import torch

from ._rml import Builder, ExportError
from .lowering import base
from .lowering import names as names_rule
from .lowering.base import Table, Value, output_name, shape_mismatch
from .lowering.elementwise import (acos, acosh, asin, asinh, atan, atan2, atanh, clamp, convert, cosh, expm1,
                                   log1p, log_base, sinh, tan)
from .lowering.index import diagonal, extreme_along, flip, gather_along, scatter_by_map, sort_along, tile
from .lowering.layout import slice_axis, split, upsample_nearest
from .lowering.nn import batch_norm, group_norm, log_softmax, normalize_over, product, top_k, variance
from .lowering.resize import adaptive_avg_pool, pad_edges, resize_bilinear, resize_nearest
from .lowering.rounding import ceil, floor, round_half_even, sign, trunc
from .lowering.volumes import conv3d, pool3d
from .lowering.windows import rml_pads, transposed_convolution, with_unit_axis

aten = torch.ops.aten

# Never folded into a constant: each run would draw new numbers.
RANDOM = {aten.rand.default, aten.randn.default, aten.randperm.default, aten.bernoulli.default,
          aten.bernoulli.p, aten.normal.Tensor_float, aten.uniform.default, aten.randint.default,
          aten.randint.low}

# Kept whole instead of decomposed.
KEEP = (aten.scaled_dot_product_attention.default, aten.upsample_nearest2d.vec)


def to_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach().cpu()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.float()
    return t.numpy()


class Lowering(base.Lowering):
    """State of one export: the builder, and what each fx node became."""

    def __init__(self, builder: Builder):
        super().__init__(builder)
        self.env: dict[Any, Any] = {}          # fx node -> Value | torch.Tensor (constant) | python value
        self.constant_ids: dict[int, Value] = {}  # id(torch constant) -> its rml constant
        self.names: dict[int, str] = {}          # id(torch constant) -> its weights-file name, if any
        self.node = None                         # the fx node being lowered

    # --- values -------------------------------------------------------------
    def value(self, x, like: Value | None = None) -> Value:
        """An rml value for a lowered tensor, a torch or NumPy constant or a Python scalar
        (i32 when `like` is and the scalar is not a float)."""
        if isinstance(x, Value):
            return x
        if isinstance(x, torch.Tensor):
            key = id(x)
            if key not in self.constant_ids:
                self.constant_ids[key] = Value(self.b.constant(to_numpy(x), self.names.get(key, "")))
            return self.constant_ids[key]
        if isinstance(x, (bool, int, float)):
            integer = like is not None and self.b.dtype(like) == "i32" and not isinstance(x, float)
            return Value(self.b.constant(np.array(x, dtype=np.int32 if integer else np.float32)))
        if isinstance(x, (np.ndarray, np.generic)):
            return super().value(x)
        raise ExportError(f"cannot use {type(x).__name__} as a tensor")

    def binary(self, name: str, a, b) -> Value:
        like = a if isinstance(a, Value) else b if isinstance(b, Value) else None
        return self.op(name, [self.value(a, like), self.value(b, like)])


LOWERINGS = Table()


def axis(dim: int, rank: int) -> int:
    return dim + rank if dim < 0 else dim


# --- elementwise ---------------------------------------------------------------
UNARY = {aten.neg.default: "neg", aten.abs.default: "abs", aten.exp.default: "exp", aten.log.default: "log",
         aten.sqrt.default: "sqrt", aten.rsqrt.default: "rsqrt", aten.tanh.default: "tanh",
         aten.sigmoid.default: "sigmoid", aten.relu.default: "relu", aten.erf.default: "erf",
         aten.sin.default: "sin", aten.cos.default: "cos", aten.reciprocal.default: "reciprocal"}
for _target, _name in UNARY.items():
    LOWERINGS[_target] = (lambda name: lambda L, x: L.op(name, [x]))(_name)

BINARY = {"add": (aten.add.Tensor, aten.add.Scalar), "sub": (aten.sub.Tensor, aten.sub.Scalar),
          "mul": (aten.mul.Tensor, aten.mul.Scalar), "div": (aten.div.Tensor, aten.div.Scalar),
          "maximum": (aten.maximum.default,), "minimum": (aten.minimum.default,),
          "pow": (aten.pow.Tensor_Tensor, aten.pow.Tensor_Scalar),
          "eq": (aten.eq.Tensor, aten.eq.Scalar), "ne": (aten.ne.Tensor, aten.ne.Scalar),
          "lt": (aten.lt.Tensor, aten.lt.Scalar), "le": (aten.le.Tensor, aten.le.Scalar),
          "gt": (aten.gt.Tensor, aten.gt.Scalar), "ge": (aten.ge.Tensor, aten.ge.Scalar)}


def _binary(name):
    def lower(L, a, b, alpha=1, rounding_mode=None):
        if rounding_mode is not None:
            raise ExportError(f"aten.div with rounding_mode={rounding_mode!r} has no lowering")
        if alpha != 1:
            b = L.binary("mul", b, alpha)
        return L.binary(name, a, b)
    return lower


for _name, _targets in BINARY.items():
    for _target in _targets:
        LOWERINGS[_target] = _binary(_name)


@LOWERINGS.register(aten.pow.Scalar)
def _pow_scalar(L, base, exponent):
    return L.binary("pow", base, exponent)


@LOWERINGS.register(aten.where.self)
def _where(L, cond, a, b):
    like = a if isinstance(a, Value) else b if isinstance(b, Value) else None
    return L.op("select", [cond, L.value(a, like), L.value(b, like)])


@LOWERINGS.register(aten.clamp.default)
def _clamp(L, x, min=None, max=None):
    return clamp(L, x, min, max)


@LOWERINGS.register(aten.hardtanh.default)
def _hardtanh(L, x, min_val=-1.0, max_val=1.0):  # also ReLU6
    return clamp(L, x, float(min_val), float(max_val))


@LOWERINGS.register(aten.leaky_relu.default)
def _leaky_relu(L, x, negative_slope=0.01):
    return L.op("select", [L.binary("gt", x, 0.0), x, L.binary("mul", x, float(negative_slope))])


@LOWERINGS.register(aten._to_copy.default)
def _to_copy(L, x, dtype=None, **_):
    if dtype is None:
        return x
    return convert(L, x, "bool" if dtype == torch.bool else "f32" if dtype.is_floating_point else "i32")


@LOWERINGS.register(aten.gelu.default)
def _gelu(L, x, approximate="none"):
    return L.op("gelu", [x], {"approximate": approximate})


# --- shapes ----------------------------------------------------------------------
@LOWERINGS.register(aten.view.default, aten._unsafe_view.default, aten.reshape.default)
def _view(L, x, shape):
    return L.op("reshape", [x], {"shape": list(shape)})


@LOWERINGS.register(aten.unsqueeze.default)
def _unsqueeze(L, x, dim):
    shape = list(L.shape(x))
    shape.insert(axis(dim, len(shape) + 1), 1)
    return L.op("reshape", [x], {"shape": shape})


@LOWERINGS.register(aten.squeeze.dims, aten.squeeze.dim, aten.squeeze.default)
def _squeeze(L, x, dims=None):
    shape = list(L.shape(x))
    if dims is None:
        dims = [d for d, n in enumerate(shape) if n == 1]
    elif isinstance(dims, int):
        dims = [dims]
    drop = {axis(d, len(shape)) for d in dims if shape[axis(d, len(shape))] == 1}
    return L.op("reshape", [x], {"shape": [n for d, n in enumerate(shape) if d not in drop]})


@LOWERINGS.register(aten.permute.default)
def _permute(L, x, dims):
    return L.op("transpose", [x], {"perm": [axis(d, L.rank(x)) for d in dims]})


@LOWERINGS.register(aten.t.default)
def _t(L, x):
    return x if L.rank(x) < 2 else L.op("transpose", [x], {"perm": [1, 0]})


@LOWERINGS.register(aten.transpose.int)
def _transpose(L, x, a, b):
    perm = list(range(L.rank(x)))
    a, b = axis(a, len(perm)), axis(b, len(perm))
    perm[a], perm[b] = perm[b], perm[a]
    return L.op("transpose", [x], {"perm": perm})


@LOWERINGS.register(aten.expand.default)
def _expand(L, x, shape):
    current = L.shape(x)
    lead = len(shape) - len(current)
    target = [current[d - lead] if n == -1 else n for d, n in enumerate(shape)]
    return x if tuple(target) == current else L.op("broadcast_to", [x], {"shape": target})


@LOWERINGS.register(aten.clone.default, aten.alias.default, aten.detach.default, aten.lift_fresh_copy.default)
def _identity(L, x, **_):
    return x


@LOWERINGS.register(aten.slice.Tensor)
def _slice(L, x, dim=0, start=None, end=None, step=1):
    start = 0 if start is None else start
    end = 2**62 if end is None else min(end, 2**62)
    return L.op("slice", [x], {"axes": [axis(dim, L.rank(x))], "starts": [start], "ends": [end], "steps": [step]})


@LOWERINGS.register(aten.select.int)
def _select(L, x, dim, index):
    shape = list(L.shape(x))
    d = axis(dim, len(shape))
    index = index + shape[d] if index < 0 else index
    sliced = slice_axis(L, x, d, index, index + 1)
    return L.op("reshape", [sliced], {"shape": shape[:d] + shape[d + 1:]})


@LOWERINGS.register(aten.split_with_sizes.default, aten.split.Tensor)
def _split(L, x, sizes, dim=0):
    d = axis(dim, L.rank(x))
    extent = L.shape(x)[d]
    if isinstance(sizes, int):  # aten.split.Tensor: equal chunks, the last may be shorter
        sizes = [min(sizes, extent - start) for start in range(0, extent, sizes)]
    return tuple(split(L, x, d, sizes))


@LOWERINGS.register(aten.cat.default)
def _cat(L, tensors, dim=0):
    tensors = [t for t in tensors if not (isinstance(t, torch.Tensor) and t.numel() == 0 and t.dim() == 1)]
    return L.op("concat", tensors, {"axis": axis(dim, L.rank(L.value(tensors[0])))})


@LOWERINGS.register(aten.constant_pad_nd.default)
def _pad(L, x, pad, value=0):
    rank = L.rank(x)
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pad) // 2):  # torch lists pairs from the last axis backwards
        begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    if min(begins + ends) < 0:
        raise ExportError("aten.constant_pad_nd with negative padding has no lowering")
    return L.op("pad", [x], {"pads": begins + ends, "value": float(value)})


@LOWERINGS.register(aten.embedding.default)
def _embedding(L, weight, indices, *_):
    return L.op("gather", [weight, indices], {"axis": 0})


@LOWERINGS.register(aten.index_select.default)
def _index_select(L, x, dim, index):
    return L.op("gather", [x, index], {"axis": axis(dim, L.rank(x))})


@LOWERINGS.register(aten.upsample_nearest2d.vec)
def _upsample_nearest(L, x, output_size, scale_factors):
    """Integer factors as a broadcast (no index reads); any other size as two gathers."""
    _, _, h, w = L.shape(x)
    out_h, out_w, scales = _resized(L, x, output_size, scale_factors)
    if out_h % h == 0 and out_w % w == 0 and all(s is None or s == int(s) for s in scales):
        return upsample_nearest(L, x, out_h // h, out_w // w)
    return resize_nearest(L, x, out_h, out_w, scales)


# --- reductions, linear algebra, nn -------------------------------------------------
def _reduction(name):
    def lower(L, x, dims=None, keepdim=False, dtype=None):
        axes = list(range(L.rank(x))) if dims is None or len(dims) == 0 else [axis(d, L.rank(x)) for d in dims]
        return L.op(name, [x], {"axes": axes, "keep_dims": bool(keepdim)})
    return lower


LOWERINGS[aten.sum.dim_IntList] = _reduction("reduce_sum")
LOWERINGS[aten.mean.dim] = _reduction("reduce_mean")
LOWERINGS[aten.amax.default] = _reduction("reduce_max")
LOWERINGS[aten.amin.default] = _reduction("reduce_min")


@LOWERINGS.register(aten.cumsum.default)
def _cumsum(L, x, dim, dtype=None):
    if dtype is not None and dtype.is_floating_point:
        x = convert(L, L.value(x), "f32")
    return L.op("cumsum", [x], {"axis": axis(dim, L.rank(x))})


@LOWERINGS.register(aten.sum.default)
def _sum_all(L, x, dtype=None):
    return L.op("reduce_sum", [x], {"axes": list(range(L.rank(x)))})


@LOWERINGS.register(aten.mm.default, aten.bmm.default, aten.matmul.default)
def _mm(L, a, b):
    return L.op("matmul", [a, b])


@LOWERINGS.register(aten.addmm.default)
def _addmm(L, bias, a, b, beta=1, alpha=1):
    product = L.op("matmul", [a, b])
    if alpha != 1:
        product = L.binary("mul", product, alpha)
    if beta != 1:
        bias = L.binary("mul", bias, beta)
    return L.binary("add", product, bias)


@LOWERINGS.register(aten.convolution.default)
def _convolution(L, x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    if L.rank(x) == 3:  # Conv1d: the 2-D convolution over (N, C, 1, L), exactly
        y = _convolution(L, with_unit_axis(L, x, 2), with_unit_axis(L, w, 2), bias, [1, *stride], [0, *padding],
                         [1, *dilation], transposed, [0, *output_padding], groups)
        return L.reshape(y, L.shape(y)[:2] + L.shape(y)[3:])
    if L.rank(x) not in (4, 5):
        raise ExportError(f"aten.convolution ({L.rank(x) - 2}-D) has no lowering (1-D to 3-D)")
    if L.rank(x) == 5 and not transposed:  # Conv3d
        y = conv3d(L, x, w, stride, [(p, p) for p in padding], dilation, groups)
        return y if bias is None else L.op("add", [y, L.reshape(bias, [1, L.shape(bias)[0], 1, 1, 1])])
    if transposed:  # ConvTranspose1d/2d/3d
        kernel = L.shape(w)[2:]
        spans = [d * (k - 1) for k, d in zip(kernel, dilation)]
        pads = [(s - p, s - p + extra) for s, p, extra in zip(spans, padding, output_padding)]
        return transposed_convolution(L, x, w, stride, pads, dilation, groups, bias)
    pads = rml_pads(zip(padding, padding))
    inputs = [x, w] + ([bias] if bias is not None else [])
    return L.op("conv2d", inputs, {"strides": list(stride), "pads": pads, "dilations": list(dilation), "groups": groups})


def _pool_window(L, x, spatial: int, kernel, stride, padding, dilation, ceil_mode):
    """(kernel, strides, (before, after) per axis, dilations) of a torch pool over the last
    `spatial` axes of x (torch repeats a one-entry list; no stride means the kernel). With
    ceil_mode the padding after each axis grows by what torch adds: it rounds the output
    size up, but drops a last window that would start in the right padding."""
    def each(values):
        return [int(v) for v in values] * (spatial // len(values))
    kernel, dilation, padding = each(kernel), each(dilation), each(padding)
    stride = each(stride or kernel)
    pairs = [(p, p) for p in padding]
    if ceil_mode:
        for i, size in enumerate(L.shape(x)[-spatial:]):
            span = dilation[i] * (kernel[i] - 1) + 1
            out = -(-(size + 2 * padding[i] - span) // stride[i]) + 1
            if (out - 1) * stride[i] >= size + padding[i]:
                out -= 1
            pairs[i] = (padding[i], padding[i] + max(0, (out - 1) * stride[i] + span - (size + 2 * padding[i])))
    return kernel, stride, pairs, dilation


def _max_pool(spatial: int):
    def lower(L, x, kernel, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
        kernel, stride, pairs, dilation = _pool_window(L, x, spatial, kernel, stride, padding, dilation, ceil_mode)
        if spatial == 3:
            out = _batched(L, x, 5, lambda y: pool3d(L, y, "max_pool2d", kernel, stride, pairs, dilation))
        else:
            attrs = {"kernel": kernel, "strides": stride, "pads": rml_pads(pairs), "dilations": dilation}
            out = _batched(L, x, 4, lambda y: L.op("max_pool2d", [y], attrs))
        return (out, None)  # indices are not lowered; using them fails in getitem
    return lower


LOWERINGS[aten.max_pool2d_with_indices.default] = _max_pool(2)
LOWERINGS[aten.max_pool3d_with_indices.default] = _max_pool(3)


def _batched(L, x, rank: int, lower) -> Value:
    """lower(x) for a batched input of `rank`, or for an unbatched one given a unit batch axis."""
    if L.rank(x) == rank:
        return lower(x)
    y = lower(L.reshape(x, [1, *L.shape(x)]))
    return L.reshape(y, L.shape(y)[1:])


def _avg_pool(spatial: int):
    def lower(L, x, kernel, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True, divisor_override=None):
        if divisor_override is not None:
            raise ExportError(f"aten.avg_pool{spatial}d with divisor_override has no lowering")
        kernel, stride, pairs, _ = _pool_window(L, x, spatial, kernel, stride, padding, (1,), ceil_mode)
        if ceil_mode:
            # torch counts the padding but not the cells ceil_mode adds; with no padding
            # that is counting the input's cells only.
            if count_include_pad and any(padding):
                raise ExportError(f"aten.avg_pool{spatial}d with ceil_mode, padding and count_include_pad "
                                  "has no lowering")
            count_include_pad = False
        if spatial == 3:
            return _batched(L, x, 5, lambda y: pool3d(L, y, "avg_pool2d", kernel, stride, pairs,
                                                      count_include_pad=count_include_pad))
        attrs = {"kernel": kernel, "strides": stride, "pads": rml_pads(pairs),
                 "count_include_pad": bool(count_include_pad)}
        return _batched(L, x, 4, lambda y: L.op("avg_pool2d", [y], attrs))
    return lower


LOWERINGS[aten.avg_pool2d.default] = _avg_pool(2)
LOWERINGS[aten.avg_pool3d.default] = _avg_pool(3)


@LOWERINGS.register(aten.avg_pool1d.default)
def _avg_pool1d(L, x, kernel, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True):
    """avg_pool2d over (N, C, 1, L)."""
    shape = list(L.shape(x))
    image = L.reshape(x, ([1] if len(shape) == 2 else []) + shape[:-1] + [1, shape[-1]])
    y = _avg_pool(2)(L, image, [1, *kernel], [1, *(stride or kernel)], [0, *padding], ceil_mode, count_include_pad)
    return L.reshape(y, shape[:-1] + [L.shape(y)[-1]])


@LOWERINGS.register(aten.adaptive_avg_pool1d.default)
def _adaptive_avg_pool1d(L, x, output_size):
    return adaptive_avg_pool(L, x, list(output_size))


@LOWERINGS.register(aten._softmax.default)
def _softmax(L, x, dim, half_to_float=False):
    return L.op("softmax", [x], {"axis": axis(dim, L.rank(x))})


@LOWERINGS.register(aten.native_layer_norm.default)
def _layer_norm(L, x, normalized_shape, weight, bias, eps):
    if len(normalized_shape) != 1:
        raise ExportError("aten.native_layer_norm over more than the last axis has no lowering")
    inputs = [x] + ([weight] if weight is not None else [])
    if bias is not None:
        if weight is None:
            inputs.append(L.value(torch.ones(normalized_shape)))
        inputs.append(bias)
    return (L.op("layer_norm", inputs, {"eps": float(eps)}), None, None)


@LOWERINGS.register(aten._native_batch_norm_legit_no_training.default)
def _batch_norm(L, x, weight, bias, running_mean, running_var, momentum, eps):
    """Inference batch norm over axis 1."""
    per_channel = [L.shape(x)[1]] + [1] * (L.rank(x) - 2)
    return (batch_norm(L, x, weight, bias, running_mean, running_var, eps, per_channel), None, None)


@LOWERINGS.register(aten._assert_tensor_metadata.default)
def _assert_metadata(L, *args, **kwargs):
    return None  # a trace-time check with no run-time effect


@LOWERINGS.register(aten.scaled_dot_product_attention.default)
def _sdpa(L, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    if dropout_p != 0.0 or enable_gqa:
        raise ExportError("aten.scaled_dot_product_attention with dropout or GQA has no lowering")
    inputs = [q, k, v]
    if attn_mask is not None:
        mask_node = L.node.kwargs.get("attn_mask", L.node.args[3] if len(L.node.args) > 3 else None)
        mask_val = getattr(mask_node, "meta", {}).get("val") if mask_node is not None else None
        is_bool = (attn_mask.dtype == torch.bool) if isinstance(attn_mask, torch.Tensor) else (
            mask_val is not None and mask_val.dtype == torch.bool)
        if is_bool:  # True = attend: an additive mask of 0 and -inf
            attn_mask = L.op("select", [attn_mask, L.value(0.0), L.value(-math.inf)])
        inputs.append(attn_mask)
    attrs = {"causal": bool(is_causal)}
    if scale is not None:
        attrs["scale"] = float(scale)
    return L.op("sdpa", inputs, attrs)


@LOWERINGS.register(aten.topk.default)
def _topk(L, x, k, dim=-1, largest=True, sorted=True):
    if axis(dim, L.rank(x)) != L.rank(x) - 1 or not largest:
        raise ExportError("aten.topk is lowered only for the largest values along the last axis")
    return top_k(L, x, k)


@LOWERINGS.register(operator.getitem)
def _getitem(L, items, index):
    item = items[index]
    if item is None:
        raise ExportError(f"output {index} of a multi-output op is not lowered")
    return item


# --- the rest of core ATen: recipes from rml.lowering ------------------------------
def _meta_dtype(L, position: int):
    """The torch dtype of the current node's argument at `position`, as traced."""
    arg = L.node.args[position] if position < len(L.node.args) else None
    val = getattr(arg, "meta", {}).get("val")
    return getattr(val, "dtype", None)


def _as_bool(L, x) -> Value:
    return convert(L, L.value(x), "bool")


@LOWERINGS.register(aten.logical_not.default)
def _logical_not(L, x):
    return L.op("eq", [_as_bool(L, x), np.float32(0)])


@LOWERINGS.register(aten.logical_and.default)
def _logical_and(L, a, b):
    return L.op("mul", [_as_bool(L, a), _as_bool(L, b)])


@LOWERINGS.register(aten.logical_or.default)
def _logical_or(L, a, b):
    return L.op("maximum", [_as_bool(L, a), _as_bool(L, b)])


@LOWERINGS.register(aten.logical_xor.default)
def _logical_xor(L, a, b):
    return L.op("ne", [_as_bool(L, a), _as_bool(L, b)])


def _bools_only(L):
    if _meta_dtype(L, 0) != torch.bool:
        raise ExportError("bitwise ops are lowered on bools only (rml's i32 has no bit operations)")


@LOWERINGS.register(aten.bitwise_not.default)
def _bitwise_not(L, x):
    _bools_only(L)
    return _logical_not(L, x)


@LOWERINGS.register(aten.bitwise_and.Tensor, aten.bitwise_and.Scalar)
def _bitwise_and(L, a, b):
    _bools_only(L)
    return _logical_and(L, a, b)


@LOWERINGS.register(aten.bitwise_or.Tensor, aten.bitwise_or.Scalar)
def _bitwise_or(L, a, b):
    _bools_only(L)
    return _logical_or(L, a, b)


@LOWERINGS.register(aten.bitwise_xor.Tensor, aten.bitwise_xor.Scalar)
def _bitwise_xor(L, a, b):
    _bools_only(L)
    return _logical_xor(L, a, b)


@LOWERINGS.register(aten.isnan.default)
def _isnan(L, x):
    return L.op("ne", [x, x])


@LOWERINGS.register(aten.isinf.default)
def _isinf(L, x):
    if L.b.dtype(x) == "i32":
        return L.op("ne", [x, x])  # all false
    return L.op("eq", [L.op("abs", [x]), np.float32(np.inf)])


# Recipes taking (L, x), registered as they are (the input is a lowered value: an op on
# constants runs in torch).
LOWERINGS.register(aten.expm1.default)(expm1)
LOWERINGS.register(aten.log1p.default)(log1p)
LOWERINGS.register(aten.sinh.default)(sinh)
LOWERINGS.register(aten.cosh.default)(cosh)
LOWERINGS.register(aten.tan.default)(tan)
LOWERINGS.register(aten.asinh.default)(asinh)
LOWERINGS.register(aten.acosh.default)(acosh)
LOWERINGS.register(aten.atanh.default)(atanh)
LOWERINGS.register(aten.atan.default)(atan)
LOWERINGS.register(aten.asin.default)(asin)
LOWERINGS.register(aten.acos.default)(acos)
LOWERINGS.register(aten.trunc.default)(trunc)
LOWERINGS.register(aten.floor.default)(floor)
LOWERINGS.register(aten.ceil.default)(ceil)
LOWERINGS.register(aten.round.default)(round_half_even)
LOWERINGS.register(aten.sign.default)(sign)
LOWERINGS.register(aten.atan2.default)(atan2)
LOWERINGS[aten.log2.default] = lambda L, x: log_base(L, x, 2.0)
LOWERINGS[aten.log10.default] = lambda L, x: log_base(L, x, 10.0)


@LOWERINGS.register(aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div_mode(L, a, b, rounding_mode=None):
    if L.b.dtype(L.value(a if isinstance(a, Value) else b)) == "i32":
        raise ExportError("integer division has no lowering (rml's div is f32)")
    quotient = L.binary("div", a, b)
    return {None: lambda q: q, "trunc": lambda q: trunc(L, q), "floor": lambda q: floor(L, q)}[rounding_mode](quotient)


@LOWERINGS.register(aten.elu.default)
def _elu(L, x, alpha=1.0, scale=1.0, input_scale=1.0):
    negative = L.binary("mul", expm1(L, L.binary("mul", x, float(input_scale))), float(alpha) * float(scale))
    return L.op("select", [L.binary("gt", x, 0.0), L.binary("mul", x, float(scale)), negative])


@LOWERINGS.register(aten.clamp.Tensor)
def _clamp_tensor(L, x, min=None, max=None):
    return clamp(L, x, min, max)


@LOWERINGS.register(aten.native_dropout.default)
def _dropout(L, x, p, train):
    if train:
        raise ExportError("aten.native_dropout in training mode draws random numbers: export the model in eval mode")
    return (x, L.op("broadcast_to", [np.float32(1)], {"shape": list(L.shape(x))}))


@LOWERINGS.register(aten.copy.default)
def _copy(L, x, src, non_blocking=False):
    src = convert(L, L.value(src), L.b.dtype(L.value(x)))
    return L.op("broadcast_to", [src], {"shape": list(L.shape(x))})


@LOWERINGS.register(aten.fill.Scalar, aten.full_like.default)
def _full_like(L, x, value, dtype=None, **_):
    dtype = dtype or _meta_dtype(L, 0)
    integer = dtype is not None and not dtype.is_floating_point and dtype != torch.bool
    scalar = np.array(value, np.int32 if integer else np.float32)
    return L.op("broadcast_to", [scalar], {"shape": list(L.shape(x))})


# --- reductions on statistics -----------------------------------------------------------
@LOWERINGS.register(aten.mean.default)
def _mean_all(L, x, dtype=None):
    return L.op("reduce_mean", [x], {"axes": list(range(L.rank(x)))})


@LOWERINGS.register(aten.prod.default, aten.prod.dim_int)
def _prod(L, x, dim=None, keepdim=False, dtype=None):
    if dim is None:
        return product(L, L.reshape(x, [int(np.prod(L.shape(x)))]), 0)
    return product(L, x, axis(dim, L.rank(x)), bool(keepdim))


@LOWERINGS.register(aten.any.default, aten.any.dim, aten.any.dims)
def _any(L, x, dim=None, keepdim=False):
    dims = [dim] if isinstance(dim, int) else dim
    axes = list(range(L.rank(x))) if not dims else [axis(d, L.rank(x)) for d in dims]
    return L.op("reduce_max", [_as_bool(L, x)], {"axes": axes, "keep_dims": bool(keepdim)})


@LOWERINGS.register(aten.var.correction, aten.var.dim)
def _var(L, x, dim=None, correction=None, keepdim=False, unbiased=None):
    if isinstance(correction, bool):  # aten.var.dim(x, dim, unbiased, keepdim)
        correction, unbiased = None, correction
    correction = (1 if unbiased in (None, True) else 0) if correction is None else correction
    axes = list(range(L.rank(x))) if not dim else [axis(d, L.rank(x)) for d in dim]
    return variance(L, x, axes, float(correction), bool(keepdim))


@LOWERINGS.register(aten._log_softmax.default)
def _log_softmax(L, x, dim, half_to_float=False):
    return log_softmax(L, x, axis(dim, L.rank(x)))


@LOWERINGS.register(aten.argmax.default, aten.argmin.default)
def _argmax(L, x, dim=None, keepdim=False):
    smallest = L.node.target is aten.argmin.default
    return extreme_along(L, x, None if dim is None else axis(dim, L.rank(x)), bool(keepdim), smallest)[1]


@LOWERINGS.register(aten.max.dim, aten.min.dim)
def _max_dim(L, x, dim, keepdim=False):
    return extreme_along(L, x, axis(dim, L.rank(x)), bool(keepdim), L.node.target is aten.min.dim)


@LOWERINGS.register(aten.sort.default)
def _sort(L, x, dim=-1, descending=False):
    return sort_along(L, x, axis(dim, L.rank(x)), descending)  # NaN last ascending, as torch sorts it


# --- indexing -----------------------------------------------------------------------
def _index_tensor(L, index) -> Value:
    """An index operand as i32: a constant converted, a traced bool refused."""
    if isinstance(index, torch.Tensor):
        if index.dtype == torch.bool:
            raise ExportError("indexing by a bool mask gives a shape that depends on the values")
        return L.value(to_numpy(index).astype(np.int32))
    if L.b.dtype(index) != "i32":
        raise ExportError("indexing by a bool mask gives a shape that depends on the values")
    return index


@LOWERINGS.register(aten.gather.default)
def _gather(L, x, dim, index, sparse_grad=False):
    return gather_along(L, x, axis(dim, L.rank(x)), _index_tensor(L, index))


@LOWERINGS.register(aten.index.Tensor)
def _index(L, x, indices):
    """x[..., i, j, ...]: index tensors on adjacent axes (None for a whole axis), merged
    into one axis read by one gather."""
    shape = list(L.shape(x))
    positions = [d for d, i in enumerate(indices) if i is not None]
    if not positions:
        return x
    if positions != list(range(positions[0], positions[-1] + 1)):
        raise ExportError("aten.index with index tensors on axes that are not adjacent has no lowering")
    first, last = positions[0], positions[-1]
    flat, stride = None, 1
    for d in reversed(positions):
        i = _index_tensor(L, indices[d])
        i = L.op("select", [L.op("lt", [i, np.int32(0)]), L.op("add", [i, np.int32(shape[d])]), i])
        term = i if stride == 1 else L.op("mul", [i, np.int32(stride)])
        flat = term if flat is None else L.op("add", [term, flat])
        stride *= shape[d]
    merged = L.reshape(x, shape[:first] + [stride] + shape[last + 1:])
    return L.op("gather", [merged, flat], {"axis": first})


@LOWERINGS.register(aten.diagonal.default)
def _diagonal(L, x, offset=0, dim1=0, dim2=1):
    return diagonal(L, x, offset, axis(dim1, L.rank(x)), axis(dim2, L.rank(x)))


@LOWERINGS.register(aten.flip.default)
def _flip(L, x, dims):
    return flip(L, x, [axis(d, L.rank(x)) for d in dims])


@LOWERINGS.register(aten.repeat.default)
def _repeat(L, x, repeats):
    return tile(L, x, repeats)


@LOWERINGS.register(aten.as_strided.default)
def _as_strided(L, x, size, stride, storage_offset=None):
    """A view of x's elements (taken as contiguous) at offset + sum(i_k * stride_k)."""
    positions = np.full(list(size), int(storage_offset or 0), np.int64)
    for k, (n, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = n
        positions = positions + np.arange(n, dtype=np.int64).reshape(shape) * s
    flat = L.reshape(x, [int(np.prod(L.shape(x)))])
    return L.op("gather", [flat, positions.astype(np.int32)], {"axis": 0})


def _positions(shape) -> np.ndarray:
    return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)


def _scatter_map(shape, targets: np.ndarray) -> np.ndarray:
    """source[target] = its rank among the targets (later ones win, as NumPy assigns)."""
    source = np.full(int(np.prod(shape)), -1, np.int32)
    source[targets.reshape(-1)] = np.arange(targets.size, dtype=np.int32)
    return source.reshape(shape)


@LOWERINGS.register(aten.slice_scatter.default)
def _slice_scatter(L, x, src, dim=0, start=None, end=None, step=1):
    d = axis(dim, L.rank(x))
    where = [slice(None)] * L.rank(x)
    where[d] = slice(start, end, step)
    return scatter_by_map(L, x, src, _scatter_map(L.shape(x), _positions(L.shape(x))[tuple(where)]))


@LOWERINGS.register(aten.select_scatter.default)
def _select_scatter(L, x, src, dim, index):
    d = axis(dim, L.rank(x))
    where = [slice(None)] * L.rank(x)
    where[d] = index
    return scatter_by_map(L, x, src, _scatter_map(L.shape(x), _positions(L.shape(x))[tuple(where)]))


def _constant_index(index, what: str) -> np.ndarray:
    if not isinstance(index, torch.Tensor):
        raise ExportError(f"{what} with indices computed at run time has no lowering (only indices known at export time)")
    return to_numpy(index).astype(np.int64)


@LOWERINGS.register(aten.index_put.default)
def _index_put(L, x, indices, values, accumulate=False):
    if accumulate:
        raise ExportError("aten.index_put with accumulate=True has no lowering")
    where = tuple(slice(None) if i is None else _constant_index(i, "aten.index_put") for i in indices)
    targets = _positions(L.shape(x))[where]
    values = L.op("broadcast_to", [values], {"shape": list(targets.shape)})
    return scatter_by_map(L, x, values, _scatter_map(L.shape(x), targets))


@LOWERINGS.register(aten.scatter.src, aten.scatter.value)
def _scatter(L, x, dim, index, src, reduce=None):
    if reduce is not None:
        raise ExportError("aten.scatter with reduce has no lowering")
    d = axis(dim, L.rank(x))
    index = _constant_index(index, "aten.scatter")
    coords = list(np.indices(index.shape))
    coords[d] = np.where(index < 0, index + L.shape(x)[d], index)
    targets = np.ravel_multi_index(coords, L.shape(x))
    if not isinstance(src, (Value, torch.Tensor)):  # scatter.value (a Value is an int too)
        updates = np.full(index.shape, src, np.int32 if L.b.dtype(L.value(x)) == "i32" else np.float32)
    else:
        updates = L.op("slice", [src], {"axes": list(range(index.ndim)), "starts": [0] * index.ndim,
                                        "ends": list(index.shape)})
    return scatter_by_map(L, x, updates, _scatter_map(L.shape(x), targets))


# --- pooling, padding, resizing, normalisation ------------------------------------------------
@LOWERINGS.register(aten._adaptive_avg_pool2d.default, aten._adaptive_avg_pool3d.default)
def _adaptive_avg_pool(L, x, output_size):
    return adaptive_avg_pool(L, x, list(output_size))


def _edge_pad(mode):
    def lower(L, x, padding):
        rank = L.rank(x)
        pairs = [(0, 0)] * rank
        for i in range(len(padding) // 2):  # pairs from the last axis backwards
            pairs[rank - 1 - i] = (padding[2 * i], padding[2 * i + 1])
        if min(min(p) for p in pairs) < 0:
            raise ExportError("negative padding has no lowering")
        return pad_edges(L, x, pairs, mode)
    return lower


for _op in (aten.reflection_pad1d.default, aten.reflection_pad2d.default, aten.reflection_pad3d.default):
    LOWERINGS[_op] = _edge_pad("reflect")
for _op in (aten.replication_pad2d.default, aten.replication_pad3d.default):
    LOWERINGS[_op] = _edge_pad("replicate")


def _resized(L, x, output_size, scale_factors):
    """(out_h, out_w, (scale_h, scale_w)) as torch's upsample ops take them: a given size,
    or floor(size * scale) with the scales used for the coordinates."""
    _, _, h, w = L.shape(x)
    if output_size is not None:
        return int(output_size[0]), int(output_size[1]), (None, None)
    sh, sw = (float(s) for s in scale_factors)
    return int(math.floor(h * sh)), int(math.floor(w * sw)), (sh, sw)


@LOWERINGS.register(aten.upsample_bilinear2d.vec)
def _upsample_bilinear(L, x, output_size, align_corners, scale_factors):
    out_h, out_w, scales = _resized(L, x, output_size, scale_factors)
    return resize_bilinear(L, x, out_h, out_w, bool(align_corners), scales)


@LOWERINGS.register(aten.native_group_norm.default)
def _group_norm(L, x, weight, bias, n, c, hw, groups, eps):
    return group_norm(L, x, groups, weight, bias, float(eps))


@LOWERINGS.register(aten._native_batch_norm_legit.no_stats, aten._native_batch_norm_legit.default)
def _batch_norm_batch_statistics(L, x, weight, bias, *rest):
    """Batch norm on the batch's own statistics (training=True: InstanceNorm exports as
    this); with training=False, on the running statistics given."""
    if len(rest) == 5:
        running_mean, running_var, training, _, eps = rest
        if not training:
            return _batch_norm(L, x, weight, bias, running_mean, running_var, None, eps)
    else:
        training, _, eps = rest
    axes = [0] + list(range(2, L.rank(x)))
    normalized, mean, rstd = normalize_over(L, x, axes, float(eps))
    per_channel = [L.shape(x)[1]] + [1] * (L.rank(x) - 2)
    if weight is not None:
        normalized = L.op("mul", [normalized, L.reshape(weight, per_channel)])
    if bias is not None:
        normalized = L.op("add", [normalized, L.reshape(bias, per_channel)])
    channels = [L.shape(x)[1]]
    return normalized, L.reshape(mean, channels), L.reshape(rstd, channels)


# --- distances -----------------------------------------------------------------------------
def _distances(L, a, b, p):
    """The p-norm distance between every row of a (..., P, M) and of b (..., R, M)."""
    rank = L.rank(a)
    difference = L.op("sub", [L.reshape(a, [*L.shape(a)[:-1], 1, L.shape(a)[-1]]),
                              L.reshape(b, [*L.shape(b)[:-2], 1, *L.shape(b)[-2:]])])
    reduce = {"axes": [rank], "keep_dims": False}
    if p == 2:
        return L.op("sqrt", [L.op("reduce_sum", [L.op("mul", [difference, difference])], reduce)])
    size = L.op("abs", [difference])
    if p == 1:
        return L.op("reduce_sum", [size], reduce)
    if math.isinf(p):
        return L.op("reduce_max", [size], reduce)
    if p == 0:
        return L.op("reduce_sum", [L.op("ne", [size, np.float32(0)])], reduce)
    total = L.op("reduce_sum", [L.op("pow", [size, np.float32(p)])], reduce)
    return L.op("pow", [total, np.float32(1 / p)])


@LOWERINGS.register(aten._cdist_forward.default)
def _cdist(L, a, b, p, compute_mode=None):
    return _distances(L, L.value(a), L.value(b), float(p))


@LOWERINGS.register(aten._pdist_forward.default)
def _pdist(L, x, p=2.0):
    """The distances of rows i < j, in row-major order."""
    n = L.shape(x)[0]
    all_pairs = L.reshape(_distances(L, x, x, float(p)), [n * n])
    upper = np.array([i * n + j for i in range(n) for j in range(i + 1, n)], np.int32)
    return L.op("gather", [all_pairs, upper], {"axis": 0})


def _is_tensor_arg(x) -> bool:
    return isinstance(x, (Value, torch.Tensor))


# Folded on a parameter, these keep it recognisable: fc.weight transposed is
# stored as "fc.weight.t" (as the C++ Builder names its own layout folds).
LAYOUT_OPS = {aten.t.default, aten.permute.default, aten.transpose.int, aten.view.default, aten.reshape.default,
              aten._unsafe_view.default, aten.unsqueeze.default, aten.squeeze.dims, aten.squeeze.dim,
              aten.expand.default, aten.slice.Tensor, aten.select.int, aten.clone.default}


def _folded_name(L, target, args) -> str:
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if target not in LAYOUT_OPS or len(tensors) != 1 or id(tensors[0]) not in L.names:
        return ""
    base = f"{L.names[id(tensors[0])]}.{target._opname}"
    taken = set(L.names.values())
    name, n = base, 2
    while name in taken:
        name, n = f"{base}.{n}", n + 1
    return name


def _map_args(env, args):
    """fx arguments with nodes replaced by what they became."""
    return torch.fx.node.map_arg(args, lambda n: env[n])


def _contains_value(x) -> bool:
    if isinstance(x, Value):
        return True
    if isinstance(x, (list, tuple)):
        return any(_contains_value(i) for i in x)
    return False


def _check_shape(L, node, result):
    expected = node.meta.get("val")
    results = result if isinstance(result, tuple) else (result,)
    vals = expected if isinstance(expected, (tuple, list)) else (expected,)
    for got, want in zip(results, vals):
        if isinstance(got, Value) and isinstance(want, torch.Tensor):
            if L.shape(got) != tuple(want.shape):
                raise shape_mismatch(str(node.target), L.shape(got), "torch's recorded shape", want.shape,
                                     f"node {node.name}")


def lower_program(program: torch.export.ExportedProgram, example_inputs, builder: Builder | None = None,
                  input_names: list[str] | None = None) -> Builder:
    """Lowers an exported (core ATen) program into a Builder."""
    b = builder or Builder()
    L = Lowering(b)
    signature = program.graph_signature
    state = dict(program.state_dict)
    state.update(program.constants)
    user_inputs = [s for s in signature.input_specs if s.kind == torch.export.graph_signature.InputKind.USER_INPUT]
    names = names_rule.input_names(input_names, len(user_inputs), lambda count: [s.arg.name for s in user_inputs])
    user_values = dict(zip([s.arg.name for s in user_inputs], example_inputs))
    user_names = dict(zip([s.arg.name for s in user_inputs], names))
    for spec in signature.input_specs:
        if spec.kind != torch.export.graph_signature.InputKind.USER_INPUT:
            tensor = state[spec.target]
            L.env[spec.arg.name] = tensor
            L.names[id(tensor)] = spec.target
            L.constant_ids[id(tensor)] = Value(b.constant(to_numpy(tensor), spec.target))
    for node in program.graph.nodes:
        if node.op == "placeholder":
            if node.name in user_values:
                L.env[node] = Value(b.input(user_names[node.name], to_numpy(user_values[node.name])))
            else:
                L.env[node] = L.env[node.name]
        elif node.op == "call_function":
            args = _map_args(L.env, node.args)
            kwargs = _map_args(L.env, node.kwargs)
            if node.target in RANDOM:
                raise ExportError(f"ATen op {node.target} draws random numbers at run time: rml has no lowering "
                                  f"for it, and folding one draw into a constant would change the model "
                                  f"(node {node.name})")
            if node.target is not operator.getitem and not _contains_value((args, kwargs)):
                # Every tensor input is constant: run the op in torch.
                L.env[node] = result = node.target(*args, **kwargs)
                name = _folded_name(L, node.target, args)
                if name and isinstance(result, torch.Tensor):
                    L.names[id(result)] = name
                continue
            lower = LOWERINGS.get(node.target)
            if lower is None:
                raise ExportError(f"ATen op {node.target} has no rml lowering (node {node.name})")
            try:
                L.node = node
                result = lower(L, *args, **kwargs)
            except ExportError as e:
                raise ExportError(f"{node.target} (node {node.name}): {e}") from None
            _check_shape(L, node, result)
            L.env[node] = result
        elif node.op == "output":
            outputs = node.args[0]
            output_specs = signature.output_specs
            for i, (out, spec) in enumerate(zip(outputs, output_specs)):
                b.output(output_name(i, len(outputs)), L.value(L.env[out]))
        else:
            raise ExportError(f"fx node kind {node.op!r} is not supported (node {node.name})")
    return b


def export(module: torch.nn.Module, example_inputs, input_names: list[str] | str | None = None) -> Builder:
    """Exports `module` called on `example_inputs` (a tuple of tensors) into a Builder.
    Inputs are named by rml.lowering.names' rule (input.0, … unless given, or forward()'s
    parameter names with input_names="arguments")."""
    module = module.eval()
    example_inputs = tuple(example_inputs)
    with torch.no_grad():
        program = torch.export.export(module, example_inputs)
        table = torch.export.default_decompositions()
        for op in KEEP:
            table.pop(op, None)
        program = program.run_decompositions(table)
    names = names_rule.input_names(input_names, len(example_inputs),
                                   lambda n: names_rule.torch_arguments(module, n))
    return lower_program(program, example_inputs, input_names=names)
