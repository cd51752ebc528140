"""The StableHLO importer: one route from JAX, TensorFlow and PyTorch into rml.

StableHLO is the MLIR dialect all three frameworks lower to, so one importer
serves them all. `export(text, parameters, example_inputs)` parses a module's
text with the MLIR Python bindings that ship in jaxlib and walks `func.func
@main` op by op through the C++ Builder. The leading arguments of @main are
the model's parameters and become named constants; the rest are graph inputs.

Three producers make the text, each returning it with the parameter arrays
that are @main's leading arguments:

- `jax_module(fn, params, inputs)`: `jax.export.export(jax.jit(...))` of `fn`
  on the flattened parameter leaves followed by the inputs.
- `tf_module(model, inputs)`: freezes the variables, wraps the frozen function
  in `tf.function(jit_compile=True)` and asks XLA for the "stablehlo" stage
  (the weights are inlined as constants: no parameters).
- `torch_module(module, inputs)`: `torch.export`, saved and handed to
  torch-mlir's `fx` importer in a subprocess (its MLIR runtime must not share
  a process with jaxlib's or TensorFlow's), with the parameters lifted to
  leading arguments.

The producers, the text parsing and the torch-mlir worker script live in the
`rml.stablehlo` package; this module holds the op tables and the walk.

Values are rml values (`Value`) or NumPy constants in StableHLO's own element
type (f64, i64 and i1 included). An op whose operands are all NumPy constants
is computed in NumPy where an evaluator exists (loop counters, index
arithmetic, iotas); ops rml lacks (floor, ceil, sign, remainder, ...) are
allowed only there. Everything else is lowered through the Builder, which
folds constant inputs. `stablehlo.while` is unrolled (the condition must be a
constant at export time), `func.call` inlined, `stablehlo.composite` lowered
directly (`chlo.top_k`) or inlined, and every lowered value's shape is checked
against the op's result type. An op with no lowering raises `ExportError`
naming it: there is no fallback.
"""
from __future__ import annotations

import math

import numpy as np

from ._rml import Builder, Error, ExportError
from .lowering import base
from .lowering import names as names_rule
from .lowering.base import Table, Value, output_name, shape_mismatch
from .lowering.elementwise import atan2, clamp, convert, erfc, expm1, log1p, tan
from .lowering.linalg import dot_general
from .lowering.nn import top_k
from .lowering.rounding import ceil, floor, round_half_away, round_half_even, sign
from .lowering.index import flip, xla_scatter
from .lowering.windows import convolution, reduce_window_max, reduce_window_min, reduce_window_sum
from .stablehlo.parsing import (_constant_attr, _int, _ints, _kind, _mlir, _numpy_type, _pairs, _rml_dtype,
                                _to_rml_array, _type, parse)
# The producers are part of this module's API (they live in rml.stablehlo, apart from the importer).
from .stablehlo.producers import _torch_modules, jax_module, tf_module, torch_module, torch_modules  # noqa: F401

MAX_LOOP_TRIPS = 4096
# The trips of all the loops one import unrolls together (nested loops multiply theirs).
MAX_TOTAL_TRIPS = 4 * MAX_LOOP_TRIPS
# Blocks lowered inside one another (regions of while/if/case and inlined calls), and
# inlined calls among them: the walk recurses once per level, within Python's stack.
MAX_NESTING = 128
MAX_CALL_DEPTH = 64
# Elements of any one value: the Builder computes every value's example, so a result
# type past this (a typo'd or hostile shape) would exhaust memory instead of failing.
MAX_VALUE_ELEMENTS = 1 << 31


# --- the importer ---------------------------------------------------------------------------
class Env:
    """What each SSA value became, chained to the enclosing region's (regions may read
    values defined around them)."""

    def __init__(self, parent: "Env | None" = None):
        self.values, self.parent = {}, parent

    def __getitem__(self, key):
        env = self
        while env is not None:
            if key in env.values:
                return env.values[key]
            env = env.parent
        raise ExportError(f"value {key.get_name()} is used before it is defined")

    def __setitem__(self, key, value):
        self.values[key] = value


class Importer(base.Lowering):
    """One import: the builder, the module's functions, and the op being lowered."""

    def __init__(self, builder: Builder, module):
        super().__init__(builder)
        self.functions = {}
        for op in module.body.operations:
            if op.operation.name == "func.func":
                self.functions[_symbol(op.attributes["sym_name"])] = op
        self.call_depth = 0
        self.depth = 0  # blocks being lowered, one inside another
        self.trips = 0  # loop trips unrolled so far, all loops together
        self.made: dict[int, tuple[str, list]] = {}  # value -> (rml op, inputs) for the ops made here

    def op(self, name: str, inputs, attrs: dict | None = None) -> Value:
        values = [self.value(i) for i in inputs]
        out = Value(self.b.op(name, values, attrs or {}))
        self.made[int(out)] = (name, values)
        return out

    def made_by(self, x, name: str) -> list | None:
        """The inputs of the `name` op that made x here (None if another op made it)."""
        made = self.made.get(int(x)) if isinstance(x, Value) else None
        return made[1] if made is not None and made[0] == name else None

    def is_one(self, x) -> bool:
        known = self.constant(x)
        return known is not None and known.size > 0 and bool(np.all(known == 1))

    def value(self, x) -> Value:
        if isinstance(x, Value):
            return x
        return Value(self.b.constant(_to_rml_array(x)))

    def constant(self, x, element: str | None = None) -> np.ndarray | None:
        """x as a NumPy array if it is known at export time (None if it is not)."""
        if isinstance(x, Pieces):
            x = x.join(self)
        if isinstance(x, Value):
            if not self.b.is_constant(x):
                return None
            x = np.asarray(self.b.example(x))
            if element is not None:
                x = x.astype(_numpy_type(element)) if element != "i1" else x != 0
            return x
        return np.asarray(x)


def _symbol(attr) -> str:
    ir, _, _ = _mlir()
    if isinstance(attr, ir.FlatSymbolRefAttr):
        return ir.FlatSymbolRefAttr(attr).value
    return ir.StringAttr(attr).value


def _is_numpy(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic))


class Pieces:
    """A value assembled along one axis from row ranges of other values: what
    dynamic_update_slice builds step by step in an unrolled loop (writing each step's
    output into a buffer). Reading one step back is a slice of what was written, and the
    whole is one concat, made when something else reads it."""

    def __init__(self, shape, axis: int, segments):
        # segments: (start, end, value, offset) in order, covering [0, shape[axis]):
        # rows [start, end) are rows [offset, offset + end - start) of value.
        self.shape, self.axis, self.segments = tuple(shape), axis, list(segments)
        self.joined = None

    @staticmethod
    def of(I, x, shape, axis: int) -> "Pieces":
        if isinstance(x, Pieces) and x.axis == axis:
            return x
        return Pieces(shape, axis, [(0, shape[axis], _joined(I, x), 0)])

    def updated(self, begin: int, size: int, update) -> "Pieces":
        segments = []
        for start, end, value, offset in self.segments:
            if start < begin:
                segments.append((start, min(end, begin), value, offset))
            if end > begin + size:
                cut = max(start, begin + size)
                segments.append((cut, end, value, offset + cut - start))
        segments.append((begin, begin + size, update, 0))
        return Pieces(self.shape, self.axis, sorted(segments, key=lambda segment: segment[0]))

    def _rows(self, I, value, offset, count):
        if offset == 0 and count == I.shape(value)[self.axis]:
            return value
        if _is_numpy(value):  # a view: an index list would hold `count` entries, even for empty rows
            return value[(slice(None),) * self.axis + (slice(offset, offset + count),)]
        return I.op("slice", [value], {"axes": [self.axis], "starts": [offset], "ends": [offset + count]})

    def read(self, I, begin: int, size: int):
        """Rows [begin, begin + size): a slice of one segment when one covers them."""
        for start, end, value, offset in self.segments:
            if start <= begin and begin + size <= end:
                return self._rows(I, value, offset + begin - start, size)
        return None

    def join(self, I):
        if self.joined is None:
            merged = []
            for start, end, value, offset in self.segments:
                if merged and merged[-1][2] is value and merged[-1][3] + merged[-1][1] - merged[-1][0] == offset:
                    merged[-1] = (merged[-1][0], end, value, merged[-1][3])
                else:
                    merged.append((start, end, value, offset))
            parts = [self._rows(I, value, offset, end - start) for start, end, value, offset in merged]
            if len(parts) == 1:
                self.joined = parts[0]
            elif all(_is_numpy(part) for part in parts):
                self.joined = np.concatenate(parts, axis=self.axis)
            else:
                self.joined = I.op("concat", parts, {"axis": self.axis})
        return self.joined


def _joined(I, x):
    return x.join(I) if isinstance(x, Pieces) else x


# Op handlers: fn(I, op, ins) -> a value or a list of values.
LOWERINGS = Table()
# NumPy evaluators for all-constant operands: fn(op, ins) -> array or list of arrays.
EVALUATORS = Table()
# Ops rml lacks: computed only when every operand is known at export time.
FOLD_ONLY: set[str] = set()


def _np_erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _trunc_divide(a, b):
    if np.issubdtype(np.result_type(a, b), np.integer):
        q = np.abs(a) // np.where(b == 0, 1, np.abs(b))
        return np.where((a < 0) != (b < 0), -q, q)
    return a / b


def _power(a, b):
    """NumPy's power, which rejects integers to negative powers with a plain ValueError."""
    negative = np.asarray(b)[np.asarray(b) < 0]
    if np.issubdtype(np.result_type(a, b), np.integer) and negative.size:
        raise ExportError("power of integers with a negative exponent has no lowering "
                          f"(exponents {np.unique(negative)[:4].tolist()})")
    return np.power(a, b)


def _logical(bool_fn, int_fn):
    return lambda a, b: bool_fn(a, b) if a.dtype == np.bool_ else int_fn(a, b)


NP_UNARY = {
    "stablehlo.negate": np.negative, "stablehlo.abs": np.abs, "stablehlo.exponential": np.exp,
    "stablehlo.log": np.log, "stablehlo.sqrt": np.sqrt, "stablehlo.rsqrt": lambda x: 1 / np.sqrt(x),
    "stablehlo.tanh": np.tanh, "stablehlo.logistic": lambda x: 1 / (1 + np.exp(-x)), "stablehlo.sine": np.sin,
    "stablehlo.cosine": np.cos, "chlo.erf": _np_erf, "mhlo.erf": _np_erf, "chlo.erfc": lambda x: 1 - _np_erf(x),
    # rml lacks these: constants only.
    "stablehlo.floor": np.floor, "stablehlo.ceil": np.ceil, "stablehlo.round_nearest_even": np.rint,
    "stablehlo.round_nearest_afz": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), "stablehlo.sign": np.sign,
    "stablehlo.cbrt": np.cbrt, "stablehlo.exponential_minus_one": np.expm1, "stablehlo.log_plus_one": np.log1p,
    "stablehlo.tan": np.tan, "stablehlo.is_finite": np.isfinite,
    "stablehlo.not": lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x),
}
NP_BINARY = {
    "stablehlo.add": np.add, "stablehlo.subtract": np.subtract, "stablehlo.multiply": np.multiply,
    "stablehlo.divide": _trunc_divide, "stablehlo.maximum": np.maximum, "stablehlo.minimum": np.minimum,
    "stablehlo.power": _power,
    "stablehlo.and": _logical(np.logical_and, np.bitwise_and), "stablehlo.or": _logical(np.logical_or, np.bitwise_or),
    "stablehlo.xor": _logical(np.logical_xor, np.bitwise_xor),
    # rml lacks these: constants only.
    "stablehlo.remainder": np.fmod, "stablehlo.atan2": np.arctan2,
    "stablehlo.shift_left": np.left_shift, "stablehlo.shift_right_arithmetic": np.right_shift,
}
FOLD_ONLY |= {"stablehlo.cbrt", "stablehlo.remainder", "stablehlo.shift_left", "stablehlo.shift_right_arithmetic"}

for _name, _fn in NP_UNARY.items():
    EVALUATORS[_name] = (lambda fn: lambda op, ins: fn(ins[0]))(_fn)
for _name, _fn in NP_BINARY.items():
    EVALUATORS[_name] = (lambda fn: lambda op, ins: fn(ins[0], ins[1]))(_fn)

RML_UNARY = {"stablehlo.negate": "neg", "stablehlo.abs": "abs", "stablehlo.exponential": "exp", "stablehlo.log": "log",
             "stablehlo.sqrt": "sqrt", "stablehlo.rsqrt": "rsqrt", "stablehlo.tanh": "tanh",
             "stablehlo.logistic": "sigmoid", "stablehlo.sine": "sin", "stablehlo.cosine": "cos", "chlo.erf": "erf",
             "mhlo.erf": "erf"}
RML_BINARY = {"stablehlo.add": "add", "stablehlo.subtract": "sub", "stablehlo.multiply": "mul",
              "stablehlo.divide": "div", "stablehlo.maximum": "maximum", "stablehlo.minimum": "minimum",
              "stablehlo.power": "pow"}
COMPARE = {"EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge"}
NP_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
              "GE": np.greater_equal}


def _shrink(c: np.ndarray) -> np.ndarray:
    """A constant operand of a broadcasting op reduced to the slice it repeats
    (a splat to a scalar), so a broadcast constant is not stored at full size."""
    for axis in range(c.ndim):
        if c.shape[axis] > 1:
            first = c.take([0], axis=axis)
            if np.array_equal(c, np.broadcast_to(first, c.shape), equal_nan=c.dtype.kind == "f"):
                c = first
    while c.ndim and c.shape[0] == 1:
        c = c.reshape(c.shape[1:])
    return c


def _operands(I, op, ins):
    """Operands for an elementwise rml op: NumPy constants shrunk when a lowered
    operand already has the result's full shape."""
    result = _type(op.results[0])[0]
    full = any(isinstance(x, Value) and tuple(I.shape(x)) == result for x in ins)
    return [_shrink(x) if full and _is_numpy(x) else x for x in ins]


def _unary(name):
    return lambda I, op, ins: I.op(name, [ins[0]])


def _binary(name):
    return lambda I, op, ins: I.op(name, _operands(I, op, ins))


for _name, _rml in RML_UNARY.items():
    LOWERINGS[_name] = _unary(_rml)
for _name, _rml in RML_BINARY.items():
    LOWERINGS[_name] = _binary(_rml)


# Ops rml has no op for, as recipes (python/rml/lowering/); on constants the NumPy
# evaluators above run instead.
LOWERINGS.register("stablehlo.floor")(lambda I, op, ins: floor(I, ins[0]))
LOWERINGS.register("stablehlo.ceil")(lambda I, op, ins: ceil(I, ins[0]))
LOWERINGS.register("stablehlo.round_nearest_even")(lambda I, op, ins: round_half_even(I, ins[0]))
LOWERINGS.register("stablehlo.round_nearest_afz")(lambda I, op, ins: round_half_away(I, ins[0]))
LOWERINGS.register("stablehlo.sign")(lambda I, op, ins: sign(I, ins[0], nan_propagates=True))
LOWERINGS.register("stablehlo.exponential_minus_one")(lambda I, op, ins: expm1(I, ins[0]))
LOWERINGS.register("stablehlo.log_plus_one")(lambda I, op, ins: log1p(I, ins[0]))
LOWERINGS.register("stablehlo.tan")(lambda I, op, ins: tan(I, ins[0]))
LOWERINGS.register("stablehlo.atan2")(lambda I, op, ins: atan2(I, ins[0], ins[1]))
LOWERINGS.register("stablehlo.is_finite")(lambda I, op, ins: I.op("lt", [I.op("abs", [ins[0]]), np.float32(np.inf)]))


@LOWERINGS.register("stablehlo.divide")
def _divide(I, op, ins):
    """1 / (1 + exp(-x)), how JAX lowers logistic for the CPU, is rml's sigmoid (the ops
    it leaves unread are dropped when the graph is written)."""
    a, b = _operands(I, op, ins)
    if I.is_one(a) and (add := I.made_by(b, "add")) is not None:
        for one, other in (add, add[::-1]):
            exp = I.made_by(other, "exp")
            neg = I.made_by(exp[0], "neg") if exp is not None else None
            if I.is_one(one) and neg is not None and tuple(I.shape(neg[0])) == _result_shape(op):
                return I.op("sigmoid", [neg[0]])
    return I.op("div", [a, b])


def _element(value) -> str:
    return _type(value)[1]


@LOWERINGS.register("chlo.erfc")
def _erfc(I, op, ins):
    return erfc(I, ins[0])


@LOWERINGS.register("stablehlo.and", "stablehlo.or", "stablehlo.xor")
def _logical_op(I, op, ins):
    if _element(op.results[0]) != "i1":
        raise ExportError("bitwise integer ops have no rml lowering")
    name = {"stablehlo.and": "mul", "stablehlo.or": "maximum", "stablehlo.xor": "ne"}[op.operation.name]
    return I.op(name, _operands(I, op, ins))


@LOWERINGS.register("stablehlo.not")
def _not(I, op, ins):
    if _element(op.results[0]) != "i1":
        raise ExportError("bitwise integer ops have no rml lowering")
    return I.op("sub", [np.float32(1), ins[0]])


def _direction(op) -> str:
    _, stablehlo, _ = _mlir()
    return stablehlo.ComparisonDirectionAttr(op.attributes["comparison_direction"]).value


@LOWERINGS.register("stablehlo.compare")
def _compare(I, op, ins):
    return I.op(COMPARE[_direction(op)], _operands(I, op, ins))


@EVALUATORS.register("stablehlo.compare")
def _compare_np(op, ins):
    return NP_COMPARE[_direction(op)](ins[0], ins[1])


@LOWERINGS.register("stablehlo.select")
def _select(I, op, ins):
    cond, a, b = ins
    if _is_numpy(cond) and cond.all():
        return a
    if _is_numpy(cond) and not cond.any():
        return b
    return I.op("select", _operands(I, op, ins))


@EVALUATORS.register("stablehlo.select")
def _select_np(op, ins):
    return np.where(*ins)


@LOWERINGS.register("stablehlo.clamp")
def _clamp(I, op, ins):
    low, x, high = _operands(I, op, ins)
    return clamp(I, x, low, high)


@EVALUATORS.register("stablehlo.clamp")
def _clamp_np(op, ins):
    low, x, high = ins
    return np.minimum(np.maximum(x, low), high)


@LOWERINGS.register("stablehlo.convert")
def _convert(I, op, ins):
    x = ins[0]
    source, target = _kind(_element(op.operands[0])), _kind(_element(op.results[0]))
    target_element = _element(op.results[0])
    if target_element in ("f16", "bf16") and _element(op.operands[0]) not in ("f16", "bf16"):
        raise ExportError(f"convert to {target_element} has no rml lowering (rml computes in f32)")
    if target == source == "bool":
        return x
    return convert(I, x, "bool" if target == "bool" else _rml_dtype(_element(op.results[0])))


@EVALUATORS.register("stablehlo.convert")
def _convert_np(op, ins):
    target = _element(op.results[0])
    x = ins[0]
    if target == "i1":
        return x != 0
    return x.astype(_numpy_type(target))


@LOWERINGS.register("stablehlo.optimization_barrier")
def _identity(I, op, ins):
    return list(ins)


@EVALUATORS.register("stablehlo.optimization_barrier")
def _identity_np(op, ins):
    return list(ins)


# --- shapes -------------------------------------------------------------------------------
def _result_shape(op, i=0):
    return _type(op.results[i])[0]


@LOWERINGS.register("stablehlo.reshape")
def _reshape(I, op, ins):
    return I.reshape(ins[0], _result_shape(op))


@EVALUATORS.register("stablehlo.reshape")
def _reshape_np(op, ins):
    return ins[0].reshape(_result_shape(op))


@LOWERINGS.register("stablehlo.transpose")
def _transpose(I, op, ins):
    return I.transpose(ins[0], _ints(op, "permutation"))


@LOWERINGS.register("stablehlo.reverse")
def _reverse(I, op, ins):
    return flip(I, ins[0], _ints(op, "dimensions"))


@EVALUATORS.register("stablehlo.transpose")
def _transpose_np(op, ins):
    return np.transpose(ins[0], _ints(op, "permutation"))


def _placement(op, operand_shape):
    """(operand permutation, shape with the operand's axes in place) for broadcast_in_dim."""
    dims = _ints(op, "broadcast_dimensions")
    shape = _result_shape(op)
    perm = sorted(range(len(dims)), key=lambda i: dims[i])
    placed = [1] * len(shape)
    for i in perm:
        placed[dims[i]] = operand_shape[i]
    return perm, placed, shape


@LOWERINGS.register("stablehlo.broadcast_in_dim")
def _broadcast_in_dim(I, op, ins):
    perm, placed, shape = _placement(op, I.shape(ins[0]))
    y = I.reshape(I.transpose(ins[0], perm), placed)
    return y if list(placed) == list(shape) else I.op("broadcast_to", [y], {"shape": list(shape)})


@EVALUATORS.register("stablehlo.broadcast_in_dim")
def _broadcast_in_dim_np(op, ins):
    perm, placed, shape = _placement(op, ins[0].shape)
    return np.broadcast_to(np.transpose(ins[0], perm).reshape(placed), shape)


@LOWERINGS.register("stablehlo.concatenate")
def _concatenate(I, op, ins):
    pieces = [x for x in ins if int(np.prod(I.shape(x))) > 0] or ins[:1]
    return pieces[0] if len(pieces) == 1 else I.op("concat", pieces, {"axis": _int(op, "dimension")})


@EVALUATORS.register("stablehlo.concatenate")
def _concatenate_np(op, ins):
    return np.concatenate(ins, axis=_int(op, "dimension"))


@LOWERINGS.register("stablehlo.slice")
def _slice(I, op, ins):
    starts, limits = _ints(op, "start_indices"), _ints(op, "limit_indices")
    strides = _ints(op, "strides", [1] * len(starts))
    if list(starts) == [0] * len(starts) and list(limits) == list(I.shape(ins[0])) and set(strides) <= {1}:
        return ins[0]
    attrs = {"axes": list(range(len(starts))), "starts": starts, "ends": limits}
    if any(s != 1 for s in strides):
        attrs["steps"] = strides
    return I.op("slice", [ins[0]], attrs)


@EVALUATORS.register("stablehlo.slice")
def _slice_np(op, ins):
    starts, limits = _ints(op, "start_indices"), _ints(op, "limit_indices")
    strides = _ints(op, "strides", [1] * len(starts))
    return ins[0][tuple(slice(s, e, k) for s, e, k in zip(starts, limits, strides))]


@LOWERINGS.register("stablehlo.pad")
def _pad(I, op, ins):
    x, value = ins
    low, high = _ints(op, "edge_padding_low"), _ints(op, "edge_padding_high")
    if any(_ints(op, "interior_padding", [0] * len(low))):
        raise ExportError("pad with interior padding has no lowering")
    value = I.constant(value)
    if value is None:
        raise ExportError("pad with a padding value known only at run time has no lowering")
    shape = I.shape(x)
    if min(low + high) < 0:  # negative padding crops
        x = I.op("slice", [x], {"axes": list(range(len(shape))), "starts": [max(-lo, 0) for lo in low],
                                "ends": [d - max(-hi, 0) for d, hi in zip(shape, high)]})
        low, high = [max(lo, 0) for lo in low], [max(hi, 0) for hi in high]
    if not any(low + high):
        return x
    return I.op("pad", [x], {"pads": low + high, "value": float(value)})


@EVALUATORS.register("stablehlo.pad")
def _pad_np(op, ins):
    x, value = ins
    low, high = _ints(op, "edge_padding_low"), _ints(op, "edge_padding_high")
    interior = _ints(op, "interior_padding", [0] * len(low))
    for axis, step in enumerate(interior):
        if step:
            shape = list(x.shape)
            shape[axis] = max(0, (shape[axis] - 1) * (step + 1) + 1)
            spread = np.full(shape, value, x.dtype)
            index = [slice(None)] * x.ndim
            index[axis] = slice(None, None, step + 1)
            spread[tuple(index)] = x
            x = spread
    crop = tuple(slice(max(-lo, 0), x.shape[a] - max(-hi, 0)) for a, (lo, hi) in enumerate(zip(low, high)))
    x = x[crop]
    return np.pad(x, [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high)], constant_values=value)


def _iota(op):
    shape, element = _type(op.results[0])
    axis = _int(op, "iota_dimension")
    placed = [1] * len(shape)
    placed[axis] = shape[axis]
    return np.broadcast_to(np.arange(shape[axis]).reshape(placed), shape).astype(_numpy_type(element))


@EVALUATORS.register("stablehlo.iota")
def _iota_np(op, ins):
    return _iota(op)


@EVALUATORS.register("stablehlo.dynamic_iota")
def _dynamic_iota_np(op, ins):
    if list(ins[0]) != list(_result_shape(op)):
        raise ExportError("dynamic_iota's shape differs from its result type")
    return _iota(op)


@LOWERINGS.register("stablehlo.set_dimension_size")
def _set_dimension_size(I, op, ins):
    size = I.constant(ins[1])
    axis = _int(op, "dimension")
    if size is None or int(size) != I.shape(ins[0])[axis]:
        raise ExportError("set_dimension_size is lowered only when it keeps the static size")
    return ins[0]


@EVALUATORS.register("stablehlo.set_dimension_size")
def _set_dimension_size_np(op, ins):
    if int(ins[1]) != ins[0].shape[_int(op, "dimension")]:
        raise ExportError("set_dimension_size is lowered only when it keeps the static size")
    return ins[0]


def _starts(I, starts, shape, sizes) -> list[int]:
    """Constant start indices, clamped as StableHLO specifies (the slice stays inside)."""
    known = [I.constant(s) for s in starts]
    if any(s is None for s in known):
        raise ExportError("start indices known only at run time have no lowering")
    return [int(min(max(int(s), 0), dim - size)) for s, dim, size in zip(known, shape, sizes)]


@LOWERINGS.register("stablehlo.dynamic_slice")
def _dynamic_slice(I, op, ins):
    x, starts = ins[0], ins[1:]
    sizes = _ints(op, "slice_sizes")
    shape = x.shape if isinstance(x, Pieces) else I.shape(x)
    begins = _starts(I, starts, shape, sizes)
    if isinstance(x, Pieces):
        a = x.axis
        if all(sizes[d] == shape[d] for d in range(len(shape)) if d != a):
            rows = x.read(I, begins[a], sizes[a])
            if rows is not None:
                return rows
        x = x.join(I)
    if list(sizes) == list(shape):
        return x
    return I.op("slice", [x], {"axes": list(range(len(shape))), "starts": begins,
                               "ends": [b + s for b, s in zip(begins, sizes)]})


@EVALUATORS.register("stablehlo.dynamic_slice")
def _dynamic_slice_np(op, ins):
    x, sizes = ins[0], _ints(op, "slice_sizes")
    begins = [int(min(max(int(s), 0), d - n)) for s, d, n in zip(ins[1:], x.shape, sizes)]
    return x[tuple(slice(b, b + n) for b, n in zip(begins, sizes))]


@LOWERINGS.register("stablehlo.dynamic_update_slice")
def _dynamic_update_slice(I, op, ins):
    """An update of a range along one axis replaces those rows of a `Pieces` (one concat
    when read as a whole); one covering several axes partly is
    select(mask, pad(update), operand)."""
    x, update, starts = ins[0], ins[1], ins[2:]
    shape, sizes = _result_shape(op), I.shape(update)
    begins = _starts(I, starts, shape, sizes)
    partial = [a for a in range(len(shape)) if sizes[a] != shape[a]]
    if not partial:
        return update
    if len(partial) == 1:
        a = partial[0]
        return Pieces.of(I, x, shape, a).updated(begins[a], sizes[a], update)
    x = _joined(I, x)
    mask = np.zeros(shape, np.float32)
    mask[tuple(slice(b, b + s) for b, s in zip(begins, sizes))] = 1
    padded = I.op("pad", [update], {"pads": begins + [d - b - s for d, b, s in zip(shape, begins, sizes)]})
    return I.op("select", [mask, padded, x])


@EVALUATORS.register("stablehlo.dynamic_update_slice")
def _dynamic_update_slice_np(op, ins):
    x, update = np.array(ins[0]), ins[1]
    begins = [int(min(max(int(s), 0), d - n)) for s, d, n in zip(ins[2:], x.shape, update.shape)]
    x[tuple(slice(b, b + n) for b, n in zip(begins, update.shape))] = update
    return x


# --- reductions ---------------------------------------------------------------------------
REDUCERS = {"stablehlo.add": ("reduce_sum", "add", np.add), "stablehlo.maximum": ("reduce_max", "maximum", np.maximum),
            "stablehlo.minimum": ("reduce_min", "minimum", np.minimum),
            "stablehlo.multiply": (None, "mul", np.multiply),
            # On i1 (rml's f32 0/1): all is a minimum, any a maximum.
            "stablehlo.and": ("reduce_min", "minimum", np.logical_and),
            "stablehlo.or": ("reduce_max", "maximum", np.logical_or)}


def _reducer(op) -> str:
    """The name of the single binary op a reduction body applies to its two arguments."""
    block = op.regions[0].blocks[0]
    ops = list(block.operations)
    args = list(block.arguments)
    if (len(args) == 2 and len(ops) == 2 and ops[0].operation.name in REDUCERS
            and ops[1].operation.name in ("stablehlo.return", "func.return")
            and list(ops[0].operands) in (args, args[::-1]) and ops[1].operands[0] == ops[0].results[0]):
        return ops[0].operation.name
    body = "; ".join(o.operation.name for o in ops)
    raise ExportError(f"a reduction body other than one add, maximum, minimum, and or or has no lowering "
                      f"(body: {body})")


def _is_identity(I, init, reducer) -> bool:
    value = I.constant(init)
    if value is None:
        return False
    value = float(np.asarray(value, np.float64))
    return {"stablehlo.add": value == 0, "stablehlo.maximum": value == -math.inf,
            "stablehlo.minimum": value == math.inf, "stablehlo.and": value == 1,
            "stablehlo.or": value == 0}.get(reducer, False)


@LOWERINGS.register("stablehlo.reduce")
def _reduce(I, op, ins):
    if len(ins) != 2:
        raise ExportError(f"reduce of {len(ins) // 2} operands together has no lowering (one only)")
    reducer = _reducer(op)
    x, init = ins
    logical = reducer in ("stablehlo.and", "stablehlo.or")
    if REDUCERS[reducer][0] is None or logical != (_element(op.results[0]) == "i1"):
        raise ExportError(f"reduce with a {reducer} body on {_element(op.results[0])} has no lowering")
    axes = _ints(op, "dimensions")
    out = I.op(REDUCERS[reducer][0], [x], {"axes": axes}) if axes else x
    if not _is_identity(I, init, reducer):
        out = I.op(REDUCERS[reducer][1], [out, init])
    return out


@EVALUATORS.register("stablehlo.reduce")
def _reduce_np(op, ins):
    if len(ins) != 2:
        raise ExportError(f"reduce of {len(ins) // 2} operands together has no lowering (one only)")
    fn = REDUCERS[_reducer(op)][2]
    x, init = ins
    return fn(fn.reduce(x, axis=tuple(_ints(op, "dimensions"))), init)


@EVALUATORS.register("stablehlo.reduce_window")
def _reduce_window_np(op, ins):
    """On constants of any rank: the padded input's windows (dilated, strided) reduced."""
    if len(ins) != 2:
        raise ExportError("reduce_window of several operands together has no lowering")
    fn = REDUCERS[_reducer(op)][2]
    x, init = ins
    rank = x.ndim
    window, strides = _ints(op, "window_dimensions"), _ints(op, "window_strides", [1] * rank)
    pads, dilations = _pairs(op, "padding", rank), _ints(op, "window_dilations", [1] * rank)
    if any(b != 1 for b in _ints(op, "base_dilations", [1] * rank)) or any(p < 0 for pair in pads for p in pair):
        raise ExportError("reduce_window with base dilation or negative padding has no evaluation on constants")
    padded = np.pad(x, pads, constant_values=np.asarray(init).item())
    spans = [(w - 1) * d + 1 for w, d in zip(window, dilations)]
    views = np.lib.stride_tricks.sliding_window_view(padded, spans)
    views = views[tuple(slice(None, None, s) for s in strides) + tuple(slice(None, None, d) for d in dilations)]
    return fn(fn.reduce(views, axis=tuple(range(rank, 2 * rank))), init).astype(x.dtype)


def _running_sum(shape, window_dimensions, window_strides, padding, base_dilation, window_dilation) -> dict | None:
    """cumsum's attributes when a window sum is a running sum (how every producer writes a
    cumulative sum): one axis with a window of its whole length padded by length - 1 before
    it (after it: reversed), every other window 1, no strides, dilations or other padding."""
    long = [d for d, size in enumerate(window_dimensions) if size != 1]
    if len(long) != 1 or any(int(s) != 1 for s in [*window_strides, *base_dilation, *window_dilation]):
        return None
    a, n = long[0], int(shape[long[0]])
    pads = [tuple(int(p) for p in pair) for pair in padding]
    if int(window_dimensions[a]) != n or any(pads[d] != (0, 0) for d in range(len(shape)) if d != a):
        return None
    if pads[a] not in ((n - 1, 0), (0, n - 1)) or n < 2:
        return None
    return {"axis": a, "reverse": pads[a] == (0, n - 1)}


@LOWERINGS.register("stablehlo.reduce_window")
def _reduce_window(I, op, ins):
    if len(ins) != 2:
        raise ExportError("reduce_window of several operands together has no lowering")
    reducer = _reducer(op)
    x, init = ins
    rank = len(I.shape(x))
    window = dict(window_dimensions=_ints(op, "window_dimensions"),
                  window_strides=_ints(op, "window_strides", [1] * rank), padding=_pairs(op, "padding", rank),
                  base_dilation=_ints(op, "base_dilations", [1] * rank),
                  window_dilation=_ints(op, "window_dilations", [1] * rank))
    if reducer == "stablehlo.maximum":
        out = reduce_window_max(I, x, **window)
    elif reducer == "stablehlo.minimum":
        out = reduce_window_min(I, x, **window)
        return out if _is_identity(I, init, reducer) else I.op("minimum", [out, init])
    elif reducer == "stablehlo.add":
        if not _is_identity(I, init, reducer):
            raise ExportError("reduce_window add with a non-zero initial value has no lowering")
        running = _running_sum(I.shape(x), **window)
        if running is not None:
            return I.op("cumsum", [x], running)
        return reduce_window_sum(I, x, **window)
    else:
        raise ExportError(f"reduce_window with a {reducer} body has no lowering (max, min and add only)")
    return out if _is_identity(I, init, reducer) else I.op("maximum", [out, init])


# --- contraction, convolution -----------------------------------------------------------------
@LOWERINGS.register("stablehlo.dot_general")
def _dot_general_op(I, op, ins):
    _, stablehlo, _ = _mlir()
    dn = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    numbers = ((list(dn.lhs_contracting_dimensions), list(dn.rhs_contracting_dimensions)),
               (list(dn.lhs_batching_dimensions), list(dn.rhs_batching_dimensions)))
    return dot_general(I, ins[0], ins[1], numbers)


@LOWERINGS.register("stablehlo.dot")
def _dot(I, op, ins):
    a, b = ins
    return dot_general(I, a, b, (([len(I.shape(a)) - 1], [0]), ([], [])))


@LOWERINGS.register("stablehlo.convolution")
def _convolution(I, op, ins):
    _, stablehlo, _ = _mlir()
    ir, _, _ = _mlir()
    dn = stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
    spatial = len(dn.input_spatial_dimensions)
    if "window_reversal" in op.attributes and any(ir.DenseBoolArrayAttr(op.attributes["window_reversal"])):
        raise ExportError("convolution with window reversal has no lowering")
    numbers = ((dn.input_batch_dimension, dn.input_feature_dimension, *dn.input_spatial_dimensions),
               (dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension, *dn.kernel_spatial_dimensions),
               (dn.output_batch_dimension, dn.output_feature_dimension, *dn.output_spatial_dimensions))
    return convolution(I, ins[0], ins[1], window_strides=_ints(op, "window_strides", [1] * spatial),
                       padding=_pairs(op, "padding", spatial), lhs_dilation=_ints(op, "lhs_dilation", [1] * spatial),
                       rhs_dilation=_ints(op, "rhs_dilation", [1] * spatial), dimension_numbers=numbers,
                       feature_group_count=_int(op, "feature_group_count", 1),
                       batch_group_count=_int(op, "batch_group_count", 1))


# --- indexing ----------------------------------------------------------------------------------
SCATTER_COMBINE = {"stablehlo.add": "add", "stablehlo.multiply": "mul", "stablehlo.maximum": "maximum",
                   "stablehlo.minimum": "minimum"}


@LOWERINGS.register("stablehlo.scatter")
def _scatter(I, op, ins):
    """A scatter of one operand at indices known at export time, replacing (a body that
    returns the update) or combining by one add, multiply, maximum or minimum; updates whose
    index is out of bounds are skipped, as StableHLO specifies."""
    from jax import lax

    _, stablehlo, _ = _mlir()
    if len(ins) != 3:
        raise ExportError(f"scatter of {(len(ins) - 1) // 2} operands has no lowering (one operand)")
    operand, indices, updates = ins
    known = I.constant(indices)
    if known is None:
        raise ExportError("scatter with indices known only at run time has no lowering")
    block = op.regions[0].blocks[0]
    body = list(block.operations)
    if len(body) == 1 and body[0].operands[0] == block.arguments[1]:
        combine = None  # the update replaces the element
    else:
        reducer = _reducer(op)
        if reducer not in SCATTER_COMBINE:
            raise ExportError(f"scatter with a {reducer} body has no lowering")
        combine = SCATTER_COMBINE[reducer]
    dn = stablehlo.ScatterDimensionNumbers(op.attributes["scatter_dimension_numbers"])
    known = np.asarray(known)
    if dn.index_vector_dim == known.ndim:
        known = known[..., None]
    known = np.moveaxis(known, dn.index_vector_dim, -1)  # JAX keeps the index vector last
    batching = list(dn.scatter_indices_batching_dims)
    batching = [d - (d > dn.index_vector_dim) for d in batching]
    numbers = lax.ScatterDimensionNumbers(
        update_window_dims=tuple(dn.update_window_dims), inserted_window_dims=tuple(dn.inserted_window_dims),
        scatter_dims_to_operand_dims=tuple(dn.scattered_dims_to_operand_dims),
        operand_batching_dims=tuple(dn.input_batching_dims), scatter_indices_batching_dims=tuple(batching))
    return xla_scatter(I, "scatter", operand, known, updates, combine, dimension_numbers=numbers,
                       mode=lax.GatherScatterMode.FILL_OR_DROP)


@LOWERINGS.register("stablehlo.gather")
def _gather(I, op, ins):
    """Whole slices along adjacent indexed axes: the operand flattened over those axes and
    read with one rml gather, then reshaped and transposed into StableHLO's layout."""
    _, stablehlo, _ = _mlir()
    operand, indices = ins
    dn = stablehlo.GatherDimensionNumbers(op.attributes["dimension_numbers"])
    sizes = _ints(op, "slice_sizes")
    shape = list(I.shape(operand))
    index_map, collapsed = list(dn.start_index_map), list(dn.collapsed_slice_dims)
    offset_dims, vector_dim = list(dn.offset_dims), dn.index_vector_dim
    if list(dn.operand_batching_dims):
        raise ExportError("gather with batching dimensions has no lowering")
    axes = sorted(index_map)
    if not axes or axes != list(range(axes[0], axes[0] + len(axes))):
        raise ExportError("gather is lowered only for indices into adjacent axes")
    whole = all(sizes[d] == (1 if d in index_map else shape[d]) for d in range(len(shape)))
    if not whole:
        raise ExportError("gather of partial slices has no lowering (whole slices only)")
    index_shape = list(I.shape(indices))
    if vector_dim == len(index_shape):
        index_shape.append(1)
        indices = I.reshape(indices, index_shape) if isinstance(indices, Value) else np.reshape(indices, index_shape)
    batch_shape = index_shape[:vector_dim] + index_shape[vector_dim + 1:]
    first, count = axes[0], len(axes)
    known = I.constant(indices)
    if known is not None:
        # Constant indices: clamped into range, combined into one index over the flattened axes.
        known = np.moveaxis(np.asarray(known, np.int64), vector_dim, -1)
        flat = np.zeros(batch_shape, np.int64)
        for component, d in enumerate(index_map):
            stride = int(np.prod([shape[a] for a in range(d + 1, first + count)], dtype=np.int64))
            flat += np.clip(known[..., component], 0, shape[d] - 1) * stride
        ids = flat.astype(np.int32)
    elif count == 1:
        ids = I.reshape(indices, batch_shape)
    else:
        raise ExportError("gather with run-time indices into several axes has no lowering (one axis only)")
    merged = shape[:first] + [int(np.prod(shape[first:first + count], dtype=np.int64))] + shape[first + count:]
    out = I.op("gather", [I.reshape(operand, merged), ids], {"axis": first})
    # rml's layout: operand[:first] + batch + operand[first+count:]; indexed axes that
    # are not collapsed come back as size-1 axes after the batch axes.
    kept = [d for d in axes if d not in collapsed]
    labels = ([("op", d) for d in range(first)] + [("batch", i) for i in range(len(batch_shape))]
              + [("op", d) for d in kept] + [("op", d) for d in range(first + count, len(shape))])
    out = I.reshape(out, shape[:first] + batch_shape + [1] * len(kept) + shape[first + count:])
    position = {label: i for i, label in enumerate(labels)}
    offsets = iter(d for d in range(len(shape)) if d not in collapsed)
    batch = iter(range(len(batch_shape)))
    perm = [position[("op", next(offsets))] if p in offset_dims else position[("batch", next(batch))]
            for p in range(len(labels))]
    return I.transpose(out, perm)


# --- sorting ----------------------------------------------------------------------------------
def _descending(op) -> bool:
    """Whether a sort's comparator is `lhs > rhs` on its first operand."""
    block = op.regions[0].blocks[0]
    ops, args = list(block.operations), list(block.arguments)
    if len(ops) != 2 or ops[0].operation.name != "stablehlo.compare":
        return False
    direction, operands = _direction(ops[0]), list(ops[0].operands)
    return ((direction == "GT" and operands == [args[0], args[1]])
            or (direction == "LT" and operands == [args[1], args[0]])) and ops[1].operands[0] == ops[0].results[0]


@LOWERINGS.register("stablehlo.sort")
def _sort(I, op, ins):
    """A descending sort along the last axis, optionally carrying an iota: top_k of every
    element (which keeps ties in index order)."""
    x = ins[0]
    rank = len(I.shape(x))
    if _int(op, "dimension") not in (rank - 1, -1) or not _descending(op) or len(ins) > 2:
        raise ExportError("sort is lowered only as a descending sort along the last axis "
                          "(optionally carrying an iota)")
    values, indices = top_k(I, x, I.shape(x)[-1])
    if len(ins) == 1:
        return [values]
    carried = I.constant(ins[1])
    iota = np.broadcast_to(np.arange(I.shape(x)[-1]), I.shape(x))
    if carried is None or not np.array_equal(carried, iota):
        raise ExportError("sort is lowered only as a descending sort carrying an iota along the sorted axis")
    return [values, indices]


@LOWERINGS.register("chlo.top_k")
def _chlo_top_k(I, op, ins):
    return list(top_k(I, ins[0], _int(op, "k")))


# --- the walk ------------------------------------------------------------------------------------
def _check(I, op, results):
    if len(results) != len(op.results):
        raise ExportError(f"{op.operation.name}: lowered {len(results)} results, StableHLO has {len(op.results)}")
    checked = []
    for i, (value, got) in enumerate(zip(op.results, results)):
        shape, element = _type(value)
        if isinstance(got, Pieces):
            if got.shape != shape:
                raise ExportError(f"{op.operation.name}: lowered shape {got.shape} differs from StableHLO's {shape} "
                                  f"(result #{i})")
        elif isinstance(got, Value):
            if tuple(I.shape(got)) != shape:
                raise shape_mismatch(op.operation.name, I.shape(got), "StableHLO's", shape, f"result #{i}")
            if I.b.dtype(got) != _rml_dtype(element):
                raise ExportError(f"{op.operation.name}: lowered dtype {I.b.dtype(got)} differs from StableHLO's "
                                  f"{element} (result #{i})")
        else:
            got = np.asarray(got)
            if got.shape != shape:
                raise ExportError(f"{op.operation.name}: computed shape {got.shape} differs from StableHLO's "
                                  f"{shape} (result #{i})")
            got = got.astype(_numpy_type(element), copy=False)
        checked.append(got)
    return checked


# Ops that hand their operands on unread: a Pieces passes through them whole.
PASS_THROUGH = {"func.call", "stablehlo.composite", "stablehlo.while", "stablehlo.optimization_barrier"}


def _check_sizes(op):
    """Fails naming the first result with more than MAX_VALUE_ELEMENTS elements."""
    for i, value in enumerate(op.results):
        shape, _ = _type(value)
        if math.prod(shape) > MAX_VALUE_ELEMENTS:
            raise ExportError(f"result #{i} of shape {shape} has {math.prod(shape)} elements, more than the "
                              f"limit of {MAX_VALUE_ELEMENTS} for one value")


def _lower_op(I, op, env: Env) -> list:
    name = op.operation.name
    _check_sizes(op)
    ins = [env[v] for v in op.operands]
    if name in ("stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice"):
        ins = ins[:1] + [_joined(I, x) for x in ins[1:]]
    elif name not in PASS_THROUGH:
        ins = [_joined(I, x) for x in ins]
    if name in ("stablehlo.constant", "arith.constant"):
        shape, element = _type(op.results[0])
        return [_constant_attr(op.attributes["value"], element, shape)]
    if name == "func.call":
        return _call(I, _symbol(op.attributes["callee"]), ins)
    if name == "stablehlo.composite":
        return _composite(I, op, ins)
    if name == "stablehlo.while":
        return _while(I, op, ins, env)
    if name in ("stablehlo.if", "stablehlo.case"):
        return _branch(I, op, ins, env)
    if name == "stablehlo.custom_call":
        target = _symbol(op.attributes["call_target_name"])
        raise ExportError(f"StableHLO op 'stablehlo.custom_call' (call target '{target}') has no rml lowering")
    if name in EVALUATORS and all(_is_numpy(x) for x in ins):
        with np.errstate(all="ignore"):
            out = EVALUATORS[name](op, ins)
        return out if isinstance(out, list) else [out]
    if name in FOLD_ONLY:
        known = [I.constant(x, _element(v)) for x, v in zip(ins, op.operands)]
        if any(k is None for k in known):
            raise ExportError(f"StableHLO op '{name}' has no rml lowering (rml-graph lacks it; "
                              "it is computed only on constants, where it folds)")
        with np.errstate(all="ignore"):
            out = EVALUATORS[name](op, known)
        return out if isinstance(out, list) else [out]
    lower = LOWERINGS.get(name)
    if lower is None:
        raise ExportError(f"StableHLO op '{name}' has no rml lowering")
    out = lower(I, op, ins)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def lower_block(I: Importer, block, args, parent: Env | None = None) -> list:
    """Lowers a block applied to `args`; returns what its terminator returns."""
    if I.depth == MAX_NESTING:
        raise ExportError(f"regions and inlined calls nest more than {MAX_NESTING} deep")
    I.depth += 1
    try:
        return _lower_ops(I, block, args, parent)
    finally:
        I.depth -= 1


def _lower_ops(I: Importer, block, args, parent: Env | None) -> list:
    env = Env(parent)
    for argument, value in zip(block.arguments, args):
        env[argument] = value
    for op in block.operations:
        name = op.operation.name
        if name in ("func.return", "stablehlo.return"):
            return [env[v] for v in op.operands]
        try:
            results = _check(I, op, _lower_op(I, op, env))
        except ExportError as e:
            message = str(e)
            named = message.startswith(("StableHLO op", f"{name}:"))
            raise ExportError(message if named else f"{name}: {message}") from None
        except Error as e:  # the Builder's own checks
            raise ExportError(f"{name}: {e}") from None
        for value, result in zip(op.results, results):
            env[value] = result
    raise ExportError("a block without a terminator")


def _body(function, name: str):
    """The entry block of a func.func (a declaration has none)."""
    blocks = function.regions[0].blocks
    if len(blocks) == 0:
        raise ExportError(f"@{name} is a declaration without a body")
    return blocks[0]


def _call(I, callee: str, args) -> list:
    if callee not in I.functions:
        raise ExportError(f"func.call of @{callee}, which the module does not define")
    body = _body(I.functions[callee], callee)
    I.call_depth += 1
    if I.call_depth > MAX_CALL_DEPTH:
        raise ExportError(f"func.call of @{callee} nests too deeply (recursion?)")
    try:
        return lower_block(I, body, args)
    finally:
        I.call_depth -= 1


def _composite(I, op, ins) -> list:
    ir, _, _ = _mlir()
    name = ir.StringAttr(op.attributes["name"]).value
    attrs = ir.DictAttr(op.attributes["composite_attributes"]) if "composite_attributes" in op.attributes else None
    # Attributes other than chlo.top_k's (k an integer, largest a bool) are not read as
    # such: the decomposition, which is what the composite means, is inlined instead.
    if (name == "chlo.top_k" and attrs is not None and "k" in attrs and isinstance(attrs["k"], ir.IntegerAttr)
            and ("largest" not in attrs or isinstance(attrs["largest"], ir.BoolAttr))):
        largest = "largest" not in attrs or ir.BoolAttr(attrs["largest"]).value
        if largest and len(ins) == 1:
            return list(top_k(I, ins[0], ir.IntegerAttr(attrs["k"]).value))
    if name == "chlo.erf" and len(ins) == 1 and _element(op.operands[0]) == "f32":
        return [np.asarray(_np_erf(ins[0]), np.float32) if _is_numpy(ins[0]) else I.op("erf", [ins[0]])]
    return _call(I, _symbol(op.attributes["decomposition"]), ins)


def _while(I, op, ins, env) -> list:
    """Unrolled: the condition is computed at export time and the body inlined trip by trip."""
    cond, body = op.regions[0].blocks[0], op.regions[1].blocks[0]
    state, trips = list(ins), 0
    while True:
        (flag,) = lower_block(I, cond, state, env)
        known = I.constant(flag)
        if known is None:
            raise ExportError("the loop condition is not known at export time "
                              "(only loops with a constant trip count are unrolled)")
        if not bool(np.asarray(known)):
            return state
        if trips == MAX_LOOP_TRIPS:
            raise ExportError(f"the loop runs more than {MAX_LOOP_TRIPS} trips (the unrolling limit)")
        if I.trips == MAX_TOTAL_TRIPS:
            raise ExportError(f"the module's loops run more than {MAX_TOTAL_TRIPS} trips in all "
                              "(nested loops multiply their trips; the unrolling limit)")
        state = lower_block(I, body, state, env)
        trips += 1
        I.trips += 1


def _branch(I, op, ins, env) -> list:
    """stablehlo.if / case on a constant predicate or index: the chosen branch, inlined."""
    known = I.constant(ins[0])
    if known is None:
        raise ExportError("a branch chosen by a value known only at run time has no lowering")
    if op.operation.name == "stablehlo.if":
        chosen = 0 if bool(known) else 1
    else:
        chosen = int(known)
        chosen = chosen if 0 <= chosen < len(op.regions) else len(op.regions) - 1
    return lower_block(I, op.regions[chosen].blocks[0], [], env)


def _main(module):
    functions = [op for op in module.body.operations if op.operation.name == "func.func"]
    for op in functions:
        if _symbol(op.attributes["sym_name"]) == "main":
            return op
    public = [op for op in functions if "sym_visibility" not in op.attributes]
    if len(public) == 1:
        return public[0]
    raise ExportError("the StableHLO module has no func.func @main")


def _parameters(parameters) -> list[tuple[str, np.ndarray]]:
    if parameters is None:
        return []
    if isinstance(parameters, dict):
        return [(str(k), np.asarray(v)) for k, v in parameters.items()]
    items = list(parameters)
    if items and isinstance(items[0], tuple) and len(items[0]) == 2 and isinstance(items[0][0], str):
        return [(k, np.asarray(v)) for k, v in items]
    return [(f"param.{i}", np.asarray(v)) for i, v in enumerate(items)]


def _to_numpy(x) -> np.ndarray:
    if hasattr(x, "detach"):  # a torch tensor
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def export(text: str, parameters, example_inputs, input_names: list[str] | str | None = None) -> Builder:
    """Imports a StableHLO module into a Builder. @main's leading arguments are
    `parameters` (a dict name -> array, in order), which become named constants; the
    remaining arguments are graph inputs with `example_inputs` as example values, named
    input.0, … unless `input_names` lists names (a bare text has no argument names to keep;
    export_torch/jax/tf read them from the framework's model)."""
    params = _parameters(parameters)
    inputs = [_to_numpy(x) for x in example_inputs]
    names = names_rule.input_names(input_names, len(inputs), _no_argument_names)
    context, module = parse(text)
    with context:
        main = _main(module)
        block = _body(main, _symbol(main.attributes["sym_name"]))
        arguments = list(block.arguments)
        if len(arguments) != len(params) + len(inputs):
            raise ExportError(f"@main takes {len(arguments)} arguments, but {len(params)} parameters and "
                              f"{len(inputs)} inputs were given (did the producer drop an unused input?)")
        b = Builder()
        I = Importer(b, module)
        args = []
        for argument, (name, array) in zip(arguments, params):
            shape, element = _type(argument)
            if tuple(array.shape) != shape:
                raise ExportError(f"parameter {name} has shape {array.shape}, @main's argument {shape}")
            if not any(True for _ in argument.uses):
                args.append(None)  # an unused parameter is not stored
                continue
            args.append(Value(b.constant(_to_rml_array(array.astype(_numpy_type(element))), name)))
        for argument, name, x in zip(arguments[len(params):], names, inputs):
            shape, element = _type(argument)
            if tuple(x.shape) != shape:
                raise ExportError(f"input {name} has shape {x.shape}, @main's argument {shape}")
            args.append(Value(b.input(name, _to_rml_array(x))))
        outputs = lower_block(I, block, args)
        for i, out in enumerate(outputs):
            b.output(output_name(i, len(outputs)), I.value(_joined(I, out)))
    return b


# --- conveniences ---------------------------------------------------------------------------------
def _no_argument_names(count: int) -> list[str]:
    raise ExportError("a StableHLO text carries no argument names to keep; pass input_names as a list")


# Inputs are named as on the direct routes (rml.lowering.names' rule), argument names
# read from the framework's model.
def export_jax(fn, params, example_inputs, input_names: list[str] | str | None = None,
               portable: bool = True) -> Builder:
    names = names_rule.input_names(input_names, len(example_inputs), lambda n: names_rule.jax_arguments(fn, n))
    text, parameters = jax_module(fn, params, example_inputs, portable)
    return export(text, parameters, example_inputs, names)


def export_tf(model, example_inputs, input_names: list[str] | str | None = None) -> Builder:
    names = names_rule.input_names(input_names, len(example_inputs), lambda n: names_rule.tf_arguments(model, n))
    text, parameters = tf_module(model, example_inputs)
    return export(text, parameters, example_inputs, names)


def export_torch(module, example_inputs, input_names: list[str] | str | None = None) -> Builder:
    names = names_rule.input_names(input_names, len(example_inputs),
                                   lambda n: names_rule.torch_arguments(module, n))
    text, parameters = torch_module(module, example_inputs)
    return export(text, parameters, example_inputs, names)
