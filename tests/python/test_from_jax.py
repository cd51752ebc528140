"""The JAX direct exporter: one test per primitive lowering, nested calls and
scan, errors by name, and a model beyond the zoo (a plain-JAX MLP with vmap)."""
import numpy as np
import pytest
import torch  # noqa: F401  (frameworks load in one order in every test process: PyTorch first)

import jax
import jax.numpy as jnp
from jax import lax

import rml
from rml.from_jax import export

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)
POS = (RNG.random((2, 3, 4)) + 0.5).astype(np.float32)
IMAGE = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)


def check(fn, *inputs, params=None, tmp_path=None):
    """Exports fn(params, *inputs); its reference evaluation (and, with tmp_path, the
    executor fused and unfused) must agree with JAX within atol 1e-5 + rtol 1e-4."""
    params = {} if params is None else params
    expected = np.asarray(jax.jit(fn)(params, *inputs))
    builder = export(fn, params, inputs)
    feeds = {f"input.{i}": x for i, x in enumerate(inputs)}
    got = builder.evaluate(feeds)["output"]
    np.testing.assert_allclose(got, expected.astype(got.dtype), atol=1e-5, rtol=1e-4)
    if tmp_path is not None:
        builder.write(str(tmp_path / "m.json"))
        model = rml.load(str(tmp_path / "m.json"))
        for fuse in (True, False):
            ran = model.run(feeds, fuse=fuse)["output"]
            np.testing.assert_allclose(ran, expected.astype(ran.dtype), atol=1e-5, rtol=1e-4)
    return builder


AWKWARD = np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.0, -0.0, 3.0, -7.0, 1e9, 8388609.0, -8388609.5, 0.49999997,
                    -0.49999997, np.inf, -np.inf, np.nan, 1e-30, 0.7], np.float32).reshape(4, 5)
UNIT = (RNG.random((2, 3, 4)) * 1.8 - 0.9).astype(np.float32)

RECIPES = {
    "floor": (jnp.floor, AWKWARD), "ceil": (jnp.ceil, AWKWARD), "round_even": (jnp.round, AWKWARD),
    "round_away": (lax.round, AWKWARD), "sign": (jnp.sign, AWKWARD), "is_finite": (jnp.isfinite, AWKWARD),
    "expm1": (jnp.expm1, X), "log1p": (jnp.log1p, POS), "sinh": (jnp.sinh, X), "cosh": (jnp.cosh, X),
    "tan": (jnp.tan, UNIT), "asinh": (jnp.arcsinh, X * 30), "acosh": (jnp.arccosh, POS + 1), "atanh": (jnp.arctanh, UNIT),
    "atan": (jnp.arctan, X * 5), "asin": (jnp.arcsin, UNIT), "acos": (jnp.arccos, UNIT),
    "atan2": (lambda x: jnp.arctan2(x, x[::-1]), X), "argmax": (lambda x: jnp.argmax(x, axis=1), X),
    "argmin": (lambda x: jnp.argmin(x, axis=-1), X), "prod": (lambda x: jnp.prod(x, axis=(0, 2)), X),
    "all": (lambda x: jnp.all(x > -0.5, axis=1), X), "any": (lambda x: jnp.any(x > 1.0, axis=(0, 2)), X),
    "reduce_window_min": (lambda x: lax.reduce_window(x, jnp.inf, lax.min, (1, 1, 3, 3), (1, 1, 2, 2), "SAME"), IMAGE),
}


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_primitives_without_an_rml_op_lower_as_recipes(name, tmp_path):
    fn, x = RECIPES[name]
    check(lambda p, v: fn(v), x, tmp_path=tmp_path)


ELEMENTWISE = {
    "neg": (jnp.negative, X), "abs": (jnp.abs, X), "exp": (jnp.exp, X), "log": (jnp.log, POS),
    "sqrt": (jnp.sqrt, POS), "rsqrt": (lax.rsqrt, POS), "tanh": (jnp.tanh, X), "logistic": (jax.nn.sigmoid, X),
    "erf": (jax.scipy.special.erf, X), "erfc": (jax.scipy.special.erfc, X), "sin": (jnp.sin, X), "cos": (jnp.cos, X),
    "square": (jnp.square, X), "integer_pow": (lambda x: x ** 3 + x ** -2 + x ** 0, POS),
    "add_sub_mul_div": (lambda x: (x + 1) * x - x / 3, X), "max_min": (lambda x: jnp.maximum(x, 0.1) + jnp.minimum(x, -0.2), X),
    "pow": (lambda x: jnp.power(x, x), POS), "clamp": (lambda x: lax.clamp(-0.5, x, 0.5), X),
    "compares": (lambda x: (x > 0) + (x >= 0.5) * 1.0 + (x < 0) + (x <= 1) + (x == x) + (x != 0), X),
    "select_n": (lambda x: jnp.where(x > 0, x, 0.1 * x), X), "relu": (jax.nn.relu, X),
    "gelu_exact": (lambda x: jax.nn.gelu(x, approximate=False), X), "gelu_tanh": (jax.nn.gelu, X),
    "softmax": (lambda x: jax.nn.softmax(x, axis=1), X), "leaky_relu": (lambda x: jax.nn.leaky_relu(x, 0.2), X),
    "convert": (lambda x: (x * 4).astype(jnp.int32).astype(jnp.float32) + (x > 0).astype(jnp.int32), X),
    "stop_gradient": (lambda x: lax.stop_gradient(x) * 2, X),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_lowering(name):
    fn, x = ELEMENTWISE[name]
    check(lambda p, x: fn(x), x)


SHAPES = {
    "reshape": lambda x: x.reshape(6, 4), "squeeze": lambda x: x[:, :1].squeeze(1), "expand_dims": lambda x: x[:, None],
    "transpose": lambda x: x.transpose(2, 0, 1), "broadcast_in_dim": lambda x: jnp.broadcast_to(x[:, :1], (2, 3, 4)) + x,
    "concatenate": lambda x: jnp.concatenate([x, 2 * x], axis=-1), "stack": lambda x: jnp.stack([x, -x], 1),
    "split": lambda x: sum(p.sum(-1) for p in jnp.split(x, [1, 3], axis=-1)), "slice": lambda x: x[:, 1:, ::2],
    "dynamic_slice": lambda x: lax.dynamic_slice(x, (0, 2, 1), (2, 1, 2)), "pad": lambda x: jnp.pad(x, ((0, 1), (2, 0), (1, 1)), constant_values=0.5),
    "reduce_sum": lambda x: x.sum((0, 2)), "reduce_max": lambda x: x.max(1), "reduce_min": lambda x: x.min(-1),
    "mean": lambda x: x.mean(-1, keepdims=True), "top_k_values": lambda x: lax.top_k(x, 2)[0],
    "top_k_indices": lambda x: lax.top_k(x, 2)[1].astype(jnp.float32), "iota": lambda x: x + jnp.arange(4.0),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shape_and_reduction_lowering(name):
    check(lambda p, x: SHAPES[name](x), X)


def test_dot_general_with_batch_and_contraction_axes_anywhere(tmp_path):
    a = RNG.standard_normal((3, 4, 2, 5)).astype(np.float32)
    b = RNG.standard_normal((5, 3, 6)).astype(np.float32)
    # batch axis 0 / 1, contraction 3 / 0, free axes in the middle
    fn = lambda p, a, b: lax.dot_general(a, b, (((3,), (0,)), ((0,), (1,))))
    check(fn, a, b, tmp_path=tmp_path)
    check(lambda p, x: jnp.einsum("bij,jk->bik", x, p["w"]), X, params={"w": RNG.standard_normal((4, 3)).astype(np.float32)})


def test_convolution_in_any_layout_and_window_reductions(tmp_path):
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    nchw = lambda p, x: lax.conv_general_dilated(x, p["w"], (2, 1), [(1, 1), (0, 2)], rhs_dilation=(1, 2),
                                                 dimension_numbers=("NCHW", "OIHW", "NCHW"))
    check(nchw, IMAGE, params={"w": w}, tmp_path=tmp_path)
    nhwc = lambda p, x: lax.conv_general_dilated(x, p["w"], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    check(nhwc, IMAGE.transpose(0, 2, 3, 1), params={"w": w.transpose(2, 3, 1, 0)}, tmp_path=tmp_path)
    grouped = lambda p, x: lax.conv_general_dilated(x, p["w"], (1, 1), "VALID", feature_group_count=3)
    check(grouped, IMAGE, params={"w": RNG.standard_normal((6, 1, 2, 2)).astype(np.float32)})
    # One spatial axis: the 2-D convolution over a trailing unit axis.
    nwc = lambda p, x: lax.conv_general_dilated(x, p["w"], (2,), [(2, 1)], rhs_dilation=(2,),
                                                dimension_numbers=("NWC", "WIO", "NWC"), feature_group_count=3)
    check(nwc, IMAGE[:, :, 0, :].transpose(0, 2, 1), params={"w": RNG.standard_normal((3, 1, 6)).astype(np.float32)},
          tmp_path=tmp_path)
    max_nchw = lambda p, x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 3, 3), (1, 1, 2, 2), ((0, 0), (0, 0), (1, 1), (1, 1)))
    check(max_nchw, IMAGE, tmp_path=tmp_path)
    max_nhwc = lambda p, x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    check(max_nhwc, IMAGE.transpose(0, 2, 3, 1))
    window_sum = lambda p, x: lax.reduce_window(x, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 1, 1), "SAME")
    check(window_sum, IMAGE, tmp_path=tmp_path)


def test_gather_of_whole_slices_along_one_axis(tmp_path):
    table = RNG.standard_normal((11, 4)).astype(np.float32)
    ids = RNG.integers(0, 11, (2, 5)).astype(np.int32)
    check(lambda p, ids: p["table"][ids], ids, params={"table": table}, tmp_path=tmp_path)
    cols = RNG.integers(0, 4, (3,)).astype(np.int32)
    check(lambda p, ids: p["table"][:, ids], cols, params={"table": table})
    check(lambda p, ids: jnp.take(p["table"], ids, axis=1), cols, params={"table": table})


def test_nested_calls_are_inlined():
    @jax.custom_vjp
    def clipped(x):
        return jnp.clip(x, -1, 1)
    clipped.defvjp(lambda x: (clipped(x), None), lambda _, g: (g,))

    inner = jax.jit(lambda x: jnp.tanh(x) * 2)
    fn = lambda p, x: jax.checkpoint(lambda y: inner(y) + clipped(y))(x) + jax.nn.relu(x)
    check(fn, X)


def test_scan_unrolls_forward_and_reverse(tmp_path):
    w = RNG.standard_normal((4, 4)).astype(np.float32) * 0.5

    def fn(p, x, reverse):
        def step(h, x_t):
            h = jnp.tanh(h @ p["w"] + x_t)
            return h, h * 2
        last, ys = lax.scan(step, jnp.zeros((3, 4)), x, reverse=reverse)
        return ys.sum(0) + last

    seq = RNG.standard_normal((5, 3, 4)).astype(np.float32)
    for reverse in (False, True):
        builder = check(lambda p, x: fn(p, x, reverse), seq, params={"w": w}, tmp_path=tmp_path)
        assert builder.node_count > 5 * 3  # unrolled: every step has its own nodes


def test_parameters_are_named_by_their_pytree_path(tmp_path):
    params = {"layer": [{"w": np.ones((4, 2), np.float32)}, {"b": np.arange(2, dtype=np.float32)}]}
    builder = export(lambda p, x: jnp.tanh(x @ p["layer"][0]["w"]) + p["layer"][1]["b"], params, (X,))
    builder.write(str(tmp_path / "named.json"))
    # the bias is broadcast to the product's rank at export time; it keeps its name
    assert set(rml.read_tensors(str(tmp_path / "named.safetensors"))) == {"layer.0.w", "layer.1.b.reshape"}


def test_an_unsupported_primitive_fails_by_name():
    with pytest.raises(rml.ExportError, match="JAX primitive 'rem' has no rml lowering"):
        export(lambda p, x: jnp.fmod(x, 0.7), {}, (X,))
    with pytest.raises(rml.ExportError, match="dynamic_slice with start indices known only at run time"):
        export(lambda p, x, i: lax.dynamic_slice(x, (i, 0, 0), (1, 3, 4)), {}, (X, np.int32(1)))


def test_a_plain_jax_mlp_with_vmap_beyond_the_zoo(tmp_path):
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    params = [{"w": jax.random.normal(k, (a, b)) / np.sqrt(a), "b": jnp.full((b,), 0.1)}
              for k, (a, b) in zip(keys, [(6, 16), (16, 16), (16, 3)])]

    def one_example(params, x):  # written for a single example, batched by vmap
        for i, layer in enumerate(params):
            x = x @ layer["w"] + layer["b"]
            x = jax.nn.gelu(x) if i + 1 < len(params) else jax.nn.log_softmax(x)
        return x

    batched = jax.vmap(one_example, in_axes=(None, 0))
    check(batched, RNG.standard_normal((7, 6)).astype(np.float32), params=params, tmp_path=tmp_path)


def test_the_export_command_line_takes_a_jax_factory(tmp_path, run_rml):
    import subprocess
    import sys

    (tmp_path / "factories.py").write_text(
        "import jax.numpy as jnp\n"
        "import numpy as np\n"
        "def mlp():\n"
        "    params = {'w': np.ones((12, 4), np.float32) / 12}\n"
        "    return (lambda p, x: jnp.tanh(x @ p['w'])), params\n")
    out = tmp_path / "mlp.json"
    result = subprocess.run([sys.executable, "-m", "rml.export", "jax", "factories:mlp", "--example-inputs", "f32:2x12",
                             "-o", str(out)], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "input.0: f32[2, 12]" in run_rml("info", out).stdout


def test_bool_logic_cond_and_while_lower(tmp_path):
    """and/or/xor/not on bools; lax.cond on a predicate known at export time inlines its
    branch; lax.while_loop whose condition folds unrolls."""
    def logic(p, x):
        a, b = x > 0, x < 0.5
        return jnp.where((a & b) | ~(a ^ b), x, -x)

    def branch(p, x):
        return lax.cond(x.shape[0] > 1, lambda v: v * 2.0, lambda v: v - 1.0, x)

    def loop(p, x):
        return lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * 0.5 + 1.0), (0, x))[1]

    for fn in (logic, branch, loop):
        check(fn, X, tmp_path=tmp_path)


def test_a_while_loop_whose_condition_reads_the_input_fails_by_name():
    def until_large(p, x):
        return lax.while_loop(lambda v: jnp.sum(v) < 100.0, lambda v: v * 2.0, x)

    with pytest.raises(rml.ExportError, match="the loop condition is not known at export time"):
        export(until_large, {}, (POS,))
    with pytest.raises(rml.ExportError, match="branch index is not known at export time"):
        export(lambda p, x: lax.cond(jnp.sum(x) > 0, lambda v: v, lambda v: -v, x), {}, (X,))


@pytest.mark.parametrize("strides, padding", [((2, 2), "SAME"), ((2, 3), "VALID"), ((1, 1), ((2, 1), (0, 2)))])
def test_transposed_convolution_is_a_convolution_over_the_dilated_input(strides, padding, tmp_path):
    kernel = RNG.standard_normal((3, 2, 4, 5)).astype(np.float32)  # HWIO
    image = RNG.standard_normal((2, 6, 5, 4)).astype(np.float32)   # NHWC
    check(lambda p, x: lax.conv_transpose(x, p["w"], strides, padding, dimension_numbers=("NHWC", "HWIO", "NHWC")),
          image, params={"w": kernel}, tmp_path=tmp_path)


VOLUME = RNG.standard_normal((2, 5, 6, 7, 3)).astype(np.float32)  # N, D, H, W, C
VOLUMES = {
    "conv_ndhwc_same_strided": (lambda p, x: lax.conv_general_dilated(
        x, p["w"], (2, 1, 2), "SAME", rhs_dilation=(1, 2, 1), dimension_numbers=("NDHWC", "DHWIO", "NDHWC")),
        (2, 3, 2, 3, 4)),
    "conv_ncdhw_grouped": (lambda p, x: lax.conv_general_dilated(
        x.transpose(0, 4, 1, 2, 3), p["w"], (1, 1, 1), [(1, 0), (0, 0), (2, 1)], feature_group_count=3), (6, 1, 2, 2, 3)),
    "conv_transpose": (lambda p, x: lax.conv_transpose(x, p["w"], (1, 2, 2), "SAME",
                                                       dimension_numbers=("NDHWC", "DHWIO", "NDHWC")), (2, 3, 3, 3, 2)),
    "max_window": (lambda p, x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 2, 2, 1), (1, 2, 1, 2, 1),
                                                  ((0, 0), (1, 1), (0, 1), (1, 0), (0, 0))), None),
    "max_window_dilated": (lambda p, x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1, 1), (1, 1, 1, 1, 1),
                                                          "VALID", window_dilation=(1, 2, 1, 1, 1)), None),
    "window_sum": (lambda p, x: lax.reduce_window(x, 0.0, lax.add, (1, 2, 3, 2, 1), (1, 1, 2, 1, 1), "SAME"), None),
}


@pytest.mark.parametrize("name", sorted(VOLUMES))
def test_volumes_through_2d_windows(name, tmp_path):
    fn, kernel = VOLUMES[name]
    params = {} if kernel is None else {"w": RNG.standard_normal(kernel).astype(np.float32)}
    check(fn, VOLUME, params=params, tmp_path=tmp_path)


def _values_and_indices(pair):
    values, indices = pair
    return values * 100.0 + indices.astype(values.dtype)


ROWS = np.array([[3.0, -1.0, np.nan, 2.0, -1.0, 0.5], [1.0, 1.0, -np.inf, 7.0, 0.0, -3.0]], np.float32)
SORTS = {
    "sort": lambda p, x: jnp.sort(x),
    "sort_axis0": lambda p, x: jnp.sort(x, axis=0),
    "argsort_stable": lambda p, x: jnp.argsort(x, stable=True),
    "sort_two_operands": lambda p, x: lax.sort((x, x * 10.0), dimension=1, num_keys=1)[1],
    "approx_max_k": lambda p, x: _values_and_indices(lax.approx_max_k(jnp.nan_to_num(x), 3)),
    "approx_min_k": lambda p, x: _values_and_indices(lax.approx_min_k(jnp.nan_to_num(x), 2)),
    "dynamic_update_slice": lambda p, x: lax.dynamic_update_slice(x, jnp.ones((1, 2), x.dtype), (1, 3)),
    "dynamic_update_slice_clamped": lambda p, x: lax.dynamic_update_slice(x, x[:, :2] * 2, (0, 5)),
    "dynamic_update_slice_whole_axis": lambda p, x: lax.dynamic_update_slice(x, -x[:1], (1, 0)),
}


@pytest.mark.parametrize("name", sorted(SORTS))
def test_sorts_top_k_and_updates_with_known_starts(name, tmp_path):
    check(SORTS[name], ROWS, tmp_path=tmp_path)


def test_dynamic_update_slice_at_a_start_known_only_at_run_time_fails_by_name():
    with pytest.raises(rml.ExportError, match="dynamic_update_slice with start indices known only at run time"):
        export(lambda p, x, i: lax.dynamic_update_slice(x, x[:1], (i[0], 0)), {}, (ROWS, np.array([1], np.int32)))


SCATTERS = {
    "set": lambda p, x: x.at[1, jnp.array([0, 4, 2])].set(jnp.array([7.0, 8.0, 9.0])),
    "set_rows": lambda p, x: x.at[jnp.array([1])].set(x[:1] * 3.0),
    "add": lambda p, x: x.at[:, jnp.array([5, 1])].add(x[:, :2]),
    "multiply": lambda p, x: x.at[0, 1:4].multiply(jnp.array([2.0, -1.0, 0.5])),
    "min": lambda p, x: x.at[jnp.array([0, 1]), jnp.array([3, 3])].min(jnp.array([-9.0, 9.0])),
    "max": lambda p, x: x.at[1, 0].max(5.0),
    "out_of_bounds_dropped": lambda p, x: x.at[jnp.array([1, 7])].set(jnp.zeros((2, 6))),
}


@pytest.mark.parametrize("name", sorted(SCATTERS))
def test_scatters_at_indices_known_at_export_time(name, tmp_path):
    check(SCATTERS[name], ROWS, tmp_path=tmp_path)


def test_scatters_that_collide_or_index_at_run_time_fail_by_name():
    with pytest.raises(rml.ExportError, match="scatter-add with several updates into one element"):
        export(lambda p, x: x.at[jnp.array([0, 0])].add(x[:2]), {}, (ROWS,))
    with pytest.raises(rml.ExportError, match="scatter with indices known only at run time"):
        export(lambda p, x, i: x.at[i].set(0.0), {}, (ROWS, np.array([1], np.int32)))


@pytest.mark.parametrize("reverse", [False, True])
def test_running_maximum_and_minimum(reverse, tmp_path):
    x = RNG.standard_normal((3, 11)).astype(np.float32)
    x[1, 4] = np.nan
    check(lambda p, x: lax.cummax(x, 1, reverse=reverse) + lax.cummin(x, 0, reverse=reverse), x, tmp_path=tmp_path)
    check(lambda p, x: lax.cummax((x * 4).astype(jnp.int32), 1, reverse=reverse), x[[0, 2]])
