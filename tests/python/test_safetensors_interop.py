"""rml's safetensors files against the official `safetensors` package, both ways."""
import math

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from conftest import REPO

EXAMPLE = REPO / "examples" / "tiny_classifier.json"


def as_float32(values):
    special = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}
    return np.array([special.get(v, v) if isinstance(v, str) else v for v in values], dtype=np.float64).astype(np.float32)


def test_weights_written_by_rml_open_with_the_official_package(dump_tensors):
    weights = EXAMPLE.with_suffix(".safetensors")
    official = load_file(str(weights))
    ours = dump_tensors(weights)
    assert set(official) == set(ours) == {
        "dense1.weight", "dense1.bias", "norm.weight", "norm.bias", "dense2.weight", "dense2.bias"}
    for name, array in official.items():
        dtype, shape, values = ours[name]
        assert array.dtype == np.float32 and dtype == "f32"
        assert array.shape == shape
        np.testing.assert_array_equal(array.ravel(), as_float32(values))


def test_outputs_written_by_rml_run_open_with_the_official_package(tmp_path, run_rml, dump_tensors):
    out = tmp_path / "out.safetensors"
    run_rml("run", EXAMPLE, "--inputs", EXAMPLE.with_suffix(".inputs.safetensors"), "--output", out)
    official = load_file(str(out))
    assert list(official) == ["probabilities"]
    probabilities = official["probabilities"]
    assert probabilities.shape == (2, 3) and probabilities.dtype == np.float32
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(probabilities.ravel(), as_float32(dump_tensors(out)["probabilities"][2]))


def reference_classifier(weights, x):
    """The example model in NumPy float64: dense, layer norm, tanh GELU, dense, softmax."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    h = x.astype(np.float64) @ w["dense1.weight"] + w["dense1.bias"]
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5)
    h = h * w["norm.weight"] + w["norm.bias"]
    h = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h**3)))
    logits = h @ w["dense2.weight"] + w["dense2.bias"]
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_rml_run_on_inputs_written_by_the_official_package_matches_numpy(tmp_path, run_rml):
    x = np.random.default_rng(7).standard_normal((2, 6)).astype(np.float32)
    save_file({"x": x}, str(tmp_path / "in.safetensors"))
    run_rml("run", EXAMPLE, "--inputs", tmp_path / "in.safetensors", "--output", tmp_path / "out.safetensors")
    got = load_file(str(tmp_path / "out.safetensors"))["probabilities"]
    expected = reference_classifier(load_file(str(EXAMPLE.with_suffix(".safetensors"))), x)
    np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0)


def test_files_the_official_package_writes_load_in_rml_with_canonical_dtypes(tmp_path, dump_tensors):
    rng = np.random.default_rng(3)
    arrays = {
        "f32": np.array([0.1, -0.0, np.inf, -np.inf, 1e-45, 3.4028235e38], dtype=np.float32),
        "f16": np.array([1.0, -2.0, 65504.0, 6e-8, np.inf, -0.0], dtype=np.float16),
        "f64": rng.standard_normal(5),
        "i32": np.array([[-(2**31), 0], [7, 2**31 - 1]], dtype=np.int32),
        "i64": np.array([-(2**31), 5, 2**31 - 1], dtype=np.int64),
        "bool": np.array([True, False, True]),
        "empty": np.zeros((0, 3), dtype=np.float32),
        "scalar": np.array(2.5, dtype=np.float32),
    }
    path = tmp_path / "official.safetensors"
    save_file(arrays, str(path))
    ours = dump_tensors(path)
    assert set(ours) == set(arrays)
    for name, array in arrays.items():
        dtype, shape, values = ours[name]
        assert shape == array.shape, name
        if array.dtype.kind in "iu":
            assert dtype == "i32", name
            np.testing.assert_array_equal(np.array(values, dtype=np.int64), array.ravel().astype(np.int64))
        else:
            assert dtype == "f32", name
            # Canonical conversion: float32 rounding of the exact value.
            np.testing.assert_array_equal(as_float32(values), array.ravel().astype(np.float32))


def test_an_i64_value_outside_i32_is_an_error_naming_the_tensor(tmp_path, run_rml):
    save_file({"ids": np.array([1, 2**31], dtype=np.int64)}, str(tmp_path / "big.safetensors"))
    result = run_rml("tensors", tmp_path / "big.safetensors", check=False)
    assert result.returncode == 1
    assert "'ids'" in result.stderr and "i32" in result.stderr


def test_a_graph_whose_weights_the_official_package_rewrote_as_f64_still_runs(tmp_path, run_rml):
    # Same graph, its "weights" field pointing at the rewritten file.
    (tmp_path / "m.json").write_text(EXAMPLE.read_text().replace("tiny_classifier.safetensors", "m.safetensors"))
    weights = load_file(str(EXAMPLE.with_suffix(".safetensors")))
    save_file({k: v.astype(np.float64) for k, v in weights.items()}, str(tmp_path / "m.safetensors"))
    inputs = EXAMPLE.with_suffix(".inputs.safetensors")
    ours = run_rml("run", tmp_path / "m.json", "--inputs", inputs, "--output", tmp_path / "a.safetensors")
    original = run_rml("run", EXAMPLE, "--inputs", inputs, "--output", tmp_path / "b.safetensors")
    assert ours.returncode == original.returncode == 0
    np.testing.assert_array_equal(load_file(str(tmp_path / "a.safetensors"))["probabilities"],
                                  load_file(str(tmp_path / "b.safetensors"))["probabilities"])


@pytest.mark.parametrize("corruption", ["truncate", "bad_dtype"])
def test_corrupt_files_are_reported_not_crashed(tmp_path, run_rml, corruption):
    path = tmp_path / "c.safetensors"
    save_file({"a": np.arange(4, dtype=np.float32)}, str(path))
    data = path.read_bytes()
    if corruption == "truncate":
        data = data[:-3]
    else:
        data = data.replace(b'"F32"', b'"Q32"')
    path.write_bytes(data)
    result = run_rml("tensors", path, check=False)
    assert result.returncode == 1
    assert result.stderr.startswith("rml: error [")
