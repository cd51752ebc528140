"""The TensorFlow direct exporter: one test per TF op lowering, errors by name,
and a Keras model beyond the zoo."""
import json

import numpy as np
import pytest
import torch  # noqa: F401  (first: torch's triton crashes if TensorFlow's LLVM loaded before it)
import tensorflow as tf

import rml
from rml import from_tf
from rml.from_tf import export, freeze

RNG = np.random.default_rng(0)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def traced_op_types(fn, inputs) -> set[str]:
    frozen, _ = freeze(fn, inputs)
    return {n.op for n in frozen.graph.as_graph_def().node}


def check(fn, *inputs, tmp_path, expected=None, op_type=None):
    """Exports, evaluates (reference kernels) and runs (executor, fused and
    unfused) against TensorFlow within atol 1e-5 + rtol 1e-4."""
    if op_type is not None:  # the case really exercises the lowering it names
        assert op_type in traced_op_types(fn, inputs), f"{op_type} not in the traced graph"
    if expected is None:
        expected = fn(*[tf.constant(x) for x in inputs])
    expected = tuple(np.asarray(e) for e in (expected if isinstance(expected, (tuple, list)) else (expected,)))
    names = [f"input.{i}" for i in range(len(inputs))]
    builder = export(fn, inputs, input_names=names)
    feeds = dict(zip(names, inputs))
    outputs = ["output"] if len(expected) == 1 else [f"output.{i}" for i in range(len(expected))]

    def agree(got):
        for name, want in zip(outputs, expected):
            np.testing.assert_allclose(got[name], want.astype(got[name].dtype), atol=1e-5, rtol=1e-4)

    agree(builder.evaluate(feeds))
    builder.write(str(tmp_path / "m.json"))
    model = rml.load(str(tmp_path / "m.json"))
    for fuse in (True, False):
        agree(model.run(feeds, fuse=fuse))
    return builder


X = f32(2, 3, 4)
POS = (RNG.random((2, 3, 4)) + 0.5).astype(np.float32)
IMAGE = f32(2, 7, 7, 4)   # NHWC
NCHW = f32(2, 4, 5, 5)

TABLE = f32(6, 4)

# (TF op type, function, inputs)
ELEMENTWISE = {
    "Neg": (tf.negative, X), "Abs": (tf.abs, X), "Exp": (tf.exp, X), "Log": (tf.math.log, POS),
    "Sqrt": (tf.sqrt, POS), "Rsqrt": (tf.math.rsqrt, POS), "Tanh": (tf.tanh, X), "Sigmoid": (tf.sigmoid, X),
    "Relu": (tf.nn.relu, X), "Relu6": (lambda x: tf.nn.relu6(x * 8), X),
    "LeakyRelu": (lambda x: tf.nn.leaky_relu(x, 0.3), X), "Elu": (tf.nn.elu, X), "Erf": (tf.math.erf, X),
    "Erfc": (tf.math.erfc, X), "Sin": (tf.sin, X), "Cos": (tf.cos, X), "Reciprocal": (tf.math.reciprocal, POS),
    "Square": (tf.square, X), "Softmax": (tf.nn.softmax, X), "Pow": (lambda x: tf.pow(x, 3.0), X),
    "AddV2": (lambda x: x + 1.5, X), "Sub": (lambda x: 2.0 - x, X), "Mul": (lambda x: x * x, X),
    "RealDiv": (lambda x: x / 3.0, X), "Maximum": (lambda x: tf.maximum(x, 0.25), X),
    "Minimum": (lambda x: tf.minimum(x, -0.25), X),
    "SquaredDifference": (lambda x: tf.math.squared_difference(x, 0.5), X),
    "AddN": (lambda x: tf.add_n([x, x * 2, x * 3]), X),
    "ClipByValue": (lambda x: tf.raw_ops.ClipByValue(t=x, clip_value_min=-0.5, clip_value_max=0.5), X),
    "SelectV2": (lambda x: tf.where(x > 0, x, x * 0.1), X),
    "Select": (lambda x: tf.raw_ops.Select(condition=x[:, 0, 0] > 0, x=x, y=-x), X),
    "Equal": (lambda x: tf.cast(tf.equal(x, x[:, :1]), tf.float32), X),
    "NotEqual": (lambda x: tf.cast(tf.not_equal(tf.nn.relu(x), 0.0), tf.float32), X),
    "Less": (lambda x: tf.cast(x < 0.5, tf.float32), X), "LessEqual": (lambda x: tf.cast(x <= 0, tf.float32), X),
    "Greater": (lambda x: tf.cast(x > -0.5, tf.float32), X),
    "GreaterEqual": (lambda x: tf.cast(x >= 0, tf.float32), X),
    "LogicalAnd": (lambda x: tf.cast(tf.logical_and(x > 0, x < 1), tf.float32), X),
    "LogicalOr": (lambda x: tf.cast(tf.logical_or(x < -1, x > 1), tf.float32), X),
    "LogicalNot": (lambda x: tf.cast(tf.logical_not(x > 0), tf.float32), X),
    "Cast": (lambda x: tf.cast(tf.cast(x * 4, tf.int32), tf.float32) + tf.cast(tf.cast(x > 0, tf.int32) * 2, tf.float32)
             + tf.cast(tf.cast(x, tf.bool), tf.float32), X),
}

AWKWARD = np.array([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.0, -0.0, 3.0, -7.0, 1e9, 8388609.0, -8388609.5, 0.49999997,
                    -0.49999997, np.inf, -np.inf, np.nan, 1e-30, 0.7], np.float32).reshape(4, 5)
UNIT = (RNG.random((2, 3, 4)) * 1.8 - 0.9).astype(np.float32)
# Ops rml has no op for, lowered as recipes (python/rml/lowering/).
ELEMENTWISE.update({
    "Floor": (tf.floor, AWKWARD), "Ceil": (tf.math.ceil, AWKWARD), "Round": (tf.round, AWKWARD),
    "Sign": (tf.sign, AWKWARD), "IsNan": (lambda x: tf.cast(tf.math.is_nan(x), tf.float32), AWKWARD),
    "IsInf": (lambda x: tf.cast(tf.math.is_inf(x), tf.float32), AWKWARD),
    "IsFinite": (lambda x: tf.cast(tf.math.is_finite(x), tf.float32), AWKWARD),
    "Expm1": (tf.math.expm1, X), "Log1p": (tf.math.log1p, POS), "Sinh": (tf.sinh, X), "Cosh": (tf.cosh, X),
    "Tan": (tf.tan, UNIT), "Asinh": (lambda x: tf.asinh(x * 30), X), "Acosh": (lambda x: tf.acosh(x + 1), POS),
    "Atanh": (tf.atanh, UNIT), "Atan": (lambda x: tf.atan(x * 5), X), "Asin": (tf.asin, UNIT), "Acos": (tf.acos, UNIT),
    "Atan2": (lambda x: tf.atan2(x, x[::-1]), X), "LogSoftmax": (lambda x: tf.nn.log_softmax(x * 10), X),
    "Prod": (lambda x: tf.reduce_prod(x, axis=[0, 2], keepdims=True), X),
    "Selu": (lambda x: tf.nn.selu(x * 3), X), "Softplus": (lambda x: tf.nn.softplus(x * 30), X),
    "Softsign": (tf.nn.softsign, X), "Cumsum": (lambda x: tf.math.cumsum(x, axis=1, exclusive=True), X),
})


# tf.nn.gelu is written out by TensorFlow: erfc for the exact form, tanh for the approximation.
GELU = {"gelu_erf": ("Erfc", lambda x: tf.nn.gelu(x)), "gelu_tanh": ("Tanh", lambda x: tf.nn.gelu(x, approximate=True))}


@pytest.mark.parametrize("op_type", sorted(ELEMENTWISE))
def test_elementwise_lowering(op_type, tmp_path):
    fn, x = ELEMENTWISE[op_type]
    check(fn, x, tmp_path=tmp_path, op_type=op_type)


@pytest.mark.parametrize("name", sorted(GELU))
def test_gelu_as_tensorflow_writes_it(name, tmp_path):
    op_type, fn = GELU[name]
    check(fn, X, tmp_path=tmp_path, op_type=op_type)


SHAPES = {
    "Reshape": (lambda x: tf.reshape(x, [6, 4]), X),
    "Transpose": (lambda x: tf.transpose(x, [2, 0, 1]), X),
    "SpaceToBatchND": (lambda x: tf.space_to_batch_nd(x, [2, 3], [[1, 1], [2, 1]]) * 1.5, f32(2, 4, 6, 3)),
    "BatchToSpaceND": (lambda x: tf.batch_to_space(x, [2, 3], [[1, 0], [2, 1]]) * 1.5, f32(12, 3, 4, 2)),
    "ConcatV2": (lambda x: tf.concat([x, x * 2], -1), X),
    "Pack": (lambda x: tf.stack([x, x + 1, x * 2], axis=1), X),
    "Unpack": (lambda x: sum(a * (i + 1) for i, a in enumerate(tf.unstack(x, axis=2))), X),
    "StridedSlice": (lambda x: x[:, 1:, ::2] + x[:, -2:, 1::2], X),
    "StridedSlice_shrink": (lambda x: x[:, -1] * x[1, 2:3, :], X),
    "StridedSlice_new_axis_ellipsis": (lambda x: x[..., None] * x[None, 1:2, ..., :1, tf.newaxis], X),
    "StridedSlice_reversed": (lambda x: x[::-1, :, ::-2], X),
    "Slice": (lambda x: tf.slice(x, [0, 1, 1], [2, -1, 2]), X),
    "Split": (lambda x: tf.concat(tf.split(x, 2, axis=-1)[::-1], -1), X),
    "SplitV": (lambda x: tf.concat(tf.split(x, [1, -1], axis=1)[::-1], 1), X),
    "Squeeze": (lambda x: tf.squeeze(x[:, :1], 1) + tf.squeeze(x[:1, 1:2, :1]), X),
    "ExpandDims": (lambda x: tf.expand_dims(x, -1) * tf.expand_dims(x, 1)[:, :, :, :, None], X),
    "Tile": (lambda x: tf.tile(x, [1, 2, 3]), X),
    "BroadcastTo": (lambda x: tf.broadcast_to(x[:, :1], [2, 3, 4]), X),
    "Pad": (lambda x: tf.pad(x, [[0, 0], [1, 2], [0, 1]]), X),
    "PadV2": (lambda x: tf.pad(x, [[1, 0], [0, 0], [2, 2]], constant_values=0.5), X),
    "ReverseV2": (lambda x: tf.reverse(x, [0, -1]), X),
    "Shape": (lambda x: tf.reshape(x, tf.concat([[6], tf.raw_ops.Shape(input=x)[2:]], 0)), X),
    "Size": (lambda x: x * tf.cast(tf.raw_ops.Size(input=x), tf.float32), X),
    "ZerosLike": (lambda x: tf.raw_ops.ZerosLike(x=x) + x, X),
    "OnesLike": (lambda x: tf.raw_ops.OnesLike(x=x) * x, X),
    "Fill": (lambda x: tf.fill([2, 3, 4], 2.0) * x, X),
    "Range": (lambda x: x * tf.range(4.0), X),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shape_lowering(name, tmp_path):
    fn, x = SHAPES[name]
    check(fn, x, tmp_path=tmp_path, op_type=name.split("_")[0])


REDUCTIONS = {
    "Sum": lambda x: tf.reduce_sum(x, [0, 2]), "Mean": lambda x: tf.reduce_mean(x, -1, keepdims=True),
    "Max": lambda x: tf.reduce_max(x, 1), "Min": lambda x: tf.reduce_min(x, [1, 2], keepdims=True),
    "Any": lambda x: tf.cast(tf.reduce_any(x > 1, 1), tf.float32),
    "All": lambda x: tf.cast(tf.reduce_all(x > -1, -1), tf.float32),
}


@pytest.mark.parametrize("op_type", sorted(REDUCTIONS))
def test_reduction_lowering(op_type, tmp_path):
    check(REDUCTIONS[op_type], X, tmp_path=tmp_path, op_type=op_type)


LINEAR = {
    "MatMul": (lambda a, b: tf.matmul(a, b), (f32(3, 4), f32(4, 5))),
    "MatMul_transposed": (lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True), (f32(4, 3), f32(5, 4))),
    "BatchMatMulV2": (lambda a, b: tf.matmul(a, b), (f32(2, 3, 4), f32(2, 4, 5))),
    "BatchMatMulV2_adjoint": (lambda a, b: tf.matmul(a, b, adjoint_a=True, adjoint_b=True),
                              (f32(2, 4, 3), f32(2, 5, 4))),
    "BatchMatMulV2_broadcast": (lambda a, b: tf.matmul(a, b), (f32(2, 3, 4), f32(4, 5))),
    "BiasAdd": (lambda a, b: tf.nn.bias_add(a, b[0]), (f32(2, 3, 4), f32(1, 4))),
    "BiasAdd_nchw": (lambda a, b: tf.nn.bias_add(a, b[0], data_format="NCHW"), (NCHW, f32(1, 4))),
    "GatherV2": (lambda a, i: tf.gather(a, i, axis=1) + tf.gather(TABLE, i[0])[None],
                 (f32(2, 6, 4), np.array([[1, 5, 0], [2, 2, 3]], np.int32))),
    "TopKV2": (lambda a, b: tf.math.top_k(a + b, 3), (f32(2, 3, 6), f32(6))),
    "ArgMax": (lambda a, b: tf.argmax(a + b, 1), (f32(2, 5, 3), f32(3))),
    "ArgMin": (lambda a, b: tf.argmin(a * b, -1), (f32(2, 5, 3), f32(3))),
}


@pytest.mark.parametrize("name", sorted(LINEAR))
def test_linear_algebra_and_indexing_lowering(name, tmp_path):
    fn, inputs = LINEAR[name]
    check(fn, *inputs, tmp_path=tmp_path, op_type=name.split("_")[0])


KERNEL, DEPTHWISE = f32(3, 3, 4, 6), f32(3, 3, 4, 2)
SCALE, OFFSET, MEAN = f32(4) + 1, f32(4), f32(4)
VARIANCE = np.abs(f32(4)) + 0.5
CONVOLUTIONS = {
    "Conv2D_same": lambda x: tf.nn.conv2d(x, KERNEL, 1, "SAME"),
    "Conv2D_valid_strided": lambda x: tf.nn.conv2d(x, KERNEL, 2, "VALID"),
    "Conv2D_dilated": lambda x: tf.nn.conv2d(x, KERNEL, 1, "SAME", dilations=2),
    "Conv2D_explicit": lambda x: tf.nn.conv2d(x, KERNEL, 1, [[0, 0], [2, 2], [2, 2], [0, 0]]),
    "Conv2D_explicit_unequal": lambda x: tf.nn.conv2d(x, KERNEL, 1, [[0, 0], [1, 2], [0, 1], [0, 0]]),
    # SAME with an odd total padding: TensorFlow puts the extra pixel after (bottom, right).
    "Conv2D_same_asymmetric": lambda x: tf.nn.conv2d(x, KERNEL[:2, :2], 1, "SAME"),
    "Conv2D_same_strided_asymmetric": lambda x: tf.nn.conv2d(x, KERNEL[:2, :2], 2, "SAME"),
    "MaxPool_same_asymmetric": lambda x: tf.nn.max_pool2d(x, 2, 2, "SAME"),
    "AvgPool_same_asymmetric": lambda x: tf.nn.avg_pool2d(x, 2, 2, "SAME"),
    "Conv2D_grouped": lambda x: tf.nn.conv2d(x, KERNEL[:, :, :2], 1, "SAME"),
    "DepthwiseConv2dNative": lambda x: tf.nn.depthwise_conv2d(x, DEPTHWISE, [1, 1, 1, 1], "SAME"),
    "MaxPool_valid": lambda x: tf.nn.max_pool2d(x, 2, 2, "VALID"),
    "MaxPool_same": lambda x: tf.nn.max_pool2d(x, 3, 1, "SAME"),
    "AvgPool_valid": lambda x: tf.nn.avg_pool2d(x, 3, 2, "VALID"),
    "AvgPool_same": lambda x: tf.nn.avg_pool2d(x, 3, 2, "SAME"),  # edge windows average real inputs only
    "FusedBatchNormV3": lambda x: tf.compat.v1.nn.fused_batch_norm(
        x, SCALE, OFFSET, MEAN, VARIANCE, epsilon=1e-3, is_training=False)[0],
    "ResizeNearestNeighbor": lambda x: tf.image.resize(x, [14, 21], method="nearest"),
}


@pytest.mark.parametrize("name", sorted(CONVOLUTIONS))
def test_convolution_pool_and_image_lowering(name, tmp_path):
    check(CONVOLUTIONS[name], IMAGE, tmp_path=tmp_path, op_type=name.split("_")[0])


def test_nchw_bias_and_batch_norm(tmp_path):
    fn = lambda x: tf.compat.v1.nn.fused_batch_norm(  # noqa: E731
        x, SCALE, OFFSET, MEAN, VARIANCE, is_training=False, data_format="NCHW")[0]
    check(fn, NCHW, tmp_path=tmp_path, op_type="FusedBatchNormV3")


def test_an_unsupported_tf_op_fails_by_name():
    with pytest.raises(rml.ExportError, match=r"TensorFlow op 'FloorMod' has no rml lowering \(node FloorMod\)"):
        export(lambda x: tf.math.floormod(x, 0.7), (X,))


def test_training_mode_batch_norm_fails_by_name():
    with pytest.raises(rml.ExportError, match=r"'FusedBatchNormV3'.*is_training=True"):
        export(lambda x: tf.compat.v1.nn.fused_batch_norm(x, SCALE, OFFSET, is_training=True)[0], (IMAGE,))


def test_a_lowering_with_the_wrong_shape_fails_by_node(monkeypatch):
    monkeypatch.setitem(from_tf.LOWERINGS, "Transpose", lambda L, x, perm: x)
    with pytest.raises(rml.ExportError, match=r"'Transpose': lowered shape \(2, 3, 4\) differs from TensorFlow's "
                                              r"recorded shape \(4, 2, 3\) \(node transpose"):
        export(lambda x: tf.transpose(x, [2, 0, 1]), (X,))


class Affine(tf.Module):
    def __init__(self):
        super().__init__()
        self.weight = tf.Variable(f32(4, 5), name="fc0.weight")
        self.bias = tf.Variable(f32(5), name="fc0.bias")
        self.mask = tf.constant(np.arange(5) < 3)

    def __call__(self, x, scale):
        # The mask, its cast and the reshaped bias are constant: they fold, no nodes.
        y = tf.matmul(x, self.weight) + tf.reshape(self.bias, [1, 5])
        return y * tf.cast(self.mask, tf.float32), tf.reduce_sum(y, -1) * scale


def test_variables_become_named_constants_and_constants_fold(tmp_path):
    module = Affine()
    inputs = (f32(3, 4), f32(3))
    builder = check(module, *inputs, tmp_path=tmp_path)
    assert builder.node_count == 5  # matmul, add, mul; reduce_sum, mul
    graph = json.loads((tmp_path / "m.json").read_text())
    assert {v["name"] for v in graph["values"] if "name" in v} >= {"fc0.weight", "fc0.bias"}
    assert [o["name"] for o in graph["outputs"]] == ["output.0", "output.1"]


def test_inputs_follow_the_functions_order_and_names(tmp_path):
    fn = tf.function(lambda a, b: a[:, :3] - 2.0 * b)
    builder = export(fn, (f32(2, 5), f32(2, 3)), input_names=["first", "second"])
    a, b = f32(2, 5), f32(2, 3)
    got = builder.evaluate({"first": a, "second": b})["output"]
    np.testing.assert_allclose(got, a[:, :3] - 2.0 * b, atol=1e-6)


def test_nodes_are_walked_in_topological_order_whatever_the_graphdef_order():
    frozen, _ = freeze(lambda x: tf.nn.relu(tf.matmul(x, TABLE[:4]) + 1.0) * 2.0, (f32(2, 4),))
    nodes = {n.name: n for n in reversed(frozen.graph.as_graph_def().node)}
    order = from_tf.topological_order(nodes, [t.op.name for t in frozen.outputs])
    position = {n.name: i for i, n in enumerate(order)}
    for node in order:
        for ref in from_tf.data_inputs(node):
            assert position[from_tf.tensor_key(ref).rsplit(":", 1)[0]] < position[node.name]


def test_keras_functional_model_beyond_the_zoo(tmp_path):
    import keras

    inputs = keras.Input((8, 8, 3))
    h = keras.layers.Conv2D(6, 3, padding="same", activation="relu")(inputs)
    h = keras.layers.BatchNormalization()(h)
    h = keras.layers.MaxPooling2D(2)(h)
    h = keras.layers.Flatten()(h)
    h = keras.layers.Dropout(0.5)(h)
    h = keras.layers.Dense(16, activation="gelu", name="hidden")(h)  # auto names depend on earlier models
    outputs = keras.layers.Dense(4, activation="softmax")(h)
    model = keras.Model(inputs, outputs)
    bn = model.layers[2]
    bn.moving_mean.assign(RNG.uniform(-0.5, 0.5, 6).astype(np.float32))  # non-trivial statistics
    bn.moving_variance.assign(RNG.uniform(0.5, 2.0, 6).astype(np.float32))
    bn.gamma.assign(RNG.uniform(0.5, 1.5, 6).astype(np.float32))
    bn.beta.assign(RNG.uniform(-0.5, 0.5, 6).astype(np.float32))
    x = f32(2, 8, 8, 3)
    expected = model(x, training=False)
    builder = check(model, x, tmp_path=tmp_path, expected=expected)
    graph = json.loads((tmp_path / "m.json").read_text())
    assert "hidden/kernel" in {v.get("name") for v in graph["values"]}
    assert builder.node_count > 0


def test_the_export_command_line_takes_a_tf_factory(tmp_path, run_rml):
    import subprocess
    import sys

    (tmp_path / "factories.py").write_text(
        "import tensorflow as tf\n"
        "def dense():\n"
        "    inputs = tf.keras.Input((12,))\n"
        "    return tf.keras.Model(inputs, tf.keras.layers.Dense(4, activation='relu')(inputs))\n")
    out = tmp_path / "dense.json"
    result = subprocess.run([sys.executable, "-m", "rml.export", "tf", "factories:dense", "--example-inputs", "f32:2x12",
                             "-o", str(out)], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "matmul" in run_rml("info", out).stdout


@pytest.mark.parametrize("layer", ["LSTM", "GRU", "SimpleRNN"])
def test_keras_recurrent_layers_unroll_their_while_loop(layer, tmp_path):
    """Keras RNN layers run a functional While over TensorArrays (TensorList ops); the
    exporter unrolls it with its condition known at export time."""
    import keras

    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((7, 5)), getattr(keras.layers, layer)(6, return_sequences=True),
                              getattr(keras.layers, layer)(4)])
    x = f32(2, 7, 5)
    assert {"While", "TensorListFromTensor", "TensorListStack"} <= traced_op_types(model, (x,))
    check(model, x, tmp_path=tmp_path, expected=model(x, training=False))


def test_a_while_loop_with_a_constant_trip_count_unrolls(tmp_path):
    @tf.function(autograph=False)
    def doubled_five_times(x):
        return tf.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, v * 2.0 + 1.0), (tf.constant(0), x))[1]

    check(doubled_five_times, f32(3, 4), tmp_path=tmp_path, op_type="StatelessWhile")


def test_a_while_loop_whose_condition_reads_the_input_fails_by_name():
    @tf.function(autograph=False)
    def until_large(x):
        return tf.while_loop(lambda v: tf.reduce_sum(v) < 100.0, lambda v: (v * 2.0,), (x,))[0]

    with pytest.raises(rml.ExportError, match=r"While'.*condition is not known at export time"):
        export(until_large, (np.ones((2, 2), np.float32),))


@pytest.mark.parametrize("size, align", [((9, 5), False), ((4, 3), False), ((7, 11), True)])
def test_bilinear_resize_in_tensorflow_s_coordinates(size, align, tmp_path):
    fn = lambda x: tf.compat.v1.image.resize_bilinear(x, size, align_corners=align, half_pixel_centers=not align)  # noqa: E731
    check(fn, f32(2, 6, 7, 3), tmp_path=tmp_path, op_type="ResizeBilinear")


@pytest.mark.parametrize("equation, a, b", [("abc,cde->abde", (2, 5, 8), (8, 2, 4)),
                                            ("aecd,abcd->acbe", (2, 5, 2, 4), (2, 6, 2, 4)),
                                            ("acbe,aecd->abcd", (2, 2, 6, 5), (2, 5, 2, 4)),
                                            ("abcd,cde->abe", (2, 6, 2, 4), (2, 4, 8))])
def test_einsum_of_two_operands_as_keras_attention_writes_them(equation, a, b, tmp_path):
    check(lambda x, y: tf.einsum(equation, x, y), f32(*a), f32(*b), tmp_path=tmp_path, op_type="Einsum")


def test_keras_multi_head_attention_and_resizing(tmp_path):
    import keras

    keras.utils.set_random_seed(2)
    tokens = keras.Input((6, 8))
    h = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)(tokens, tokens)
    image = keras.Input((6, 6, 3))
    g = keras.layers.Resizing(9, 9)(image)
    g = keras.layers.UpSampling2D(interpolation="bilinear")(keras.layers.Conv2D(2, 3)(g))
    model = keras.Model([tokens, image], [h, g])
    x, y = f32(2, 6, 8), f32(2, 6, 6, 3)
    check(model, x, y, tmp_path=tmp_path, expected=model([x, y], training=False))


@pytest.mark.parametrize("strides, padding, size", [(2, "SAME", 8), (2, "VALID", 9), (3, "SAME", 10), (1, "VALID", 6)])
def test_transposed_convolution_as_keras_and_tf_write_it(strides, padding, size, tmp_path):
    kernel = f32(3, 3, 5, 4)  # (kh, kw, out channels, in channels)
    fn = lambda x: tf.nn.conv2d_transpose(x, kernel, (2, size, size, 5), strides, padding)  # noqa: E731
    check(fn, f32(2, 4, 4, 4), tmp_path=tmp_path, op_type="Conv2DBackpropInput")


def test_keras_conv_transpose_layers(tmp_path):
    import keras

    keras.utils.set_random_seed(3)
    image, sequence = keras.Input((5, 6, 3)), keras.Input((7, 2))
    a = keras.layers.Conv2DTranspose(4, (3, 2), strides=2, padding="same", dilation_rate=1)(image)
    b = keras.layers.Conv1DTranspose(3, 4, strides=3)(sequence)
    model = keras.Model([image, sequence], [a, b])
    x, y = f32(2, 5, 6, 3), f32(2, 7, 2)
    check(model, x, y, tmp_path=tmp_path, expected=model([x, y], training=False))


@pytest.mark.parametrize("strides, padding", [(1, "SAME"), (2, "SAME"), ((1, 2, 1), "VALID")])
def test_volumes_as_conv2d_and_2d_pools(strides, padding, tmp_path):
    """Conv3D, its transpose, MaxPool3D and AvgPool3D (NDHWC) through rml's 2-D windows."""
    kernel = f32(2, 3, 3, 3, 4)  # (kd, kh, kw, in, out)
    window = [1, 2, 3, 2, 1]
    step = [1, *(strides if isinstance(strides, tuple) else (strides,) * 3), 1]
    cases = {"Conv3D": lambda x: tf.nn.conv3d(x, kernel, step, padding),
             "Conv3DBackpropInputV2": lambda x: tf.nn.conv3d_transpose(tf.nn.conv3d(x, kernel, step, padding), kernel,
                                                                       [2, 5, 6, 7, 3], step, padding),
             "MaxPool3D": lambda x: tf.nn.max_pool3d(x, window, step, padding),
             "AvgPool3D": lambda x: tf.nn.avg_pool3d(x, window, step, padding)}
    for op_type, fn in cases.items():
        check(fn, f32(2, 5, 6, 7, 3), tmp_path=tmp_path, op_type=op_type)


def test_keras_3d_layers(tmp_path):
    import keras

    keras.utils.set_random_seed(4)
    volume = keras.Input((6, 12, 12, 2))
    y = keras.layers.Conv3D(4, 3, strides=(1, 2, 2), padding="same", activation="relu")(volume)
    y = keras.layers.MaxPooling3D(2)(y)
    y = keras.layers.Conv3D(3, (2, 1, 3), dilation_rate=(2, 1, 1), groups=1)(y)
    y = keras.layers.AveragePooling3D((1, 2, 1), padding="same")(y)
    y = keras.layers.Conv3DTranspose(2, (2, 3, 3), strides=(1, 2, 2), padding="same")(y)
    model = keras.Model(volume, keras.layers.GlobalAveragePooling3D()(y))
    x = f32(2, 6, 12, 12, 2)
    check(model, x, tmp_path=tmp_path, expected=model(x, training=False))
