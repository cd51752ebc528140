"""The JAX direct exporter: jax.make_jaxpr -> rml.Builder.

`export(fn, params, example_inputs)` traces `fn(params, *inputs)` with
`jax.make_jaxpr` and lowers the jaxpr equation by equation through the C++
Builder. Parameter leaves become named constants (named by their pytree path,
"['fc0']['weight']" -> "fc0.weight"), the other arguments graph inputs. Nested
calls (jit/pjit, custom_jvp_call, custom_vjp_call, remat, closed_call) are
inlined; `scan` is unrolled, its body inlined once per step; an equation whose
inputs are all constant runs in JAX itself (`primitive.bind`) and becomes a
constant. Every lowered value's shape is checked against the jaxpr's. A
primitive with no lowering raises `ExportError` naming it: there is no fallback.
"""
from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax import tree_util
from jax.extend.core import Literal

from ._rml import Builder, ExportError
from .lowering import base
from .lowering import names as names_rule
from .lowering.base import Table, Value, output_name, shape_mismatch
from .lowering.elementwise import (acos, acosh, asin, asinh, atan, atan2, atanh, clamp, convert, cosh, erfc, expm1,
                                   log1p, sinh, tan)
from .lowering.index import descending_key, extreme_along, flip, gather_along, sort_along, xla_scatter
from .lowering.layout import running_extreme, slice_axis, split
from .lowering.linalg import dot_general
from .lowering.nn import product, top_k
from .lowering.rounding import ceil, floor, round_half_away, round_half_even, sign
from .lowering.windows import convolution, reduce_window_max, reduce_window_min, reduce_window_sum


class Lowering(base.Lowering):
    """State of one export: the builder and the equation being lowered."""

    def __init__(self, builder: Builder):
        super().__init__(builder)
        self.eqn = None


LOWERINGS = Table()


# --- elementwise -------------------------------------------------------------
UNARY = {"neg": "neg", "abs": "abs", "exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh",
         "logistic": "sigmoid", "erf": "erf", "sin": "sin", "cos": "cos"}
for _prim, _name in UNARY.items():
    LOWERINGS[_prim] = (lambda name: lambda L, x, **_: L.op(name, [x]))(_name)

BINARY = {"add": "add", "add_any": "add", "sub": "sub", "mul": "mul", "div": "div", "max": "maximum",
          "min": "minimum", "pow": "pow", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
for _prim, _name in BINARY.items():
    LOWERINGS[_prim] = (lambda name: lambda L, a, b, **_: L.op(name, [a, b]))(_name)


# Functions rml has no op for, as recipes (python/rml/lowering/).
LOWERINGS.register("floor")(lambda L, x, **_: floor(L, x))
LOWERINGS.register("ceil")(lambda L, x, **_: ceil(L, x))
LOWERINGS.register("sign")(lambda L, x, **_: sign(L, x, nan_propagates=True))
LOWERINGS.register("rev")(lambda L, x, dimensions, **_: flip(L, x, dimensions))
LOWERINGS.register("expm1")(lambda L, x, **_: expm1(L, x))
LOWERINGS.register("log1p")(lambda L, x, **_: log1p(L, x))
LOWERINGS.register("sinh")(lambda L, x, **_: sinh(L, x))
LOWERINGS.register("cosh")(lambda L, x, **_: cosh(L, x))
LOWERINGS.register("tan")(lambda L, x, **_: tan(L, x))
LOWERINGS.register("asinh")(lambda L, x, **_: asinh(L, x))
LOWERINGS.register("acosh")(lambda L, x, **_: acosh(L, x))
LOWERINGS.register("atanh")(lambda L, x, **_: atanh(L, x))
LOWERINGS.register("atan")(lambda L, x, **_: atan(L, x))
LOWERINGS.register("asin")(lambda L, x, **_: asin(L, x))
LOWERINGS.register("acos")(lambda L, x, **_: acos(L, x))
LOWERINGS.register("atan2")(lambda L, y, x, **_: atan2(L, y, x))


@LOWERINGS.register("round")
def _round(L, x, rounding_method=0, **_):
    """lax.round: halves away from zero (method 0, its default) or to even (1, jnp.round)."""
    return round_half_even(L, x) if int(rounding_method) == 1 else round_half_away(L, x)


@LOWERINGS.register("is_finite")
def _is_finite(L, x, **_):
    return L.op("lt", [L.op("abs", [x]), np.float32(np.inf)])  # NaN compares false


def _bools(L, name: str, *xs) -> Value:
    if L.eqn.outvars[0].aval.dtype != np.bool_:
        raise ExportError("bitwise ops are lowered on bools only (rml's i32 has no bit operations)")
    return L.op(name, [L.value(x) for x in xs])


LOWERINGS.register("and")(lambda L, a, b, **_: _bools(L, "mul", a, b))
LOWERINGS.register("or")(lambda L, a, b, **_: _bools(L, "maximum", a, b))
LOWERINGS.register("xor")(lambda L, a, b, **_: _bools(L, "ne", a, b))
LOWERINGS.register("not")(lambda L, x, **_: _bools(L, "eq", x, np.bool_(False)))


@LOWERINGS.register("argmax", "argmin")
def _argmax(L, x, axes, index_dtype=None, **_):
    smallest = L.eqn.primitive.name == "argmin"
    return extreme_along(L, x, int(axes[0]), False, smallest)[1]


@LOWERINGS.register("cumsum")
def _cumsum(L, x, axis, reverse=False, **_):
    return L.op("cumsum", [x], {"axis": int(axis), "reverse": bool(reverse)})


@LOWERINGS.register("cummax", "cummin")
def _running_extreme(L, x, axis, reverse=False, **_):
    op = "maximum" if L.eqn.primitive.name == "cummax" else "minimum"
    return running_extreme(L, x, int(axis), op, bool(reverse))


@LOWERINGS.register("reduce_prod")
def _reduce_prod(L, x, axes, **_):
    for a in sorted((int(a) for a in axes), reverse=True):
        x = product(L, x, a)
    return x


@LOWERINGS.register("erfc")
def _erfc(L, x, **_):
    return erfc(L, x)


@LOWERINGS.register("square")
def _square(L, x, **_):
    return L.op("mul", [x, x])


@LOWERINGS.register("integer_pow")
def _integer_pow(L, x, y, **_):
    """The same multiplications, in the same order, as JAX's own expansion."""
    if y == 0:
        return L.op("broadcast_to", [np.float32(1)], {"shape": list(L.shape(x))})
    acc, base, n = None, x, abs(y)
    while n:
        if n & 1:
            acc = base if acc is None else L.op("mul", [acc, base])
        n >>= 1
        if n:
            base = L.op("mul", [base, base])
    return L.op("reciprocal", [acc]) if y < 0 else L.value(acc)


@LOWERINGS.register("select_n")
def _select_n(L, which, *cases):
    if len(cases) != 2:
        raise ExportError(f"select_n with {len(cases)} cases has no lowering (only a boolean choice of two)")
    return L.op("select", [which, cases[1], cases[0]])


@LOWERINGS.register("clamp")
def _clamp(L, low, x, high):
    return clamp(L, x, low, high)


@LOWERINGS.register("convert_element_type")
def _convert(L, x, new_dtype, **_):
    source = np.dtype(L.eqn.invars[0].aval.dtype)
    target = np.dtype(new_dtype)
    if target == np.bool_:
        return convert(L, x, "bool")
    to = "f32" if np.issubdtype(target, np.floating) else "i32"
    if source == np.bool_ and to == "f32":
        return L.value(x)  # rml's comparisons already give f32 0/1
    return convert(L, x, to)


@LOWERINGS.register("copy", "copy_p", "stop_gradient", "optimization_barrier", "name", "device_put",
                    "sharding_constraint")
def _identity(L, *xs, **_):
    """Annotations (checkpoint names, placement, sharding) and barriers: the values themselves."""
    return list(xs) if L.eqn.primitive.multiple_results else xs[0]


# --- shapes -------------------------------------------------------------------
@LOWERINGS.register("reshape")
def _reshape(L, x, new_sizes, dimensions=None, **_):
    if dimensions is not None:
        raise ExportError("reshape with a dimension permutation has no lowering")
    return L.reshape(x, new_sizes)


@LOWERINGS.register("squeeze")
def _squeeze(L, x, dimensions):
    shape = L.shape(x)
    return L.reshape(x, [d for i, d in enumerate(shape) if i not in dimensions])


@LOWERINGS.register("expand_dims")
def _expand_dims(L, x, dimensions):
    shape = list(L.shape(x))
    for d in sorted(dimensions):
        shape.insert(d, 1)
    return L.reshape(x, shape)


@LOWERINGS.register("transpose")
def _transpose(L, x, permutation):
    return L.transpose(x, permutation)


@LOWERINGS.register("broadcast_in_dim")
def _broadcast_in_dim(L, x, shape, broadcast_dimensions, **_):
    placed = [1] * len(shape)
    for axis, size in zip(broadcast_dimensions, L.shape(x)):
        placed[axis] = size
    y = L.reshape(x, placed)
    return y if list(placed) == list(shape) else L.op("broadcast_to", [y], {"shape": [int(d) for d in shape]})


@LOWERINGS.register("concatenate")
def _concatenate(L, *xs, dimension):
    return L.op("concat", list(xs), {"axis": int(dimension)})


@LOWERINGS.register("stack")
def _stack(L, *xs, axis):
    pieces = []
    for x in xs:
        shape = list(L.shape(x))
        shape.insert(axis, 1)
        pieces.append(L.reshape(x, shape))
    return L.op("concat", pieces, {"axis": int(axis)})


@LOWERINGS.register("split")
def _split(L, x, sizes, axis):
    return split(L, x, axis, sizes)


@LOWERINGS.register("slice")
def _slice(L, x, start_indices, limit_indices, strides=None):
    axes = list(range(len(start_indices)))
    attrs = {"axes": axes, "starts": [int(s) for s in start_indices], "ends": [int(e) for e in limit_indices]}
    if strides is not None:
        attrs["steps"] = [int(s) for s in strides]
    return L.op("slice", [x], attrs)


@LOWERINGS.register("dynamic_slice")
def _dynamic_slice(L, x, *starts, slice_sizes):
    if any(isinstance(s, Value) for s in starts):
        raise ExportError("dynamic_slice with start indices known only at run time has no lowering")
    shape = L.shape(x)
    # JAX clamps each start so the slice stays inside the operand.
    begins = [int(min(max(int(np.asarray(s)), 0), dim - size)) for s, dim, size in zip(starts, shape, slice_sizes)]
    return L.op("slice", [x], {"axes": list(range(len(shape))), "starts": begins,
                               "ends": [b + int(size) for b, size in zip(begins, slice_sizes)]})


@LOWERINGS.register("pad")
def _pad(L, x, padding_value, padding_config):
    if isinstance(padding_value, Value):
        raise ExportError("pad with a padding value known only at run time has no lowering")
    if any(interior for _, _, interior in padding_config) or any(lo < 0 or hi < 0 for lo, hi, _ in padding_config):
        raise ExportError("pad with interior or negative padding has no lowering")
    pads = [int(lo) for lo, _, _ in padding_config] + [int(hi) for _, hi, _ in padding_config]
    return L.op("pad", [x], {"pads": pads, "value": float(np.asarray(padding_value))})


# --- reductions -----------------------------------------------------------------
for _prim, _name in {"reduce_sum": "reduce_sum", "reduce_max": "reduce_max", "reduce_min": "reduce_min"}.items():
    LOWERINGS[_prim] = (lambda name: lambda L, x, axes, **_: L.op(name, [x], {"axes": [int(a) for a in axes]}))(_name)


def _bool_reduce(L, name: str, x, axes) -> Value:
    """all / any: the min / max of the bools as 0 and 1."""
    y = L.op(name, [convert(L, L.value(x), "f32")], {"axes": [int(a) for a in axes]})
    return L.op("ne", [y, np.float32(0)])


LOWERINGS.register("reduce_and")(lambda L, x, axes, **_: _bool_reduce(L, "reduce_min", x, axes))
LOWERINGS.register("reduce_or")(lambda L, x, axes, **_: _bool_reduce(L, "reduce_max", x, axes))


# --- contraction, convolution, windows --------------------------------------------
@LOWERINGS.register("dot_general")
def _dot_general(L, a, b, dimension_numbers, **_):
    return dot_general(L, a, b, dimension_numbers)


@LOWERINGS.register("conv_general_dilated")
def _conv(L, x, w, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
          feature_group_count, batch_group_count, **_):
    return convolution(L, x, w, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
                       feature_group_count, batch_group_count)


LOWERINGS.register("reduce_window_max")(reduce_window_max)
LOWERINGS.register("reduce_window_min")(reduce_window_min)
LOWERINGS.register("reduce_window_sum")(reduce_window_sum)


# --- indexing ----------------------------------------------------------------------
@LOWERINGS.register("gather")
def _gather(L, operand, indices, dimension_numbers, slice_sizes, **_):
    """Whole slices along one axis (an embedding lookup): rml's gather, then the
    transpose that puts the batch and slice axes where JAX puts them."""
    dn = dimension_numbers
    shape = L.shape(operand)
    if (len(dn.collapsed_slice_dims) != 1 or tuple(dn.start_index_map) != tuple(dn.collapsed_slice_dims)
            or getattr(dn, "operand_batching_dims", ()) or L.shape(indices)[-1] != 1):
        raise ExportError("gather is lowered only for whole slices along one axis (an embedding lookup)")
    axis = dn.collapsed_slice_dims[0]
    if any(size != (1 if d == axis else shape[d]) for d, size in enumerate(slice_sizes)):
        raise ExportError("gather of partial slices has no lowering")
    ids = L.reshape(indices, L.shape(indices)[:-1])
    batch_rank = len(L.shape(indices)) - 1
    out = L.op("gather", [operand, ids], {"axis": int(axis)})
    # rml's layout: operand[:axis] + ids + operand[axis+1:]; JAX's: ids axes where not offset_dims.
    rml_axes = list(range(axis)) + [("batch", i) for i in range(batch_rank)] + list(range(axis + 1, len(shape)))
    rml_position = {key: i for i, key in enumerate(rml_axes)}
    offsets, batch, perm = iter(d for d in range(len(shape)) if d != axis), iter(range(batch_rank)), []
    for position in range(batch_rank + len(shape) - 1):
        perm.append(rml_position[next(offsets)] if position in dn.offset_dims else rml_position[("batch", next(batch))])
    return L.transpose(out, perm)


@LOWERINGS.register("sort")
def _sort(L, *operands, dimension, is_stable=False, num_keys=1, **_):
    """lax.sort (jnp.sort, argsort: the operands sorted by the first), stable."""
    if num_keys != 1:
        raise ExportError(f"sort with {num_keys} keys has no lowering (one key)")
    dimension = int(dimension) % L.rank(operands[0])
    values, indices = sort_along(L, operands[0], dimension)
    return [values] + [gather_along(L, o, dimension, indices) for o in operands[1:]]


@LOWERINGS.register("approx_top_k")
def _approx_top_k(L, x, k, reduction_dimension=-1, is_max_k=True, aggregate_to_topk=True, **_):
    """The exact top k, which approx_top_k may return."""
    if reduction_dimension not in (-1, L.rank(x) - 1):
        raise ExportError("approx_top_k is lowered only along the last axis")
    if not aggregate_to_topk:
        raise ExportError("approx_top_k with aggregate_to_topk=False (more than k candidates) has no lowering")
    if is_max_k:
        return list(top_k(L, x, k))
    _, indices = top_k(L, descending_key(L, x), k)
    return [gather_along(L, x, L.rank(x) - 1, indices), indices]


@LOWERINGS.register("dynamic_update_slice")
def _dynamic_update_slice(L, x, update, *starts, **_):
    """x with `update` written at `starts` (known at export time, clamped as JAX clamps
    them so the update fits): along each axis in turn, the part before, the updated
    middle and the part after, concatenated."""
    if any(isinstance(s, Value) for s in starts):
        raise ExportError("dynamic_update_slice with start indices known only at run time has no lowering")
    shape, sizes = L.shape(x), L.shape(update)
    begins = [int(min(max(int(np.asarray(s)), 0), dim - size)) for s, dim, size in zip(starts, shape, sizes)]

    def write(part, axis: int) -> Value:
        if axis == len(shape):
            return L.value(update)
        begin, end = begins[axis], begins[axis] + sizes[axis]
        middle = write(slice_axis(L, part, axis, begin, end) if (begin, end) != (0, shape[axis]) else part, axis + 1)
        pieces = ([slice_axis(L, part, axis, 0, begin)] if begin else []) + [middle] + \
                 ([slice_axis(L, part, axis, end, shape[axis])] if end < shape[axis] else [])
        return pieces[0] if len(pieces) == 1 else L.op("concat", pieces, {"axis": axis})
    return write(x, 0)


SCATTER_COMBINE = {"scatter": None, "scatter-add": "add", "scatter-mul": "mul", "scatter-min": "minimum",
                   "scatter-max": "maximum"}


@LOWERINGS.register(*SCATTER_COMBINE)
def _scatter(L, x, indices, updates, *, dimension_numbers, mode, indices_are_sorted=False, unique_indices=False,
             **_):
    """x.at[indices].set/add/multiply/min/max(updates) with indices known at export time."""
    name = L.eqn.primitive.name
    if isinstance(indices, Value):
        raise ExportError(f"{name} with indices known only at run time has no lowering")
    return xla_scatter(L, name, x, np.asarray(indices), updates, SCATTER_COMBINE[name],
                       dimension_numbers=dimension_numbers, mode=mode, indices_are_sorted=indices_are_sorted,
                       unique_indices=unique_indices)


@LOWERINGS.register("top_k")
def _top_k(L, x, k, axis=None, **_):
    if axis is not None and axis not in (-1, L.rank(x) - 1):
        raise ExportError("top_k is lowered only along the last axis")
    return list(top_k(L, x, k))


# --- the walk ----------------------------------------------------------------------
CALLS = {"jit": "jaxpr", "pjit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr", "call": "call_jaxpr",
         "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr", "custom_vjp_call_jaxpr": "fun_jaxpr",
         "remat": "jaxpr", "checkpoint": "jaxpr", "remat2": "jaxpr", "custom_lin": "jaxpr"}
MAX_SCAN_STEPS = 4096


def _is_constant(x) -> bool:
    return not isinstance(x, Value)


def _closed(sub) -> tuple[Any, list]:
    """(jaxpr, consts) of a ClosedJaxpr or a plain Jaxpr."""
    return (sub.jaxpr, list(sub.consts)) if hasattr(sub, "consts") else (sub, [])


def _host(x):
    """A constant as a NumPy array; PRNG keys (which have no NumPy form) stay JAX arrays.
    They may only feed folded equations: a key reaching a lowering has no rml value."""
    if jax.dtypes.issubdtype(getattr(x, "dtype", np.float32), jax.dtypes.prng_key):
        return x
    return np.asarray(x)


def _read(env, var):
    if isinstance(var, Literal):
        return np.asarray(var.val, dtype=var.aval.dtype)
    return env[var]


def _check_shapes(L, eqn, results):
    for var, got in zip(eqn.outvars, results):
        want = tuple(getattr(var.aval, "shape", ()))
        if tuple(L.shape(got)) != want:
            raise shape_mismatch(eqn.primitive.name, L.shape(got), "the jaxpr's", want, f"output {var}")


def _scan(L, args, jaxpr, length, reverse, num_consts, num_carry, **_):
    if length > MAX_SCAN_STEPS:
        raise ExportError(f"scan of {length} steps exceeds the unrolling limit of {MAX_SCAN_STEPS}")
    if length == 0:
        raise ExportError("scan of length 0 has no lowering")
    body, body_consts = _closed(jaxpr)
    consts, carry, xs = args[:num_consts], list(args[num_consts:num_consts + num_carry]), args[num_consts + num_carry:]
    steps = [None] * length
    for t in (reversed(range(length)) if reverse else range(length)):
        x_t = []
        for x in xs:
            shape = L.shape(x)
            if _is_constant(x):
                x_t.append(np.asarray(x)[t])
            else:
                piece = L.op("slice", [x], {"axes": [0], "starts": [t], "ends": [t + 1]})
                x_t.append(L.reshape(piece, shape[1:]))
        outs = lower_jaxpr(L, body, body_consts, list(consts) + carry + x_t)
        carry, steps[t] = outs[:num_carry], outs[num_carry:]
    ys = []
    for i in range(len(steps[0])):
        pieces = [L.reshape(step[i], (1,) + tuple(L.shape(step[i]))) for step in steps]
        ys.append(pieces[0] if len(pieces) == 1 else L.op("concat", pieces, {"axis": 0}))
    return carry + ys


def _known(x, what: str):
    if not _is_constant(x):
        raise ExportError(f"{what} is not known at export time (only branches and loops decided at export "
                          "time are inlined or unrolled)")
    return np.asarray(x)


def _cond(L, args, branches, **_):
    """lax.cond / switch with an index known at export time: that branch, inlined."""
    index = int(np.clip(_known(args[0], "the branch index"), 0, len(branches) - 1))
    sub, sub_consts = _closed(branches[index])
    return lower_jaxpr(L, sub, sub_consts, args[1:])


def _while(L, args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts, **_):
    """lax.while_loop with a condition known at export time on every trip: unrolled."""
    cond_consts, body_consts = args[:cond_nconsts], args[cond_nconsts:cond_nconsts + body_nconsts]
    state, trips = list(args[cond_nconsts + body_nconsts:]), 0
    cond, cond_closed = _closed(cond_jaxpr)
    body, body_closed = _closed(body_jaxpr)
    while bool(_known(lower_jaxpr(L, cond, cond_closed, list(cond_consts) + state)[0], "the loop condition")):
        if trips == MAX_SCAN_STEPS:
            raise ExportError(f"the loop runs more than {MAX_SCAN_STEPS} trips (the unrolling limit)")
        state = lower_jaxpr(L, body, body_closed, list(body_consts) + state)
        trips += 1
    return state


def lower_jaxpr(L: Lowering, jaxpr, consts, args) -> list:
    """Lowers `jaxpr` applied to `args` (Values or constants); returns its outputs."""
    env: dict = {}
    for var, c in zip(jaxpr.constvars, consts):
        env[var] = _host(c)
    for var, a in zip(jaxpr.invars, args):
        env[var] = a
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        ins = [_read(env, v) for v in eqn.invars]
        if all(_is_constant(x) for x in ins):
            # Every input is constant: JAX computes it.
            out = eqn.primitive.bind(*ins, **eqn.params)
            results = [_host(o) for o in out] if eqn.primitive.multiple_results else [_host(out)]
        elif name in CALLS:
            sub, sub_consts = _closed(eqn.params[CALLS[name]])
            results = lower_jaxpr(L, sub, sub_consts, ins)
        elif name == "scan":
            results = _scan(L, ins, **eqn.params)
        elif name == "cond":
            results = _cond(L, ins, **eqn.params)
        elif name == "while":
            results = _while(L, ins, **eqn.params)
        else:
            lower = LOWERINGS.get(name)
            if lower is None:
                raise ExportError(f"JAX primitive '{name}' has no rml lowering (equation: {eqn})")
            L.eqn = eqn
            try:
                out = lower(L, *ins, **eqn.params)
            except ExportError as e:
                raise ExportError(f"{name}: {e}") from None
            results = list(out) if eqn.primitive.multiple_results or isinstance(out, list) else [out]
        _check_shapes(L, eqn, results)
        for var, value in zip(eqn.outvars, results):
            env[var] = value
    return [_read(env, v) for v in jaxpr.outvars]


def parameter_name(path) -> str:
    """A pytree path as a dotted name: ['block']['fc1'][0] -> block.fc1.0."""
    parts = []
    for key in path:
        for attribute in ("key", "idx", "name"):
            if hasattr(key, attribute):
                parts.append(str(getattr(key, attribute)))
                break
        else:
            parts.append(str(key))
    return ".".join(parts)


def export(fn, params, example_inputs, input_names: list[str] | str | None = None) -> Builder:
    """Exports `fn(params, *example_inputs)` into a Builder: leaves of `params` become
    named constants, `example_inputs` (arrays) graph inputs, named by rml.lowering.names'
    rule (input.0, … unless given, or fn's parameter names with input_names="arguments")."""
    example_inputs = tuple(np.asarray(x) for x in example_inputs)
    closed = jax.make_jaxpr(fn)(params, *example_inputs)
    leaves = tree_util.tree_flatten_with_path(params)[0]
    if len(closed.jaxpr.invars) != len(leaves) + len(example_inputs):
        raise ExportError("the model's inputs must be arrays (pytrees of inputs are not supported)")
    b = Builder()
    L = Lowering(b)
    args = [Value(b.constant(np.asarray(leaf), parameter_name(path))) for path, leaf in leaves]
    names = names_rule.input_names(input_names, len(example_inputs), lambda n: names_rule.jax_arguments(fn, n))
    args += [Value(b.input(name, x)) for name, x in zip(names, example_inputs)]
    outputs = lower_jaxpr(L, closed.jaxpr, closed.consts, args)
    for i, out in enumerate(outputs):
        b.output(output_name(i, len(outputs)), L.value(out))
    return b
