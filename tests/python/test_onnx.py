"""`rml convert --to onnx` checked by ONNX's own tools and by ONNX Runtime on every
committed fixture: the full checker passes, ONNX's shape inference agrees with rml's
shapes for every value, and ONNX Runtime reproduces the framework's golden outputs
within 1e-5 absolute, the executor's own bound. (The zoo tests run the same check on
their exports at batch 1, 2 and 7.)"""
import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest

import rml
from conftest import REPO

FIXTURES = sorted((REPO / "testdata").glob("*.json"))
ONNX_TYPES = {onnx.TensorProto.FLOAT: "f32", onnx.TensorProto.INT32: "i32"}


def rml_types(graph_path: Path) -> dict[str, tuple[str, tuple]]:
    """Every value's emitted name -> (dtype, shape), by the converter's naming rule."""
    doc = json.loads(graph_path.read_text())
    inputs = {entry["value"]: entry["name"] for entry in doc["inputs"]}
    outputs = {}
    for entry in doc["outputs"]:
        outputs.setdefault(entry["value"], entry["name"])  # a value output twice keeps its first name

    def name(value):
        if value["id"] in inputs:
            return inputs[value["id"]]
        if "weight" in value or "data" in value:  # a constant
            return value.get("name") or f"value_{value['id']}"
        return outputs.get(value["id"], f"value_{value['id']}")

    return {name(v): (v["dtype"], tuple(v["shape"])) for v in doc["values"]}


def inferred_types(model_path: Path) -> dict[str, tuple[str, tuple]]:
    inferred = onnx.shape_inference.infer_shapes(onnx.load(str(model_path)), strict_mode=True)
    found = {}
    for info in list(inferred.graph.value_info) + list(inferred.graph.output):
        tensor = info.type.tensor_type
        found[info.name] = (ONNX_TYPES.get(tensor.elem_type, str(tensor.elem_type)),
                            tuple(d.dim_value for d in tensor.shape.dim))
    return found


@pytest.mark.parametrize("graph", FIXTURES, ids=lambda p: p.stem)
def test_the_fixture_converts_and_onnx_runtime_reproduces_its_golden_outputs(graph, tmp_path, run_rml):
    model = tmp_path / f"{graph.stem}.onnx"
    run_rml("convert", graph, "--to", "onnx", "-o", model)
    onnx.checker.check_model(str(model), full_check=True)

    expected, inferred = rml_types(graph), inferred_types(model)
    compared = [name for name in inferred if name in expected]
    assert len(compared) >= len([n for n in expected if n.startswith("value_")]) // 2
    wrong = {name: (inferred[name], expected[name]) for name in compared if inferred[name] != expected[name]}
    assert not wrong, f"ONNX shape inference disagrees with rml: {wrong}"

    golden = rml.read_tensors(str(graph.with_suffix("").with_suffix(".golden.safetensors")))
    session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    outputs = session.run(None, {i.name: golden[i.name] for i in session.get_inputs()})
    for info, got in zip(session.get_outputs(), outputs):
        assert got.shape == golden[info.name].shape
        worst = float(np.max(np.abs(got.astype(np.float64) - golden[info.name]), initial=0.0))
        assert worst <= 1e-5, f"{graph.stem} output '{info.name}': ONNX Runtime differs from the framework by {worst:.3g}"


def test_a_node_onnx_cannot_take_is_reported_and_nothing_is_written(run_rml, tmp_path):
    b = rml.Builder()
    x = b.input("x", np.zeros((1, 1, 6, 6), np.float32))
    pooled = b.op("avg_pool2d", [x], {"kernel": [2, 2], "strides": [1, 1], "dilations": [2, 2]})
    b.output("y", b.op("exp", [pooled]))
    b.write(str(tmp_path / "m.json"))
    check = run_rml("convert", tmp_path / "m.json", "--to", "onnx", "--check", check=False)
    assert check.returncode == 1
    assert "node 0 (avg_pool2d) -> 'value_1':" in check.stdout and "dilations" in check.stdout
    convert = run_rml("convert", tmp_path / "m.json", "--to", "onnx", "-o", tmp_path / "m.onnx", check=False)
    assert convert.returncode == 1 and "node 0 (avg_pool2d)" in convert.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "m.safetensors"]
