"""The TensorFlow direct exporter: tf.function -> frozen GraphDef -> rml.Builder.

`export(model, example_inputs)` traces `model` (a tf.Module, a Keras model or a
tf.function) as a `tf.function` at the examples' fixed shapes and dtypes,
freezes its variables into `Const` ops with `convert_variables_to_constants_v2`,
and lowers the nodes the outputs need, in topological order, through the C++
Builder. Frozen variables become constants named after the variable; a node
whose data inputs are all constant runs in TensorFlow itself and becomes a
constant (so Fill, Range, Pack of constants and friends fold with TensorFlow's
own semantics), and Shape, Size and ZerosLike of a lowered tensor are read from
its static shape. NHWC convolutions and pools become transpose + NCHW op +
transpose, with SAME padding as TensorFlow splits it (the odd pixel after)
and EXPLICIT padding per side. Functional While loops (Keras RNN layers) are unrolled,
their TensorArrays held as lists at export time.
Every lowered value's shape is checked against the shape TensorFlow recorded.
A TensorFlow op with no lowering raises `ExportError` naming it: there is no
fallback.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

from ._rml import Builder, ExportError
from .lowering import base
from .lowering import names as names_rule
from .lowering.base import Table, Value, output_name, shape_mismatch
from .lowering.elementwise import (acos, acosh, asin, asinh, atan, atan2, atanh, clamp, convert, cosh, erfc, expm1,
                                   log1p, sinh, tan)
from .lowering.layout import slice_axis, split, upsample_nearest
from .lowering.linalg import einsum
from .lowering.nn import batch_norm, log_softmax, product, top_k
from .lowering.resize import resize_bilinear
from .lowering.rounding import ceil, floor, round_half_even, sign
from .lowering.volumes import conv3d, pool3d
from .lowering.windows import in_nchw, rml_pads, transposed_convolution

# Slice ends meaning "to the end" (rml's slice clamps like Python's).
FAR = 2**62


class Lowering(base.Lowering):
    """State of one export: the builder, what each TF tensor became, and the
    names of the frozen variables."""

    def __init__(self, builder: Builder, graph: tf.Graph):
        super().__init__(builder)
        self.graph = graph                      # the frozen graph: recorded shapes, folding
        self.env: dict[str, Any] = {}           # "node:i" -> Value | np.ndarray | None (not lowered)
        # Keyed by id(array); each entry holds the array too, so the id stays unique.
        self.constant_ids: dict[int, tuple[np.ndarray, Value]] = {}  # -> its rml constant
        self.names: dict[int, tuple[np.ndarray, str]] = {}           # -> its variable name
        self.used_names: set[str] = set()
        self.node = None                        # the NodeDef being lowered
        self.library = None                     # the frozen graph's FunctionDefLibrary
        self.functions: dict[str, Any] = {}     # name -> FunctionDef (bodies of While loops)

    # --- values -------------------------------------------------------------
    def value(self, x) -> Value:
        """An rml value for a lowered tensor or a NumPy constant (named if a variable)."""
        if isinstance(x, (Value, np.generic)):
            return super().value(x)
        if isinstance(x, np.ndarray):
            key = id(x)
            if key not in self.constant_ids:
                name = self.names[key][1] if key in self.names else ""
                self.constant_ids[key] = (x, Value(self.b.constant(x, self._unique(name))))
            return self.constant_ids[key][1]
        if x is None:
            raise ExportError("uses an output that was not lowered")
        raise ExportError(f"cannot use {type(x).__name__} as a tensor")

    def _unique(self, name: str) -> str:
        if not name:
            return ""
        candidate, n = name, 0
        while candidate in self.used_names:
            n += 1
            candidate = f"{name}_{n}"
        self.used_names.add(candidate)
        return candidate

    def name_like(self, result: np.ndarray, source) -> np.ndarray:
        """`result`, a relayout of constant `source`, keeps the variable's name."""
        if isinstance(source, np.ndarray) and id(source) in self.names:
            self.names[id(result)] = (result, self.names[id(source)][1])
        return result

    def dtype(self, x) -> str:
        """"f32" or "i32", as rml will hold `x`."""
        if isinstance(x, np.ndarray):
            return "i32" if np.issubdtype(x.dtype, np.integer) else "f32"
        return self.b.dtype(x)

    def scalar(self, value, like) -> np.ndarray:
        return np.array(value, dtype=np.int32 if self.dtype(like) == "i32" else np.float32)

    # --- layout helpers: constants are relaid out in NumPy and keep their name ---
    def transpose(self, x, perm) -> Value | np.ndarray:
        perm = [int(p) for p in perm]
        if perm == list(range(len(perm))):
            return x
        if isinstance(x, np.ndarray):
            return self.name_like(np.ascontiguousarray(np.transpose(x, perm)), x)
        return self.op("transpose", [x], {"perm": perm})

    def reshape(self, x, shape) -> Value | np.ndarray:
        shape = [int(d) for d in shape]
        if isinstance(x, np.ndarray):
            return self.name_like(x.reshape(shape), x)
        if list(self.shape(x)) == shape:
            return x
        return self.op("reshape", [x], {"shape": shape})

    # --- the current node -----------------------------------------------------
    def attr(self, key: str, default: Any = ...) -> Any:
        """A NodeDef attribute as a Python value (lists, strings, dtypes decoded)."""
        if key not in self.node.attr:
            if default is ...:
                raise ExportError(f"has no attribute '{key}'")
            return default
        a = self.node.attr[key]
        kind = a.WhichOneof("value")
        if kind == "list":
            for field in ("i", "f", "s", "b", "type"):
                items = list(getattr(a.list, field))
                if items:
                    return [i.decode() if isinstance(i, bytes) else i for i in items]
            return []
        if kind == "s":
            return a.s.decode()
        if kind == "type":
            return tf.dtypes.as_dtype(a.type)
        return getattr(a, kind) if kind else default

    def constant(self, x, what: str) -> np.ndarray:
        """An input that must be known at export time (axes, shapes, sizes)."""
        if not isinstance(x, np.ndarray):
            raise ExportError(f"{what} must be a constant, not a run-time tensor")
        return x

    # --- folding --------------------------------------------------------------
    def fold(self, node, inputs: dict[str, np.ndarray]) -> tuple:
        """Runs one node in TensorFlow on constant inputs: the node alone in a graph of its own,
        fed by placeholders. (Running it in the model's graph made TensorFlow prune that whole
        graph for every fold: 40 s of a 50-layer Keras ResNet's export went there.)"""
        op = self.graph.get_operation_by_name(node.name)
        graph_def = tf.compat.v1.GraphDef()
        for i, (tensor, x) in enumerate(zip(op.inputs, inputs.values())):
            placeholder = graph_def.node.add(name=f"fold_input_{i}", op="Placeholder")
            placeholder.attr["dtype"].type = tensor.dtype.as_datatype_enum
        alone = graph_def.node.add()
        alone.CopyFrom(node)
        del alone.input[:]
        alone.input.extend(f"fold_input_{i}" for i in range(len(inputs)))
        for key in [k for k in alone.attr if k.startswith("_")]:  # colocation and shape hints
            del alone.attr[key]
        if any(value.HasField("func") for value in alone.attr.values()):
            graph_def.library.CopyFrom(self.library)
        graph = tf.Graph()
        with graph.as_default():
            tf.graph_util.import_graph_def(graph_def, name="")
        feeds = {f"fold_input_{i}:0": x for i, x in enumerate(inputs.values())}
        outputs = [f"{node.name}:{i}" for i in range(len(op.outputs))]
        with tf.compat.v1.Session(graph=graph) as session:
            return tuple(np.asarray(r) for r in session.run(outputs, feed_dict=feeds))


LOWERINGS = Table()


def axis(dim, rank: int) -> int:
    dim = int(dim)
    return dim + rank if dim < 0 else dim


FLOAT_TYPES = (tf.float16, tf.bfloat16, tf.float32, tf.float64)


def kind(dtype: tf.DType) -> str:
    """rml's view of a TF dtype: f32, i32, or bool (held as f32 0/1)."""
    if dtype == tf.bool:
        return "bool"
    if dtype in FLOAT_TYPES:
        return "f32"
    if dtype.is_integer:
        return "i32"
    raise ExportError(f"dtype {dtype.name} has no rml equivalent")


# --- pass-through ----------------------------------------------------------------
IDENTITY_OPS = ("Identity", "StopGradient", "Snapshot", "PreventGradient", "EnsureShape", "CheckNumerics")


@LOWERINGS.register(*IDENTITY_OPS)
def _identity(L, x, *_):
    return x


@LOWERINGS.register("IdentityN")
def _identity_n(L, *xs):
    return tuple(xs)


PASS_THROUGH_OPS = IDENTITY_OPS + ("IdentityN",)


@LOWERINGS.register("NoOp")
def _no_op(L, *_):
    return ()


# --- elementwise ---------------------------------------------------------------
UNARY = {"Neg": "neg", "Abs": "abs", "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Rsqrt": "rsqrt",
         "Tanh": "tanh", "Sigmoid": "sigmoid", "Relu": "relu", "Erf": "erf", "Sin": "sin", "Cos": "cos",
         "Reciprocal": "reciprocal", "Inv": "reciprocal"}
for _op_type, _name in UNARY.items():
    LOWERINGS[_op_type] = (lambda name: lambda L, x: L.op(name, [x]))(_name)

BINARY = {"Add": "add", "AddV2": "add", "Sub": "sub", "Mul": "mul", "RealDiv": "div", "Maximum": "maximum",
          "Minimum": "minimum", "Pow": "pow", "Equal": "eq", "NotEqual": "ne", "Less": "lt", "LessEqual": "le",
          "Greater": "gt", "GreaterEqual": "ge", "LogicalAnd": "mul", "LogicalOr": "maximum"}
for _op_type, _name in BINARY.items():
    LOWERINGS[_op_type] = (lambda name: lambda L, a, b: L.op(name, [a, b]))(_name)


@LOWERINGS.register("Div")
def _div(L, a, b):
    if L.dtype(a) == "i32":
        raise ExportError("integer division (floor semantics) has no lowering")
    return L.op("div", [a, b])


@LOWERINGS.register("LogicalNot")
def _logical_not(L, x):
    return L.op("eq", [x, L.scalar(0, x)])


@LOWERINGS.register("Square")
def _square(L, x):
    return L.op("mul", [x, x])


@LOWERINGS.register("SquaredDifference")
def _squared_difference(L, a, b):
    d = L.op("sub", [a, b])
    return L.op("mul", [d, d])


@LOWERINGS.register("AddN")
def _add_n(L, *xs):
    total = xs[0]
    for x in xs[1:]:
        total = L.op("add", [total, x])
    return total


@LOWERINGS.register("Erfc")
def _erfc(L, x):
    return erfc(L, x)


@LOWERINGS.register("Relu6")
def _relu6(L, x):
    return L.op("minimum", [L.op("relu", [x]), L.scalar(6, x)])


@LOWERINGS.register("LeakyRelu")
def _leaky_relu(L, x):
    # TF's kernel: x > 0 ? x : alpha * x.
    scaled = L.op("mul", [x, L.scalar(L.attr("alpha", 0.2), x)])
    return L.op("select", [L.op("gt", [x, L.scalar(0, x)]), x, scaled])


# Functions rml has no op for, as recipes (python/rml/lowering/).
LOWERINGS.register("Floor")(lambda L, x: floor(L, x))
LOWERINGS.register("Ceil")(lambda L, x: ceil(L, x))
LOWERINGS.register("Round")(lambda L, x: round_half_even(L, x))  # tf.round: halves to even
LOWERINGS.register("Sign")(lambda L, x: sign(L, x, nan_propagates=True))
LOWERINGS.register("Expm1")(lambda L, x: expm1(L, x))
LOWERINGS.register("Log1p")(lambda L, x: log1p(L, x))
LOWERINGS.register("Sinh")(lambda L, x: sinh(L, x))
LOWERINGS.register("Cosh")(lambda L, x: cosh(L, x))
LOWERINGS.register("Tan")(lambda L, x: tan(L, x))
LOWERINGS.register("Asinh")(lambda L, x: asinh(L, x))
LOWERINGS.register("Acosh")(lambda L, x: acosh(L, x))
LOWERINGS.register("Atanh")(lambda L, x: atanh(L, x))
LOWERINGS.register("Atan")(lambda L, x: atan(L, x))
LOWERINGS.register("Asin")(lambda L, x: asin(L, x))
LOWERINGS.register("Acos")(lambda L, x: acos(L, x))
LOWERINGS.register("Atan2")(lambda L, y, x: atan2(L, y, x))
LOWERINGS.register("IsNan")(lambda L, x: L.op("ne", [x, x]))
LOWERINGS.register("IsInf")(lambda L, x: L.op("eq", [L.op("abs", [x]), np.float32(np.inf)]))
LOWERINGS.register("IsFinite")(lambda L, x: L.op("lt", [L.op("abs", [x]), np.float32(np.inf)]))


@LOWERINGS.register("LogSoftmax")
def _log_softmax(L, x):
    return log_softmax(L, x, L.rank(x) - 1)


@LOWERINGS.register("Cumsum")
def _cumsum(L, x, dim):
    attrs = {"axis": axis(L.constant(dim, "the cumsum axis"), L.rank(x)),
             "exclusive": bool(L.attr("exclusive", False)), "reverse": bool(L.attr("reverse", False))}
    return L.op("cumsum", [x], attrs)


@LOWERINGS.register("Prod")
def _prod(L, x, dims):
    keep = bool(L.attr("keep_dims", False))
    for d in sorted({axis(d, L.rank(x)) for d in L.constant(dims, "the reduction axes").reshape(-1)}, reverse=True):
        x = product(L, x, d, keep)
    return x


@LOWERINGS.register("Elu")
def _elu(L, x):
    negative = L.op("sub", [L.op("exp", [x]), L.scalar(1.0, x)])
    return L.op("select", [L.op("gt", [x, L.scalar(0.0, x)]), x, negative])


@LOWERINGS.register("Selu")
def _selu(L, x):
    alpha, scale = np.float32(1.6732632423543772), np.float32(1.0507009873554805)
    negative = L.op("mul", [expm1(L, x), np.float32(alpha * scale)])
    return L.op("select", [L.op("gt", [x, L.scalar(0.0, x)]), L.op("mul", [x, scale]), negative])


@LOWERINGS.register("Softplus")
def _softplus(L, x):
    """max(x, 0) + log(1 + exp(-|x|)): no overflow for large x."""
    tail = L.op("log", [L.op("add", [L.op("exp", [L.op("neg", [L.op("abs", [x])])]), np.float32(1)])])
    return L.op("add", [L.op("relu", [x]), tail])


@LOWERINGS.register("Softsign")
def _softsign(L, x):
    return L.op("div", [x, L.op("add", [L.op("abs", [x]), np.float32(1)])])


@LOWERINGS.register("Einsum")
def _einsum(L, *operands):
    if len(operands) != 2:
        raise ExportError(f"an einsum of {len(operands)} operands has no lowering (two only)")
    equation = L.attr("equation")
    return einsum(L, equation.decode() if isinstance(equation, bytes) else equation, *operands)


@LOWERINGS.register("ClipByValue")
def _clip(L, x, low, high):
    return clamp(L, x, low, high)


@LOWERINGS.register("Select", "SelectV2")
def _select(L, cond, a, b):
    if L.node.op == "Select" and L.rank(cond) == 1 and L.rank(a) > 1:
        # tf.compat.v1.where with a vector condition picks whole rows.
        cond = L.reshape(cond, [L.shape(cond)[0]] + [1] * (L.rank(a) - 1))
    return L.op("select", [cond, a, b])


@LOWERINGS.register("Cast")
def _cast(L, x):
    source, target = kind(L.attr("SrcT")), kind(L.attr("DstT"))
    if source == target or (source == "bool" and target == "f32"):
        return x  # comparisons already give f32 0/1
    return convert(L, x, target)


@LOWERINGS.register("Softmax")
def _softmax(L, x):
    return L.op("softmax", [x], {"axis": -1})


# --- shapes ----------------------------------------------------------------------
@LOWERINGS.register("Shape")
def _shape(L, x):
    return np.array(L.shape(x), dtype=L.attr("out_type", tf.int32).as_numpy_dtype)


@LOWERINGS.register("Size")
def _size(L, x):
    return np.array(int(np.prod(L.shape(x))), dtype=L.attr("out_type", tf.int32).as_numpy_dtype)


@LOWERINGS.register("Rank")
def _rank(L, x):
    return np.array(L.rank(x), dtype=np.int32)


@LOWERINGS.register("ZerosLike", "OnesLike")
def _zeros_like(L, x):
    fill = np.zeros if L.node.op == "ZerosLike" else np.ones
    return fill(L.shape(x), dtype=L.attr("T").as_numpy_dtype)


@LOWERINGS.register("Reshape")
def _reshape(L, x, shape):
    return L.op("reshape", [x], {"shape": [int(d) for d in L.constant(shape, "the shape").reshape(-1)]})


@LOWERINGS.register("Transpose")
def _transpose(L, x, perm):
    return L.transpose(x, L.constant(perm, "the permutation").reshape(-1))


@LOWERINGS.register("Squeeze")
def _squeeze(L, x):
    shape = L.shape(x)
    dims = {axis(d, len(shape)) for d in L.attr("squeeze_dims", [])} or {d for d, n in enumerate(shape) if n == 1}
    return L.reshape(x, [n for d, n in enumerate(shape) if d not in dims])


@LOWERINGS.register("ExpandDims")
def _expand_dims(L, x, dim):
    shape = list(L.shape(x))
    shape.insert(axis(L.constant(dim, "the axis").reshape(-1)[0], len(shape) + 1), 1)
    return L.reshape(x, shape)


@LOWERINGS.register("ConcatV2")
def _concat(L, *args):
    *xs, dim = args
    return L.op("concat", list(xs), {"axis": axis(L.constant(dim, "the axis"), L.rank(xs[0]))})


@LOWERINGS.register("Pack")
def _pack(L, *xs):
    shape = list(L.shape(xs[0]))
    d = axis(L.attr("axis", 0), len(shape) + 1)
    expanded = [L.reshape(x, shape[:d] + [1] + shape[d:]) for x in xs]
    return expanded[0] if len(expanded) == 1 else L.op("concat", expanded, {"axis": d})


@LOWERINGS.register("Unpack")
def _unpack(L, x):
    shape = list(L.shape(x))
    d = axis(L.attr("axis", 0), len(shape))
    rest = shape[:d] + shape[d + 1:]
    return tuple(L.reshape(slice_axis(L, x, d, i, i + 1), rest) for i in range(shape[d]))


@LOWERINGS.register("Split")
def _split(L, dim, x):
    d = axis(L.constant(dim, "the axis"), L.rank(x))
    count = L.attr("num_split")
    return tuple(split(L, x, d, [L.shape(x)[d] // count] * count))


@LOWERINGS.register("SplitV")
def _split_v(L, x, sizes, dim):
    d = axis(L.constant(dim, "the axis"), L.rank(x))
    sizes = [int(s) for s in L.constant(sizes, "the sizes")]
    if -1 in sizes:  # one size may be inferred
        sizes[sizes.index(-1)] = L.shape(x)[d] - (sum(sizes) + 1)
    return tuple(split(L, x, d, sizes))


@LOWERINGS.register("Slice")
def _slice(L, x, begin, size):
    begin = [int(b) for b in L.constant(begin, "the begin")]
    size = [int(s) for s in L.constant(size, "the size")]
    ends = [FAR if s == -1 else b + s for b, s in zip(begin, size)]
    return L.op("slice", [x], {"axes": list(range(len(begin))), "starts": begin, "ends": ends})


def _bits(mask: int, count: int) -> list[bool]:
    return [bool(mask >> i & 1) for i in range(count)]


@LOWERINGS.register("StridedSlice")
def _strided_slice(L, x, begin, end, strides):
    """TF's sparse slice spec made dense: one rml slice, then a reshape that
    drops shrunk axes and inserts new ones."""
    begin, end, strides = (L.constant(v, "slice bounds").reshape(-1).tolist() for v in (begin, end, strides))
    n, shape = len(begin), L.shape(x)
    begin_mask, end_mask, ellipsis, new_axis, shrink = (
        _bits(L.attr(mask, 0), n)
        for mask in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"))
    axes, starts, ends, steps = [], [], [], []
    layout = []  # per output axis: an input axis kept, or None for a new axis of 1
    dim = 0
    for i in range(n):
        if ellipsis[i]:
            remaining = sum(1 for j in range(i + 1, n) if not new_axis[j])
            for _ in range(len(shape) - dim - remaining):
                layout.append(dim)
                dim += 1
        elif new_axis[i]:
            layout.append(None)
        elif shrink[i]:
            index = begin[i] + shape[dim] if begin[i] < 0 else begin[i]
            axes.append(dim), starts.append(index), ends.append(index + 1), steps.append(1)
            dim += 1
        else:
            step = strides[i]
            start = (0 if step > 0 else -1) if begin_mask[i] else begin[i]
            stop = (FAR if step > 0 else -FAR) if end_mask[i] else end[i]
            if (start, stop, step) != (0, FAR, 1):
                axes.append(dim), starts.append(start), ends.append(stop), steps.append(step)
            layout.append(dim)
            dim += 1
    layout += list(range(dim, len(shape)))
    y = L.op("slice", [x], {"axes": axes, "starts": starts, "ends": ends, "steps": steps}) if axes else x
    sliced = L.shape(y)
    return L.reshape(y, [1 if d is None else sliced[d] for d in layout])


@LOWERINGS.register("ReverseV2")
def _reverse(L, x, dims):
    axes = sorted({axis(d, L.rank(x)) for d in L.constant(dims, "the axes").reshape(-1)})
    return L.op("slice", [x], {"axes": axes, "starts": [-1] * len(axes), "ends": [-FAR] * len(axes),
                               "steps": [-1] * len(axes)})


@LOWERINGS.register("BroadcastTo")
def _broadcast_to(L, x, shape):
    shape = [int(d) for d in L.constant(shape, "the shape")]
    return x if list(L.shape(x)) == shape else L.op("broadcast_to", [x], {"shape": shape})


@LOWERINGS.register("Tile")
def _tile(L, x, multiples):
    """Each tiled axis: insert an axis before it, broadcast it to the multiple, merge."""
    multiples = [int(m) for m in L.constant(multiples, "the multiples")]
    shape = list(L.shape(x))
    expanded = [n for d in shape for n in (1, d)]
    target = [n for m, d in zip(multiples, shape) for n in (m, d)]
    if expanded == target:
        return x
    y = L.op("broadcast_to", [L.reshape(x, expanded)], {"shape": target})
    return L.reshape(y, [m * d for m, d in zip(multiples, shape)])


@LOWERINGS.register("Pad", "PadV2")
def _pad(L, x, paddings, value=None):
    paddings = L.constant(paddings, "the paddings").astype(np.int64)
    fill = 0.0 if value is None else float(L.constant(value, "the pad value"))
    return L.op("pad", [x], {"pads": paddings[:, 0].tolist() + paddings[:, 1].tolist(), "value": fill})


@LOWERINGS.register("SpaceToBatchND")
def _space_to_batch(L, x, block_shape, paddings):
    """Each block position's pixels as a batch of its own (TensorFlow writes a dilated 3-D
    convolution as one over space_to_batch's output): pad, split every blocked axis into
    (size / block, block), and move the block axes in front of the batch."""
    blocks = [int(b) for b in L.constant(block_shape, "the block shape").reshape(-1)]
    pairs = L.constant(paddings, "the paddings").astype(np.int64).reshape(-1, 2)
    m, rank = len(blocks), L.rank(x)
    pads = [0] * (2 * rank)
    for i, (before, after) in enumerate(pairs):
        pads[1 + i], pads[rank + 1 + i] = int(before), int(after)
    y = L.op("pad", [x], {"pads": pads, "value": 0.0}) if any(pads) else L.value(x)
    shape = L.shape(y)
    if any(shape[1 + i] % b for i, b in enumerate(blocks)):
        raise ExportError(f"SpaceToBatchND: padded sizes {shape[1:1 + m]} are not multiples of the blocks {blocks}")
    split = [shape[0]] + [d for i, b in enumerate(blocks) for d in (shape[1 + i] // b, b)] + list(shape[1 + m:])
    y = L.reshape(y, split)
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(1 + 2 * m, len(split)))
    y = L.transpose(y, perm)
    return L.reshape(y, [shape[0] * int(np.prod(blocks))] + [shape[1 + i] // b for i, b in enumerate(blocks)]
                     + list(shape[1 + m:]))


@LOWERINGS.register("BatchToSpaceND")
def _batch_to_space(L, x, block_shape, crops):
    """The inverse of SpaceToBatchND: the block axes back beside the axes they split, then
    the crops cut off."""
    blocks = [int(b) for b in L.constant(block_shape, "the block shape").reshape(-1)]
    pairs = L.constant(crops, "the crops").astype(np.int64).reshape(-1, 2)
    m, shape = len(blocks), L.shape(x)
    batch = shape[0] // int(np.prod(blocks))
    y = L.reshape(x, blocks + [batch] + list(shape[1:]))
    perm = [m] + [a for i in range(m) for a in (m + 1 + i, i)] + list(range(2 * m + 1, m + len(shape)))
    y = L.transpose(y, perm)
    sizes = [shape[1 + i] * b for i, b in enumerate(blocks)]
    y = L.reshape(y, [batch] + sizes + list(shape[1 + m:]))
    if not pairs.any():
        return y
    return L.op("slice", [y], {"axes": list(range(1, m + 1)), "starts": [int(b) for b, _ in pairs],
                               "ends": [size - int(a) for size, (_, a) in zip(sizes, pairs)]})


@LOWERINGS.register("GatherV2")
def _gather(L, params, indices, dim):
    if L.attr("batch_dims", 0) != 0:
        raise ExportError("batch_dims other than 0 has no lowering")
    return L.op("gather", [params, indices], {"axis": axis(L.constant(dim, "the axis"), L.rank(params))})


@LOWERINGS.register("ResizeBilinear")
def _resize_bilinear(L, x, size):
    """NHWC bilinear resize with half-pixel centres (tf.image.resize, Keras Resizing and
    UpSampling2D) or aligned corners: torch's coordinates, which are TensorFlow's there."""
    align = bool(L.attr("align_corners", False))
    if not align and not L.attr("half_pixel_centers", False):
        raise ExportError("the legacy coordinates (neither half_pixel_centers nor align_corners) have no lowering")
    out_h, out_w = (int(s) for s in L.constant(size, "the size"))
    nchw = L.transpose(x, [0, 3, 1, 2])
    return L.transpose(resize_bilinear(L, nchw, out_h, out_w, align), [0, 2, 3, 1])


@LOWERINGS.register("ResizeNearestNeighbor")
def _resize_nearest(L, x, size):
    """NHWC nearest upsampling by integer factors (with an integer factor, half-pixel
    centres pick the same source pixels)."""
    if L.attr("align_corners", False):
        raise ExportError("align_corners=True has no lowering")
    n, h, w, c = L.shape(x)
    out_h, out_w = (int(s) for s in L.constant(size, "the size"))
    if out_h % h or out_w % w:
        raise ExportError(f"resizing {h}x{w} to {out_h}x{out_w} is not an integer upsampling")
    return upsample_nearest(L, x, out_h // h, out_w // w, channels_last=True)


# --- reductions, linear algebra, nn -------------------------------------------------
def _reduction(name):
    def lower(L, x, dims):
        if name == "reduce_mean" and L.dtype(x) == "i32":
            raise ExportError("an integer mean (floor semantics) has no lowering")
        axes = sorted({axis(d, L.rank(x)) for d in L.constant(dims, "the reduction axes").reshape(-1)})
        return L.op(name, [x], {"axes": axes, "keep_dims": bool(L.attr("keep_dims", False))})
    return lower


for _op_type, _name in {"Sum": "reduce_sum", "Mean": "reduce_mean", "Max": "reduce_max", "Min": "reduce_min",
                        "Any": "reduce_max", "All": "reduce_min"}.items():
    LOWERINGS[_op_type] = _reduction(_name)


def swap_last_two(L, x):
    perm = list(range(L.rank(x)))
    perm[-2:] = perm[-1], perm[-2]
    return L.transpose(x, perm)


def _transposing_matmul(a_flag: str, b_flag: str):
    """MatMul (transpose_a/b) and BatchMatMul (adj_x/y): rml's matmul, operands transposed first."""
    def lower(L, a, b):
        if L.attr(a_flag, False):
            a = swap_last_two(L, a)
        if L.attr(b_flag, False):
            b = swap_last_two(L, b)
        return L.op("matmul", [a, b])
    return lower


LOWERINGS.register("MatMul")(_transposing_matmul("transpose_a", "transpose_b"))
LOWERINGS.register("BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")(_transposing_matmul("adj_x", "adj_y"))


@LOWERINGS.register("BiasAdd")
def _bias_add(L, x, bias):
    if L.attr("data_format", "NHWC") == "NCHW" and L.rank(x) > 2:
        bias = L.reshape(bias, [L.shape(bias)[0]] + [1] * (L.rank(x) - 2))
    return L.op("add", [x, bias])


def channels_last(L) -> bool:
    """Whether the node's data_format (NHWC, NDHWC; NCHW, NCDHW) keeps channels last."""
    return L.attr("data_format", "NHWC").endswith("C")


def channels_first_layout(L, rank: int) -> list[int]:
    """Where the node's layout holds the N, C and spatial axes, in that order."""
    return [0, rank - 1, *range(1, rank - 1)] if channels_last(L) else list(range(rank))


def spatial(L, values: list, what: str) -> list[int]:
    """The spatial entries of a per-axis attribute in data_format order (4 entries for 2-D
    windows, 5 for 3-D); the batch and channel entries must be 1."""
    layout = channels_first_layout(L, len(values))
    if values[layout[0]] != 1 or values[layout[1]] != 1:
        raise ExportError(f"{what} over the batch or channel axis has no lowering")
    return [int(values[a]) for a in layout[2:]]


def padding_pairs(L, sizes, kernel, strides, dilations) -> list[tuple[int, int]]:
    """(before, after) per spatial axis for VALID, SAME or EXPLICIT padding."""
    mode = L.attr("padding")
    if mode == "VALID":
        return [(0, 0)] * len(sizes)
    if mode == "SAME":
        pairs = []
        for size, k, s, d in zip(sizes, kernel, strides, dilations):
            total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
            pairs.append((total // 2, total - total // 2))  # an odd total puts the extra pixel after
        return pairs
    if mode == "EXPLICIT":
        explicit = L.attr("explicit_paddings")
        rank = len(sizes) + 2
        pairs = [tuple(explicit[2 * d: 2 * d + 2]) for d in range(rank)]  # per axis, in data_format order
        layout = channels_first_layout(L, rank)
        if any(pairs[layout[0]]) or any(pairs[layout[1]]):
            raise ExportError(f"EXPLICIT padding {explicit} pads the batch or channel axis; no lowering")
        return [pairs[a] for a in layout[2:]]
    raise ExportError(f"padding {mode!r} has no lowering")


def padding(L, in_hw, kernel_hw, strides, dilations) -> list[int]:
    """rml pads [top, left, bottom, right] for a 2-D window."""
    return rml_pads(padding_pairs(L, in_hw, kernel_hw, strides, dilations))


def nchw_op(L, x, name: str, inputs: list, attrs: dict) -> Value:
    """An rml NCHW op on NHWC or NCHW data, as the node's data_format says."""
    return in_nchw(L, x, channels_first_layout(L, 4), lambda y: L.op(name, [y] + inputs, attrs))


def image_hw(L, x) -> list[int]:
    """The sizes of x's spatial axes (two for images, three for volumes)."""
    shape = L.shape(x)
    return [shape[a] for a in channels_first_layout(L, len(shape))[2:]]


@LOWERINGS.register("Conv2D")
def _conv2d(L, x, kernel):
    kh, kw, in_per_group, out = L.shape(kernel)
    channels = L.shape(x)[channels_first_layout(L, 4)[1]]
    strides = spatial(L, L.attr("strides"), "a stride")
    dilations = spatial(L, L.attr("dilations", [1, 1, 1, 1]), "a dilation")
    pads = padding(L, image_hw(L, x), (kh, kw), strides, dilations)
    attrs = {"strides": strides, "pads": pads, "dilations": dilations, "groups": channels // in_per_group}
    return nchw_op(L, x, "conv2d", [L.transpose(kernel, [3, 2, 0, 1])], attrs)  # HWIO -> OIHW


@LOWERINGS.register("Conv2DBackpropInput", "Conv3DBackpropInputV2")
def _conv_transpose(L, sizes, kernel, gradient):
    """Conv2DTranspose / Conv3DTranspose (Keras, tf.nn.conv2d_transpose/conv3d_transpose):
    the gradient of the forward conv from an image of `sizes` to `gradient`, as a
    transposed convolution. The forward conv's padding (TensorFlow's rule on the result's
    size) becomes dilation (k - 1) - before, and whatever makes the result `sizes` long after."""
    rank = L.rank(gradient)
    window = L.shape(kernel)[:rank - 2]
    layout = channels_first_layout(L, rank)
    sizes = [int(v) for v in L.constant(sizes, "the output sizes")]
    result = [sizes[a] for a in layout[2:]]
    strides = spatial(L, L.attr("strides"), "a stride")
    dilations = spatial(L, L.attr("dilations", [1] * rank), "a dilation")
    forward = padding_pairs(L, result, window, strides, dilations)
    pads = []
    for size, (before, _), k, s, d, g in zip(result, forward, window, strides, dilations, image_hw(L, gradient)):
        span = d * (k - 1)
        pads.append((span - before, size + span - (span - before) - (g - 1) * s - 1))
    # (k..., result, gradient) -> (gradient, result, k...)
    kernel_io = L.transpose(kernel, [rank - 1, rank - 2, *range(rank - 2)])
    return in_nchw(L, gradient, layout, lambda y: transposed_convolution(L, y, kernel_io, strides, pads, dilations, 1))


@LOWERINGS.register("DepthwiseConv2dNative")
def _depthwise_conv2d(L, x, kernel):
    kh, kw, channels, multiplier = L.shape(kernel)
    strides = spatial(L, L.attr("strides"), "a stride")
    dilations = spatial(L, L.attr("dilations", [1, 1, 1, 1]), "a dilation")
    pads = padding(L, image_hw(L, x), (kh, kw), strides, dilations)
    # Output channel c * multiplier + m reads channel c: OIHW [C * M, 1, kh, kw], groups C.
    weight = L.transpose(L.reshape(kernel, [kh, kw, 1, channels * multiplier]), [3, 2, 0, 1])
    attrs = {"strides": strides, "pads": pads, "dilations": dilations, "groups": channels}
    return nchw_op(L, x, "conv2d", [weight], attrs)


def _pool(name):
    def lower(L, x):
        kernel = spatial(L, L.attr("ksize"), "a pooling window")
        strides = spatial(L, L.attr("strides"), "a pooling stride")
        attrs = {"kernel": kernel, "strides": strides, "pads": padding(L, image_hw(L, x), kernel, strides, (1, 1))}
        if name == "avg_pool2d":
            attrs["count_include_pad"] = False  # TF averages over the real inputs only
        return nchw_op(L, x, name, [], attrs)
    return lower


LOWERINGS["MaxPool"] = _pool("max_pool2d")
LOWERINGS["AvgPool"] = _pool("avg_pool2d")


@LOWERINGS.register("Conv3D")
def _conv3d(L, x, kernel):
    kd, kh, kw, in_per_group, _ = L.shape(kernel)
    channels = L.shape(x)[channels_first_layout(L, 5)[1]]
    strides = spatial(L, L.attr("strides"), "a stride")
    dilations = spatial(L, L.attr("dilations", [1] * 5), "a dilation")
    pairs = padding_pairs(L, image_hw(L, x), (kd, kh, kw), strides, dilations)
    weight = L.transpose(kernel, [4, 3, 0, 1, 2])  # DHWIO -> OIDHW
    return in_nchw(L, x, channels_first_layout(L, 5),
                   lambda y: conv3d(L, y, weight, strides, pairs, dilations, channels // in_per_group))


def _pool3d(name: str):
    def lower(L, x):
        kernel = spatial(L, L.attr("ksize"), "a pooling window")
        strides = spatial(L, L.attr("strides"), "a pooling stride")
        pairs = padding_pairs(L, image_hw(L, x), kernel, strides, (1, 1, 1))
        # TF averages over the real inputs only
        return in_nchw(L, x, channels_first_layout(L, 5), lambda y: pool3d(L, y, name, kernel, strides, pairs))
    return lower


LOWERINGS["MaxPool3D"] = _pool3d("max_pool2d")
LOWERINGS["AvgPool3D"] = _pool3d("avg_pool2d")


@LOWERINGS.register("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def _fused_batch_norm(L, x, scale, offset, mean, variance):
    if L.attr("is_training", True):
        raise ExportError("is_training=True (batch statistics) has no lowering")
    nchw = L.attr("data_format", "NHWC") == "NCHW"
    per_channel = [L.shape(x)[1]] + [1] * (L.rank(x) - 2) if nchw else None
    y = batch_norm(L, x, scale, offset, mean, variance, L.attr("epsilon"), per_channel)
    return (y,) + (None,) * (len(L.graph.get_operation_by_name(L.node.name).outputs) - 1)


@LOWERINGS.register("TopKV2")
def _top_k(L, x, k):
    if not L.attr("sorted", True):
        raise ExportError("sorted=False (an unspecified order) has no lowering")
    return top_k(L, x, L.constant(k, "k"))


def _arg(largest: bool):
    def lower(L, x, dim):
        rank = L.rank(x)
        d = axis(L.constant(dim, "the axis"), rank)
        perm = [i for i in range(rank) if i != d] + [d]
        y = L.transpose(x, perm)
        if not largest:
            y = L.op("neg", [y])
        _, indices = top_k(L, y, 1)  # ties: the lowest index, as TF
        return L.reshape(indices, L.shape(indices)[:-1])
    return lower


LOWERINGS["ArgMax"] = _arg(largest=True)
LOWERINGS["ArgMin"] = _arg(largest=False)


# --- the walk ---------------------------------------------------------------------------
def tensor_key(ref: str) -> str:
    """A NodeDef input reference ("node" or "node:1") as "node:i"."""
    return ref if ":" in ref else ref + ":0"


def data_inputs(node) -> list[str]:
    return [i for i in node.input if not i.startswith("^")]


def topological_order(nodes: dict, outputs: list[str]) -> list:
    """The nodes the outputs depend on through data edges, each after its inputs
    (a GraphDef need not list them in order)."""
    order, state = [], {}
    for root in outputs:
        stack = [(root, False)]
        while stack:
            name, expanded = stack.pop()
            if expanded:
                if state[name] != "done":
                    state[name] = "done"
                    order.append(nodes[name])
                continue
            if state.get(name) == "done":
                continue
            if state.get(name) == "open":
                raise ExportError(f"the graph has a cycle through node {name}")
            state[name] = "open"
            stack.append((name, True))
            for ref in reversed(data_inputs(nodes[name])):
                source = tensor_key(ref).rsplit(":", 1)[0]
                if state.get(source) != "done":
                    stack.append((source, False))
    return order


def _check_shapes(L, node, results: tuple):
    op = L.graph.get_operation_by_name(node.name)
    for i, (got, tensor) in enumerate(zip(results, op.outputs)):
        if got is None or isinstance(got, TensorList) or tensor.shape.rank is None:
            continue
        lowered, recorded = L.shape(got), tensor.shape.as_list()
        if len(lowered) != len(recorded) or any(w is not None and g != w for g, w in zip(lowered, recorded)):
            raise shape_mismatch(f"TensorFlow op '{node.op}'", lowered, "TensorFlow's recorded shape", recorded,
                                 f"node {node.name}, output {i}")


def _is_stateful(L, node) -> bool:
    return L.graph.get_operation_by_name(node.name).op_def.is_stateful


# Ops that only relay out their first input: folding them keeps a variable's name.
RELAYOUT_OPS = ("Reshape", "Squeeze", "ExpandDims", "Transpose")


def lower_node(L, node):
    """What `node` becomes: a tuple with one entry per output."""
    if node.op == "Const":
        return (tf.make_ndarray(node.attr["value"].tensor),)
    inputs = [L.env[tensor_key(ref)] for ref in data_inputs(node)]
    # Identities pass a constant through as the same array, so it keeps its name.
    foldable = node.op not in PASS_THROUGH_OPS and node.op not in TENSOR_LISTS and not _is_stateful(L, node)
    if inputs and foldable and all(isinstance(x, np.ndarray) for x in inputs):
        # Every data input is constant: run the op in TensorFlow itself.
        results = L.fold(node, {tensor_key(ref): x for ref, x in zip(data_inputs(node), inputs)})
        if node.op in RELAYOUT_OPS:
            L.name_like(results[0], inputs[0])
        return results
    lower = _while if node.op in LOOPS else TENSOR_LISTS.get(node.op) or LOWERINGS.get(node.op)
    if lower is None:
        raise ExportError(f"TensorFlow op '{node.op}' has no rml lowering (node {node.name})")
    try:
        result = lower(L, *inputs)
    except ExportError as e:
        raise ExportError(f"TensorFlow op '{node.op}' (node {node.name}): {e}") from None
    return result if isinstance(result, tuple) else (result,)


def lower_nodes(L, nodes: dict, outputs: list[str], variable_names: dict[str, str]) -> list:
    """Lowers what `outputs` ("node:i" references into `nodes`, the NodeDefs of L.graph)
    need, with the placeholders already in L.env; returns the outputs' values."""
    for node in topological_order(nodes, [o.rsplit(":", 1)[0] for o in outputs]):
        if node.op == "Placeholder":
            if node.name + ":0" not in L.env:
                raise ExportError(f"placeholder {node.name} is not an input of the traced function")
            continue
        L.node = node
        results = lower_node(L, node)
        if node.op == "Const" and node.name in variable_names:
            L.names[id(results[0])] = (results[0], variable_names[node.name])
        _check_shapes(L, node, results)
        for i, r in enumerate(results):
            L.env[f"{node.name}:{i}"] = r
    return [L.env[tensor_key(o)] for o in outputs]


def lower_graph(frozen, example_inputs, variable_names: dict[str, str], input_names: list[str] | str | None = None,
                builder: Builder | None = None) -> Builder:
    """Lowers a frozen concrete function into a Builder."""
    b = builder or Builder()
    L = Lowering(b, frozen.graph)
    graph_def = frozen.graph.as_graph_def()
    L.library = graph_def.library
    L.functions = {f.signature.name: f for f in graph_def.library.function}
    placeholders = [t.op.name for t in frozen.inputs]
    if len(placeholders) != len(example_inputs):
        raise ExportError(f"the traced function has {len(placeholders)} inputs, {len(example_inputs)} examples given")
    names = names_rule.input_names(input_names, len(placeholders),
                                   lambda n: [p.removesuffix("_placeholder") for p in placeholders])
    for placeholder, name, example in zip(placeholders, names, example_inputs):
        L.env[placeholder + ":0"] = Value(b.input(name, example))
    outputs = [t.name for t in frozen.outputs]
    values = lower_nodes(L, {n.name: n for n in graph_def.node}, outputs, variable_names)
    for i, (out, value) in enumerate(zip(outputs, values)):
        name = output_name(i, len(outputs))
        try:
            b.output(name, L.value(value))
        except ExportError as e:
            raise ExportError(f"{name} ({out}): {e}") from None
    return b


# --- loops --------------------------------------------------------------------------------------
# Functional While loops (Keras RNN layers, tf.while_loop) are unrolled: the condition is
# computed at export time and the body inlined trip by trip. Their TensorArrays (TensorList
# ops on variant tensors) are Python lists of lowered elements, indexed by constants.
MAX_LOOP_TRIPS = 4096


class TensorList:
    """A TensorList's elements (lowered values or constants; None where never set)."""

    def __init__(self, items: list):
        self.items = items

    def item(self, index) -> Any:
        i = int(index)
        if not -len(self.items) <= i < len(self.items) or self.items[i] is None:
            raise ExportError(f"TensorList element {i} is read before it is set ({len(self.items)} elements)")
        return self.items[i]


def lower_function(L, name: str, args: list) -> list:
    """Inlines the library function `name` applied to `args`."""
    from tensorflow.python.framework.function_def_to_graph import function_def_to_graph
    if name not in L.functions:
        raise ExportError(f"function {name} is not in the graph's library")
    graph = function_def_to_graph(L.functions[name])
    if len(graph.inputs) != len(args):
        raise ExportError(f"function {name} takes {len(graph.inputs)} arguments, {len(args)} given")
    outer = (L.graph, L.env, L.node)
    L.graph, L.env = graph, {t.name: a for t, a in zip(graph.inputs, args)}
    try:
        nodes = {n.name: n for n in graph.as_graph_def().node}
        return lower_nodes(L, nodes, [t.name for t in graph.outputs], {})
    finally:
        L.graph, L.env, L.node = outer


def _while(L, *state):
    cond, body = L.attr("cond").name, L.attr("body").name
    state, trips = list(state), 0
    while True:
        (flag,) = lower_function(L, cond, state)
        if not isinstance(flag, np.ndarray):
            raise ExportError("the loop condition is not known at export time "
                              "(only loops with a constant trip count are unrolled)")
        if not bool(flag):
            return tuple(state)
        if trips == MAX_LOOP_TRIPS:
            raise ExportError(f"the loop runs more than {MAX_LOOP_TRIPS} trips (the unrolling limit)")
        state = lower_function(L, body, state)
        trips += 1


LOOPS = ("While", "StatelessWhile")


def _tensor_list_reserve(L, element_shape, num_elements):
    return TensorList([None] * int(L.constant(num_elements, "the number of TensorList elements")))


def _tensor_list_from_tensor(L, x, element_shape):
    shape = list(L.shape(x))
    if isinstance(x, np.ndarray):
        return TensorList(list(x))
    return TensorList([L.reshape(slice_axis(L, x, 0, i, i + 1), shape[1:]) for i in range(shape[0])])


def _tensor_list_get_item(L, items, index, element_shape):
    return items.item(L.constant(index, "a TensorList index"))


def _tensor_list_set_item(L, items, index, item):
    i = int(L.constant(index, "a TensorList index"))
    if not -len(items.items) <= i < len(items.items):
        raise ExportError(f"TensorList index {i} is out of range ({len(items.items)} elements)")
    updated = list(items.items)
    updated[i] = item
    return TensorList(updated)


def _tensor_list_stack(L, items, element_shape):
    elements = [items.item(i) for i in range(len(items.items))]
    if all(isinstance(e, np.ndarray) for e in elements):
        return np.stack(elements)
    rows = [L.reshape(L.value(e), [1, *L.shape(e)]) for e in elements]
    return rows[0] if len(rows) == 1 else L.op("concat", rows, {"axis": 0})


TENSOR_LISTS = {"TensorListReserve": _tensor_list_reserve, "TensorListFromTensor": _tensor_list_from_tensor,
                "TensorListGetItem": _tensor_list_get_item, "TensorListSetItem": _tensor_list_set_item,
                "TensorListStack": _tensor_list_stack}


def _is_keras_model(model) -> bool:
    """Whether `model` is a Keras 3 (or tf_keras) Model, without importing Keras."""
    return any(c.__name__ == "Model" and c.__module__.split(".")[0] in ("keras", "tf_keras")
               for c in type(model).__mro__)


def _traceable(model):
    """`model` as a tf.function (Keras models are called in inference mode). No
    autograph: tensor-dependent Python control flow would only become control-flow
    ops, which have no lowering anyway."""
    if hasattr(model, "get_concrete_function"):
        return model
    if _is_keras_model(model):
        return tf.function(lambda *xs: model(xs[0] if len(xs) == 1 else list(xs), training=False), autograph=False)
    return tf.function(lambda *xs: model(*xs), autograph=False)


def freeze(model, example_inputs) -> tuple:
    """(the frozen concrete function, {frozen Const node name: variable name})."""
    specs = [tf.TensorSpec(x.shape, tf.as_dtype(x.dtype)) for x in example_inputs]
    concrete = _traceable(model).get_concrete_function(*specs)
    by_handle = {id(v.handle): v.name.removesuffix(":0") for v in concrete.variables}
    # A captured variable enters the function as a placeholder; freezing turns that
    # placeholder into a Const of the same name.
    variable_names = {internal.op.name: by_handle[id(external)] for external, internal in concrete.graph.captures
                      if id(external) in by_handle}
    # Loops stay functional While ops with their bodies in the library (unrolled above).
    return convert_variables_to_constants_v2(concrete, lower_control_flow=False), variable_names


def export(model, example_inputs, input_names: list[str] | str | None = None) -> Builder:
    """Exports `model` called on `example_inputs` (a tuple of NumPy arrays) into a Builder.
    Inputs are named by rml.lowering.names' rule (input.0, … unless given, or the Keras
    Input layers' or the function's parameter names with input_names="arguments")."""
    examples = tuple(np.asarray(x) for x in example_inputs)
    frozen, variable_names = freeze(model, examples)
    names = names_rule.input_names(input_names, len(examples), lambda n: names_rule.tf_arguments(model, n))
    return lower_graph(frozen, examples, variable_names, input_names=names)
