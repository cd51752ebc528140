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
from .lowering.base import Table, Value, output_name, shape_mismatch
from .lowering.elementwise import clamp, convert
from .lowering.layout import slice_axis, split, upsample_nearest
from .lowering.nn import batch_norm, top_k
from .lowering.windows import rml_pads, with_unit_axis

aten = torch.ops.aten

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
    n, c, h, w = L.shape(x)
    if output_size is not None:
        fh, fw = output_size[0] // h, output_size[1] // w
        if fh * h != output_size[0] or fw * w != output_size[1]:
            raise ExportError("aten.upsample_nearest2d needs an integer scale factor")
    else:
        fh, fw = (int(s) for s in scale_factors)
        if (fh, fw) != tuple(scale_factors):
            raise ExportError("aten.upsample_nearest2d needs an integer scale factor")
    return upsample_nearest(L, x, fh, fw)


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
    if transposed:
        raise ExportError("aten.convolution with transposed=True has no lowering")
    if L.rank(x) == 3:  # Conv1d: the 2-D convolution over (N, C, 1, L), exactly
        y = _convolution(L, with_unit_axis(L, x, 2), with_unit_axis(L, w, 2), bias, [1, *stride], [0, *padding],
                         [1, *dilation], transposed, output_padding, groups)
        return L.reshape(y, L.shape(y)[:2] + L.shape(y)[3:])
    if L.rank(x) != 4:
        raise ExportError(f"aten.convolution on rank {L.rank(x)} input has no lowering (1-D and 2-D only)")
    pads = rml_pads(zip(padding, padding))
    inputs = [x, w] + ([bias] if bias is not None else [])
    return L.op("conv2d", inputs, {"strides": list(stride), "pads": pads, "dilations": list(dilation), "groups": groups})


def _pool_window(kernel, stride, padding):
    kernel = list(kernel) * (2 // len(kernel))
    stride = list(stride or kernel) * (2 // len(stride or kernel))
    padding = list(padding) * (2 // len(padding))
    return kernel, stride, rml_pads(zip(padding, padding))


@LOWERINGS.register(aten.max_pool2d_with_indices.default)
def _max_pool(L, x, kernel, stride=(), padding=(0,), dilation=(1,), ceil_mode=False):
    if ceil_mode:
        raise ExportError("aten.max_pool2d_with_indices with ceil_mode=True has no lowering")
    kernel, stride, pads = _pool_window(kernel, stride, padding)
    dilation = list(dilation) * (2 // len(dilation))
    out = L.op("max_pool2d", [x], {"kernel": kernel, "strides": stride, "pads": pads, "dilations": dilation})
    return (out, None)  # indices are not lowered; using them fails in getitem


@LOWERINGS.register(aten.avg_pool2d.default)
def _avg_pool(L, x, kernel, stride=(), padding=(0,), ceil_mode=False, count_include_pad=True, divisor_override=None):
    if ceil_mode or divisor_override is not None:
        raise ExportError("aten.avg_pool2d with ceil_mode or divisor_override has no lowering")
    kernel, stride, pads = _pool_window(kernel, stride, padding)
    return L.op("avg_pool2d", [x], {"kernel": kernel, "strides": stride, "pads": pads,
                                     "count_include_pad": bool(count_include_pad)})


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
    names = input_names or [s.arg.name for s in user_inputs]
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


def export(module: torch.nn.Module, example_inputs, input_names: list[str] | None = None) -> Builder:
    """Exports `module` called on `example_inputs` (a tuple of tensors) into a Builder."""
    module = module.eval()
    example_inputs = tuple(example_inputs)
    with torch.no_grad():
        program = torch.export.export(module, example_inputs)
        table = torch.export.default_decompositions()
        for op in KEEP:
            table.pop(op, None)
        program = program.run_decompositions(table)
    return lower_program(program, example_inputs, input_names=input_names)
