"""The Python binding of the C++ Builder, graph files and Executor."""
import numpy as np
import pytest

import rml


def test_builder_checks_shapes_computes_examples_and_folds_constants(tmp_path):
    b = rml.Builder()
    x = b.input("x", np.array([[1.0, -2.0, 3.0]], dtype=np.float32))
    w = b.constant(np.arange(6, dtype=np.float64).reshape(3, 2), "w")  # f64 -> f32
    folded = b.op("mul", [b.constant(np.float32(2.0)), b.constant(np.float32(3.0))])
    assert b.is_constant(folded) and b.node_count == 0
    y = b.op("relu", [b.op("matmul", [x, w])])
    z = b.op("mul", [y, folded])
    assert b.shape(z) == (1, 2) and b.dtype(z) == "f32"
    np.testing.assert_array_equal(b.example(z), np.array([[48.0, 60.0]], dtype=np.float32))
    b.output("z", z)
    out = b.evaluate({"x": np.ones((1, 3), dtype=np.float32)})
    np.testing.assert_array_equal(out["z"], np.array([[36.0, 54.0]], dtype=np.float32))
    b.write(str(tmp_path / "m.json"))
    model = rml.load(str(tmp_path / "m.json"))
    assert model.inputs == ["x"] and model.outputs == ["z"]
    for threads in (1, 2):
        for fuse in (True, False):
            got = model.run({"x": np.ones((1, 3), dtype=np.float32)}, threads=threads, fuse=fuse)
            np.testing.assert_array_equal(got["z"], out["z"])


def test_attributes_pass_as_a_dict_and_op_multi_returns_every_output():
    b = rml.Builder()
    x = b.input("x", np.array([[3, 1, 3, 2]], dtype=np.int64))  # i64 -> i32
    assert b.dtype(x) == "i32"
    values, indices = b.op_multi("top_k", [x], 2, {"k": 2})
    np.testing.assert_array_equal(b.example(values), [[3, 3]])
    np.testing.assert_array_equal(b.example(indices), [[0, 2]])
    t = b.op("transpose", [x], {"perm": (1, 0)})
    assert b.shape(t) == (4, 1)
    s = b.op("slice", [x], {"axes": [1], "starts": [np.int64(-1)], "ends": [4]})
    assert b.shape(s) == (1, 1)


def test_export_errors_name_the_op_and_are_python_exceptions():
    b = rml.Builder()
    x = b.input("x", np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(rml.ExportError, match="unknown op 'conv7d'"):
        b.op("conv7d", [x])
    with pytest.raises(rml.ExportError, match="op 'matmul'.*contracted dimensions differ"):
        b.op("matmul", [x, x])
    with pytest.raises(rml.ExportError, match="unknown attribute 'dim'"):
        b.op("softmax", [x], {"dim": 1})
    with pytest.raises(rml.ExportError, match="outside the i32 range"):
        b.constant(np.array([2**40], dtype=np.int64))
    assert issubclass(rml.ExportError, rml.Error) and issubclass(rml.Error, ValueError)


def test_loading_a_bad_file_raises_rml_error(tmp_path):
    (tmp_path / "bad.json").write_text('{"format": "rml-graph", "version": 9}')
    with pytest.raises(rml.Error, match="unsupported format version 9"):
        rml.load(str(tmp_path / "bad.json"))


def test_op_names_come_from_the_registry():
    names = rml.op_names()
    assert len(names) == 49 and "sdpa" in names and "top_k" in names and "cumsum" in names
