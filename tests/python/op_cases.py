"""The per-op cases every converter's numerical test runs: one small graph per rml
op, awkward attributes included (negative slice steps, empty reduction axes,
saturating casts, causal attention), compared with rml's reference kernels."""
import numpy as np

RNG = np.random.default_rng(7)


def normal(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def positive(*shape):
    return RNG.uniform(0.2, 3.0, shape).astype(np.float32)


def ints(*shape, low=-5, high=6):
    return RNG.integers(low, high, shape).astype(np.int32)


# (case id, rml op, [input arrays], attributes, number of outputs)
CASES = [
    *[(f"{op}_f32", op, [normal(3, 4)], {}, 1) for op in ("neg", "abs", "exp", "tanh", "sigmoid", "relu", "erf", "sin", "cos")],
    *[(f"{op}_i32", op, [ints(3, 4)], {}, 1) for op in ("neg", "abs", "relu")],
    *[(op, op, [positive(3, 4)], {}, 1) for op in ("log", "sqrt", "rsqrt", "reciprocal")],
    *[(f"{op}_f32", op, [normal(3, 4), normal(4)], {}, 1) for op in ("add", "sub", "mul", "maximum", "minimum")],
    *[(f"{op}_i32", op, [ints(3, 4), ints(4)], {}, 1) for op in ("add", "sub", "mul", "maximum", "minimum")],
    ("div", "div", [normal(3, 4), positive(3, 1)], {}, 1),
    ("pow", "pow", [positive(3, 4), normal(4)], {}, 1),
    *[(f"{op}_f32", op, [np.round(normal(4, 5)), np.round(normal(5))], {}, 1) for op in ("eq", "ne", "lt", "le", "gt", "ge")],
    *[(f"{op}_i32", op, [ints(4, 5, low=-2, high=3), ints(5, low=-2, high=3)], {}, 1) for op in ("eq", "ne", "lt", "le", "gt", "ge")],
    ("select_f32_condition", "select", [np.array([[0, 1, np.nan, -2]], np.float32), normal(3, 4), normal(4)], {}, 1),
    ("select_i32", "select", [ints(3, 1, low=0, high=2), ints(3, 4), ints(1, 4)], {}, 1),
    ("cast_f32_to_i32_saturating", "cast",
     [np.array([-2.7, 2.7, -0.0, 3e9, -3e9, np.inf, -np.inf, np.nan, 2147483520.0, -2147483648.0], np.float32)], {"to": "i32"}, 1),
    ("cast_i32_to_f32", "cast", [ints(3, 4)], {"to": "f32"}, 1),
    ("cast_identity", "cast", [normal(3, 4)], {"to": "f32"}, 1),
    ("reshape", "reshape", [normal(2, 3, 4)], {"shape": [4, -1]}, 1),
    ("reshape_empty", "reshape", [np.zeros((0, 6), np.float32)], {"shape": [-1, 2, 3]}, 1),
    ("transpose", "transpose", [normal(2, 3, 4)], {"perm": [2, 0, 1]}, 1),
    ("broadcast_to", "broadcast_to", [normal(3, 1)], {"shape": [2, 3, 4]}, 1),
    ("slice_negative_steps", "slice", [normal(5, 6, 7)],
     {"axes": [0, 2, 1], "starts": [-1, 1, 0], "ends": [-100, 6, 4], "steps": [-2, 2, 1]}, 1),
    ("slice_huge_steps_and_empty", "slice", [normal(5, 6, 7)],
     {"axes": [0, 1, 2], "starts": [1, -1, 3], "ends": [5, -100, 3], "steps": [2**63 - 1, -(2**63 - 1), 1]}, 1),
    ("concat", "concat", [normal(2, 3), normal(2, 1), normal(2, 2)], {"axis": -1}, 1),
    ("pad_f32", "pad", [normal(2, 3)], {"pads": [1, 0, 2, 3], "value": -1.5}, 1),
    ("pad_i32", "pad", [ints(2, 3)], {"pads": [0, 2, 1, 0], "value": 7}, 1),
    ("gather_negative_indices", "gather", [normal(4, 5, 3), np.array([[0, -1], [4, -5]], np.int32)], {"axis": 1}, 1),
    ("top_k", "top_k", [np.round(normal(3, 8))], {"k": 3}, 2),
    ("top_k_i32", "top_k", [ints(2, 7, low=0, high=3)], {"k": 4}, 2),
    ("reduce_sum", "reduce_sum", [normal(2, 3, 4)], {"axes": [0, -1], "keep_dims": True}, 1),
    ("reduce_sum_no_axes", "reduce_sum", [normal(2, 3)], {"axes": []}, 1),
    ("reduce_sum_i32", "reduce_sum", [ints(2, 3, 4)], {"axes": [1]}, 1),
    ("reduce_mean", "reduce_mean", [normal(2, 3, 4)], {"axes": [1]}, 1),
    ("reduce_max", "reduce_max", [normal(2, 3, 4)], {"axes": [2, 0]}, 1),
    ("reduce_min", "reduce_min", [ints(2, 3, 4)], {"axes": [1], "keep_dims": True}, 1),
    ("matmul_batched", "matmul", [normal(2, 1, 3, 4), normal(5, 4, 6)], {}, 1),
    ("matmul_vector", "matmul", [normal(4), normal(2, 4, 3)], {}, 1),
    ("cumsum", "cumsum", [normal(2, 5, 3)], {"axis": 1}, 1),
    ("cumsum_reverse_exclusive", "cumsum", [normal(3, 4)], {"axis": -1, "exclusive": True, "reverse": True}, 1),
    ("cumsum_i32", "cumsum", [ints(4, 3)], {"axis": 0, "reverse": True}, 1),
    ("matmul_i32", "matmul", [ints(3, 4), ints(4, 2)], {}, 1),
    ("conv2d", "conv2d", [normal(2, 4, 9, 8), normal(6, 2, 3, 2), normal(6)],
     {"strides": [2, 1], "pads": [1, 0, 2, 1], "dilations": [1, 2], "groups": 2}, 1),
    ("max_pool2d", "max_pool2d", [normal(1, 2, 7, 7)], {"kernel": [3, 2], "strides": [2, 2], "pads": [1, 1, 1, 0]}, 1),
    ("avg_pool2d", "avg_pool2d", [normal(1, 2, 7, 7)], {"kernel": [3, 3], "strides": [2, 1], "pads": [1, 1, 1, 1]}, 1),
    ("avg_pool2d_count_pad", "avg_pool2d", [normal(1, 2, 6, 6)],
     {"kernel": [2, 3], "strides": [1, 2], "pads": [1, 0, 0, 1], "count_include_pad": True}, 1),
    ("softmax", "softmax", [normal(3, 4, 5)], {"axis": 1}, 1),
    ("layer_norm", "layer_norm", [normal(3, 6), normal(6), normal(6)], {"eps": 1e-3}, 1),
    ("layer_norm_no_scale", "layer_norm", [normal(3, 6)], {}, 1),
    ("gelu", "gelu", [normal(3, 7)], {}, 1),
    ("gelu_tanh", "gelu", [normal(3, 7)], {"approximate": "tanh"}, 1),
    ("sdpa_masked", "sdpa", [normal(2, 2, 5, 4), normal(2, 2, 6, 4), normal(2, 2, 6, 3), normal(5, 6)], {"scale": 0.3}, 1),
    ("sdpa_causal", "sdpa", [normal(1, 3, 4, 8), normal(1, 3, 4, 8), normal(1, 3, 4, 8)], {"causal": True}, 1),
]


def build_case(case, op, inputs, attributes, outputs, folder):
    """The case's graph written to FOLDER/CASE.json: inputs x0, x1, ..., outputs y0, ...
    Returns (graph path, feeds, the reference kernels' outputs)."""
    import rml

    b = rml.Builder()
    values = [b.input(f"x{i}", x) for i, x in enumerate(inputs)]
    results = b.op_multi(op, values, outputs, attributes) if outputs > 1 else [b.op(op, values, attributes)]
    for i, value in enumerate(results):
        b.output(f"y{i}", value)
    graph = folder / f"{case}.json"
    b.write(str(graph), clean_up=False)
    feeds = {f"x{i}": x for i, x in enumerate(inputs)}
    return graph, feeds, rml.load(str(graph)).evaluate(feeds)

