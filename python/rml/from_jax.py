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

from typing import Any, Callable

import jax
import numpy as np
from jax import tree_util
from jax.extend.core import Literal

from ._rml import Builder, ExportError


class Value(int):
    """An rml value id (distinguishes lowered tensors from NumPy constants)."""


class Lowering:
    """State of one export: the builder and the equation being lowered."""

    def __init__(self, builder: Builder):
        self.b = builder
        self.eqn = None

    def value(self, x) -> Value:
        """An rml value for a lowered tensor or a constant (NumPy array or scalar)."""
        if isinstance(x, Value):
            return x
        return Value(self.b.constant(np.asarray(x)))

    def op(self, name: str, inputs, attrs: dict | None = None) -> Value:
        return Value(self.b.op(name, [self.value(i) for i in inputs], attrs or {}))

    def shape(self, x) -> tuple:
        return tuple(self.b.shape(x)) if isinstance(x, Value) else np.shape(x)

    def rank(self, x) -> int:
        return len(self.shape(x))

    def reshape(self, x, shape) -> Value:
        shape = [int(d) for d in shape]
        return self.value(x) if list(self.shape(x)) == shape else self.op("reshape", [x], {"shape": shape})

    def transpose(self, x, perm) -> Value:
        perm = [int(p) for p in perm]
        return self.value(x) if perm == sorted(perm) else self.op("transpose", [x], {"perm": perm})


LOWERINGS: dict[str, Callable] = {}


def lowers(*names):
    def register(fn):
        for name in names:
            LOWERINGS[name] = fn
        return fn
    return register


# --- elementwise -------------------------------------------------------------
UNARY = {"neg": "neg", "abs": "abs", "exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh",
         "logistic": "sigmoid", "erf": "erf", "sin": "sin", "cos": "cos"}
for _prim, _name in UNARY.items():
    LOWERINGS[_prim] = (lambda name: lambda L, x, **_: L.op(name, [x]))(_name)

BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "max": "maximum", "min": "minimum", "pow": "pow",
          "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
for _prim, _name in BINARY.items():
    LOWERINGS[_prim] = (lambda name: lambda L, a, b, **_: L.op(name, [a, b]))(_name)


@lowers("erfc")
def _erfc(L, x, **_):
    return L.op("sub", [np.float32(1), L.op("erf", [x])])


@lowers("square")
def _square(L, x, **_):
    return L.op("mul", [x, x])


@lowers("integer_pow")
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


@lowers("select_n")
def _select_n(L, which, *cases):
    if len(cases) != 2:
        raise ExportError(f"select_n with {len(cases)} cases has no lowering (only a boolean choice of two)")
    return L.op("select", [which, cases[1], cases[0]])


@lowers("clamp")
def _clamp(L, low, x, high):
    return L.op("minimum", [L.op("maximum", [x, low]), high])


@lowers("convert_element_type")
def _convert(L, x, new_dtype, **_):
    source = np.dtype(L.eqn.invars[0].aval.dtype)
    target = np.dtype(new_dtype)
    if target == np.bool_:
        return L.op("ne", [x, np.zeros((), np.float32 if L.b.dtype(x) == "f32" else np.int32)])
    to = "f32" if np.issubdtype(target, np.floating) or target == np.bool_ else "i32"
    if source == np.bool_ and to == "f32":
        return L.value(x)  # rml's comparisons already give f32 0/1
    return L.value(x) if L.b.dtype(x) == to else L.op("cast", [x], {"to": to})


@lowers("copy", "copy_p", "stop_gradient", "optimization_barrier")
def _identity(L, *xs, **_):
    return xs[0] if len(xs) == 1 else list(xs)


# --- shapes -------------------------------------------------------------------
@lowers("reshape")
def _reshape(L, x, new_sizes, dimensions=None, **_):
    if dimensions is not None:
        raise ExportError("reshape with a dimension permutation has no lowering")
    return L.reshape(x, new_sizes)


@lowers("squeeze")
def _squeeze(L, x, dimensions):
    shape = L.shape(x)
    return L.reshape(x, [d for i, d in enumerate(shape) if i not in dimensions])


@lowers("expand_dims")
def _expand_dims(L, x, dimensions):
    shape = list(L.shape(x))
    for d in sorted(dimensions):
        shape.insert(d, 1)
    return L.reshape(x, shape)


@lowers("transpose")
def _transpose(L, x, permutation):
    return L.transpose(x, permutation)


@lowers("broadcast_in_dim")
def _broadcast_in_dim(L, x, shape, broadcast_dimensions, **_):
    placed = [1] * len(shape)
    for axis, size in zip(broadcast_dimensions, L.shape(x)):
        placed[axis] = size
    y = L.reshape(x, placed)
    return y if list(placed) == list(shape) else L.op("broadcast_to", [y], {"shape": [int(d) for d in shape]})


@lowers("concatenate")
def _concatenate(L, *xs, dimension):
    return L.op("concat", list(xs), {"axis": int(dimension)})


@lowers("stack")
def _stack(L, *xs, axis):
    pieces = []
    for x in xs:
        shape = list(L.shape(x))
        shape.insert(axis, 1)
        pieces.append(L.reshape(x, shape))
    return L.op("concat", pieces, {"axis": int(axis)})


@lowers("split")
def _split(L, x, sizes, axis):
    pieces, start = [], 0
    for size in sizes:
        pieces.append(L.op("slice", [x], {"axes": [int(axis)], "starts": [start], "ends": [start + int(size)]}))
        start += int(size)
    return pieces


@lowers("slice")
def _slice(L, x, start_indices, limit_indices, strides=None):
    axes = list(range(len(start_indices)))
    attrs = {"axes": axes, "starts": [int(s) for s in start_indices], "ends": [int(e) for e in limit_indices]}
    if strides is not None:
        attrs["steps"] = [int(s) for s in strides]
    return L.op("slice", [x], attrs)


@lowers("dynamic_slice")
def _dynamic_slice(L, x, *starts, slice_sizes):
    if any(isinstance(s, Value) for s in starts):
        raise ExportError("dynamic_slice with start indices known only at run time has no lowering")
    shape = L.shape(x)
    # JAX clamps each start so the slice stays inside the operand.
    begins = [int(min(max(int(np.asarray(s)), 0), dim - size)) for s, dim, size in zip(starts, shape, slice_sizes)]
    return L.op("slice", [x], {"axes": list(range(len(shape))), "starts": begins,
                               "ends": [b + int(size) for b, size in zip(begins, slice_sizes)]})


@lowers("pad")
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


# --- contraction, convolution, windows --------------------------------------------
@lowers("dot_general")
def _dot_general(L, a, b, dimension_numbers, **_):
    """transpose + reshape to [batch, M, K] @ [batch, K, N] (2-D when there is no
    batch), matmul, reshape to batch + a's free axes + b's free axes."""
    (a_contract, b_contract), (a_batch, b_batch) = dimension_numbers
    a_shape, b_shape = L.shape(a), L.shape(b)
    direct = _as_matmul(L, a, b, a_shape, b_shape, a_contract, b_contract, a_batch, b_batch)
    if direct is not None:
        return direct
    a_free = [d for d in range(len(a_shape)) if d not in a_contract and d not in a_batch]
    b_free = [d for d in range(len(b_shape)) if d not in b_contract and d not in b_batch]
    size = lambda shape, dims: int(np.prod([shape[d] for d in dims], dtype=np.int64))
    batch = [a_shape[d] for d in a_batch]
    lead = [size(a_shape, a_batch)] if a_batch else []
    m, k, n = size(a_shape, a_free), size(a_shape, a_contract), size(b_shape, b_free)
    a2 = L.reshape(L.transpose(a, list(a_batch) + a_free + list(a_contract)), lead + [m, k])
    b2 = L.reshape(L.transpose(b, list(b_batch) + list(b_contract) + b_free), lead + [k, n])
    out = L.op("matmul", [a2, b2])
    return L.reshape(out, batch + [a_shape[d] for d in a_free] + [b_shape[d] for d in b_free])


def _as_matmul(L, a, b, a_shape, b_shape, a_contract, b_contract, a_batch, b_batch):
    """rml's broadcasting matmul, without reshapes, for the layouts jnp.matmul and
    x @ W produce: a contracts its last axis and b its second to last, with equal
    leading batch axes, or with a plain 2-D operand on either side."""
    ra, rb = len(a_shape), len(b_shape)
    if list(a_contract) != [ra - 1] or ra < 1 or rb < 2 or list(b_contract) != [rb - 2]:
        return None
    batch = list(range(len(a_batch)))
    if a_batch or b_batch:  # [..., M, K] @ [..., K, N] with the same leading batch axes
        if list(a_batch) != batch or list(b_batch) != batch or ra != rb or ra != len(batch) + 2:
            return None
        return L.op("matmul", [a, b])
    if rb == 2 and ra >= 2:  # x @ W: dot_general gives a's free axes then N, as matmul does
        return L.op("matmul", [a, b])
    if ra == 2:  # W @ x, x with leading axes: matmul puts them first, dot_general after M
        product = L.op("matmul", [a, b])
        return L.transpose(product, [rb - 2] + list(range(rb - 2)) + [rb - 1])
    return None


def _inverse(perm):
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return inverse


@lowers("conv_general_dilated")
def _conv(L, x, w, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
          feature_group_count, batch_group_count, **_):
    if len(window_strides) != 2:
        raise ExportError(f"conv_general_dilated with {len(window_strides)} spatial axes has no lowering (2-D only)")
    if any(d != 1 for d in lhs_dilation):
        raise ExportError("conv_general_dilated with lhs_dilation (a transposed convolution) has no lowering")
    if batch_group_count != 1:
        raise ExportError("conv_general_dilated with batch_group_count > 1 has no lowering")
    if any(lo < 0 or hi < 0 for lo, hi in padding):
        raise ExportError("conv_general_dilated with negative padding has no lowering")
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    nchw = L.op("conv2d", [L.transpose(x, lhs_spec), L.transpose(w, rhs_spec)],
                {"strides": [int(s) for s in window_strides],
                 "pads": [int(padding[0][0]), int(padding[1][0]), int(padding[0][1]), int(padding[1][1])],
                 "dilations": [int(d) for d in rhs_dilation], "groups": int(feature_group_count)})
    return L.transpose(nchw, _inverse(out_spec))


def _window(L, x, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    """(x as NCHW, the permutation that undoes it, pool attributes) for a 2-D window on a rank-4 value."""
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
    perm = [d for d in range(4) if d not in spatial] + spatial
    attrs = {"kernel": [int(window_dimensions[d]) for d in spatial], "strides": [int(window_strides[d]) for d in spatial],
             "pads": [int(padding[spatial[0]][0]), int(padding[spatial[1]][0]),
                      int(padding[spatial[0]][1]), int(padding[spatial[1]][1])],
             "dilations": [int(window_dilation[d]) for d in spatial]}
    return L.transpose(x, perm), _inverse(perm), attrs


@lowers("reduce_window_max")
def _reduce_window_max(L, x, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    y, undo, attrs = _window(L, x, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    return L.transpose(L.op("max_pool2d", [y], attrs), undo)


@lowers("reduce_window_sum")
def _reduce_window_sum(L, x, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    """A window sum is the mean over the whole window (padding counted) times its size."""
    y, undo, attrs = _window(L, x, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    mean = L.op("avg_pool2d", [y], {**attrs, "count_include_pad": True})
    count = np.float32(attrs["kernel"][0] * attrs["kernel"][1])
    return L.transpose(L.op("mul", [mean, count]), undo)


# --- indexing ----------------------------------------------------------------------
@lowers("gather")
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


@lowers("top_k")
def _top_k(L, x, k, axis=None, **_):
    if axis is not None and axis not in (-1, L.rank(x) - 1):
        raise ExportError("top_k is lowered only along the last axis")
    values, indices = L.b.op_multi("top_k", [L.value(x)], 2, {"k": int(k)})
    return [Value(values), Value(indices)]


# --- the walk ----------------------------------------------------------------------
CALLS = {"jit": "jaxpr", "pjit": "jaxpr", "closed_call": "call_jaxpr", "core_call": "call_jaxpr",
         "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr", "custom_vjp_call_jaxpr": "fun_jaxpr",
         "remat": "jaxpr", "checkpoint": "jaxpr", "remat2": "jaxpr", "custom_lin": "jaxpr"}
MAX_SCAN_STEPS = 4096


def _is_constant(x) -> bool:
    return not isinstance(x, Value)


def _closed(sub) -> tuple[Any, list]:
    """(jaxpr, consts) of a ClosedJaxpr or a plain Jaxpr."""
    return (sub.jaxpr, list(sub.consts)) if hasattr(sub, "consts") else (sub, [])


def _read(env, var):
    if isinstance(var, Literal):
        return np.asarray(var.val, dtype=var.aval.dtype)
    return env[var]


def _check_shapes(L, eqn, results):
    for var, got in zip(eqn.outvars, results):
        want = tuple(getattr(var.aval, "shape", ()))
        if tuple(L.shape(got)) != want:
            raise ExportError(f"{eqn.primitive.name}: lowered shape {tuple(L.shape(got))} differs from the jaxpr's "
                              f"{want} (output {var})")


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


def lower_jaxpr(L: Lowering, jaxpr, consts, args) -> list:
    """Lowers `jaxpr` applied to `args` (Values or constants); returns its outputs."""
    env: dict = {}
    for var, c in zip(jaxpr.constvars, consts):
        env[var] = np.asarray(c)
    for var, a in zip(jaxpr.invars, args):
        env[var] = a
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        ins = [_read(env, v) for v in eqn.invars]
        if all(_is_constant(x) for x in ins):
            # Every input is constant: JAX computes it.
            out = eqn.primitive.bind(*ins, **eqn.params)
            results = [np.asarray(o) for o in out] if eqn.primitive.multiple_results else [np.asarray(out)]
        elif name in CALLS:
            sub, sub_consts = _closed(eqn.params[CALLS[name]])
            results = lower_jaxpr(L, sub, sub_consts, ins)
        elif name == "scan":
            results = _scan(L, ins, **eqn.params)
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


def export(fn, params, example_inputs, input_names: list[str] | None = None) -> Builder:
    """Exports `fn(params, *example_inputs)` into a Builder: leaves of `params` become
    named constants, `example_inputs` (arrays) graph inputs."""
    example_inputs = tuple(np.asarray(x) for x in example_inputs)
    closed = jax.make_jaxpr(fn)(params, *example_inputs)
    leaves = tree_util.tree_flatten_with_path(params)[0]
    if len(closed.jaxpr.invars) != len(leaves) + len(example_inputs):
        raise ExportError("the model's inputs must be arrays (pytrees of inputs are not supported)")
    b = Builder()
    L = Lowering(b)
    args = [Value(b.constant(np.asarray(leaf), parameter_name(path))) for path, leaf in leaves]
    names = input_names or [f"input.{i}" for i in range(len(example_inputs))]
    args += [Value(b.input(name, x)) for name, x in zip(names, example_inputs)]
    outputs = lower_jaxpr(L, closed.jaxpr, closed.consts, args)
    for i, out in enumerate(outputs):
        b.output("output" if len(outputs) == 1 else f"output.{i}", L.value(out))
    return b
