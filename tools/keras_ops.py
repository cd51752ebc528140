"""The TensorFlow ops Keras layers emit for inference: each layer below (Keras 3's
built-in layers, with typical arguments, and every named activation) is traced in a
one-layer model at batch 2 and frozen the way the TF direct exporter freezes a model
(loops kept functional); the op types of every node, loop bodies included, are the set.
`layer_ops()` maps each op type to the layers that emit it."""
from __future__ import annotations

import functools

ACTIVATIONS = ["relu", "relu6", "sigmoid", "tanh", "softmax", "gelu", "swish", "silu", "elu", "selu", "softplus",
               "softsign", "hard_sigmoid", "hard_swish", "leaky_relu", "exponential", "log_softmax", "mish", "linear"]


def layer_cases(layers) -> dict:
    """name -> (input shape without the batch, input dtype, layer factory)."""
    f32 = "float32"
    cases = {
        "Dense": ((8,), f32, lambda: layers.Dense(4)),
        "Conv1D": ((10, 3), f32, lambda: layers.Conv1D(4, 3, padding="same")),
        "Conv2D": ((8, 8, 3), f32, lambda: layers.Conv2D(4, 3, strides=2, padding="same")),
        "Conv3D": ((6, 6, 6, 2), f32, lambda: layers.Conv3D(3, 3)),
        "Conv3D_dilated": ((6, 6, 6, 2), f32, lambda: layers.Conv3D(3, 2, dilation_rate=2)),
        "Conv3DTranspose": ((4, 4, 4, 2), f32, lambda: layers.Conv3DTranspose(3, 3, strides=2)),
        "SeparableConv2D": ((8, 8, 3), f32, lambda: layers.SeparableConv2D(4, 3)),
        "DepthwiseConv2D": ((8, 8, 3), f32, lambda: layers.DepthwiseConv2D(3)),
        "Conv1DTranspose": ((8, 3), f32, lambda: layers.Conv1DTranspose(4, 3, strides=2)),
        "Conv2DTranspose": ((8, 8, 3), f32, lambda: layers.Conv2DTranspose(4, 3, strides=2)),
        "MaxPooling1D": ((8, 3), f32, lambda: layers.MaxPooling1D()),
        "MaxPooling2D": ((8, 8, 3), f32, lambda: layers.MaxPooling2D()),
        "MaxPooling3D": ((4, 4, 4, 2), f32, lambda: layers.MaxPooling3D()),
        "AveragePooling3D": ((4, 4, 4, 2), f32, lambda: layers.AveragePooling3D(2, padding="same")),
        "GlobalMaxPooling3D": ((4, 4, 4, 2), f32, lambda: layers.GlobalMaxPooling3D()),
        "AveragePooling1D": ((8, 3), f32, lambda: layers.AveragePooling1D(2)),
        "AveragePooling2D": ((8, 8, 3), f32, lambda: layers.AveragePooling2D(2)),
        "GlobalAveragePooling1D": ((8, 3), f32, lambda: layers.GlobalAveragePooling1D()),
        "GlobalAveragePooling2D": ((8, 8, 3), f32, lambda: layers.GlobalAveragePooling2D()),
        "GlobalMaxPooling2D": ((8, 8, 3), f32, lambda: layers.GlobalMaxPooling2D()),
        "BatchNormalization": ((8, 8, 3), f32, lambda: layers.BatchNormalization()),
        "LayerNormalization": ((5, 8), f32, lambda: layers.LayerNormalization()),
        "GroupNormalization": ((8, 8, 4), f32, lambda: layers.GroupNormalization(2)),
        "UnitNormalization": ((8,), f32, lambda: layers.UnitNormalization()),
        "Dropout": ((8,), f32, lambda: layers.Dropout(0.5)),
        "Flatten": ((4, 4, 3), f32, lambda: layers.Flatten()),
        "Reshape": ((12,), f32, lambda: layers.Reshape((3, 4))),
        "Permute": ((3, 4), f32, lambda: layers.Permute((2, 1))),
        "RepeatVector": ((4,), f32, lambda: layers.RepeatVector(3)),
        "UpSampling1D": ((4, 3), f32, lambda: layers.UpSampling1D()),
        "UpSampling2D": ((4, 4, 3), f32, lambda: layers.UpSampling2D()),
        "UpSampling2D (bilinear)": ((4, 4, 3), f32, lambda: layers.UpSampling2D(interpolation="bilinear")),
        "ZeroPadding2D": ((4, 4, 3), f32, lambda: layers.ZeroPadding2D()),
        "Cropping2D": ((6, 6, 3), f32, lambda: layers.Cropping2D()),
        "CenterCrop": ((8, 8, 3), f32, lambda: layers.CenterCrop(4, 4)),
        "Resizing": ((8, 8, 3), f32, lambda: layers.Resizing(5, 5)),
        "Resizing (nearest)": ((8, 8, 3), f32, lambda: layers.Resizing(16, 16, interpolation="nearest")),
        "Rescaling": ((8,), f32, lambda: layers.Rescaling(1 / 255.0, offset=-0.5)),
        "Embedding": ((5,), "int32", lambda: layers.Embedding(10, 4)),
        "LSTM": ((5, 3), f32, lambda: layers.LSTM(4)),
        "GRU": ((5, 3), f32, lambda: layers.GRU(4)),
        "SimpleRNN": ((5, 3), f32, lambda: layers.SimpleRNN(4)),
        "Bidirectional": ((5, 3), f32, lambda: layers.Bidirectional(layers.LSTM(4))),
        "TimeDistributed": ((5, 3), f32, lambda: layers.TimeDistributed(layers.Dense(2))),
        "MultiHeadAttention": ((5, 8), f32, lambda: (lambda mha: lambda x: mha(x, x))(layers.MultiHeadAttention(2, 4))),
        "Attention": ((5, 8), f32, lambda: (lambda att: lambda x: att([x, x]))(layers.Attention())),
        "PReLU": ((8,), f32, lambda: layers.PReLU()),
        "LeakyReLU": ((8,), f32, lambda: layers.LeakyReLU()),
        "ELU": ((8,), f32, lambda: layers.ELU()),
        "ReLU (max_value)": ((8,), f32, lambda: layers.ReLU(max_value=6.0)),
        "Softmax": ((8,), f32, lambda: layers.Softmax()),
    }
    for name in ACTIVATIONS:
        cases[f"Activation {name}"] = ((8,), f32, (lambda n: lambda: layers.Activation(n))(name))
    return cases


@functools.lru_cache(maxsize=1)
def layer_ops() -> dict[str, list[str]]:
    import keras
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    emitted: dict[str, set[str]] = {}
    for name, (shape, dtype, make) in layer_cases(keras.layers).items():
        x = keras.Input(shape, dtype=dtype)
        model = keras.Model(x, make()(x))
        traced = tf.function(lambda v, m=model: m(v, training=False), autograph=False)
        concrete = traced.get_concrete_function(tf.TensorSpec((2, *shape), dtype))
        graph = convert_variables_to_constants_v2(concrete, lower_control_flow=False).graph.as_graph_def()
        for node in [*graph.node, *(n for f in graph.library.function for n in f.node_def)]:
            emitted.setdefault(node.op, set()).add(name)
    return {op: sorted(layers) for op, layers in sorted(emitted.items())}
