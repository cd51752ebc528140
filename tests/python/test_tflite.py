"""`rml convert --to tflite` checked by the real consumer of the format, the LiteRT
interpreter (ai-edge-litert, pinned in requirements-test.txt): every committed fixture
converts and reproduces its framework's golden outputs within 1e-5, every per-op case
(op_cases.py, plus the layouts only TFLite has) matches rml's reference kernels within
1e-5, and what the converter refuses is refused by name before anything is written.
The flatbuffers Verifier runs on every emitted buffer in the C++ tests (test_emit)."""
import json
from pathlib import Path

import numpy as np
import pytest

import rml
from conftest import REPO
from op_cases import CASES, build_case, normal

FIXTURES = sorted((REPO / "testdata").glob("*.json"))

# Cases the converter refuses, each with the words its reason must contain.
REFUSED = {
    "erf_f32": "tflite has no lowering for op 'erf'",
    "conv2d": "grouped convolution other than depthwise",
    "matmul_i32": "BATCH_MATMUL has no int32 kernel",
}

# Layouts only the TFLite lowering has: depthwise filters, SAME padding recognised,
# pads that become a PADV2 (zeros for conv, -inf for max pool), softmax on the last axis.
TFLITE_CASES = [
    ("conv2d_depthwise_multiplier_2", "conv2d", [normal(1, 3, 7, 6), normal(6, 1, 3, 3), normal(6)],
     {"strides": [1, 1], "pads": [1, 1, 1, 1], "groups": 3}, 1),
    ("conv2d_same_strided", "conv2d", [normal(1, 2, 8, 8), normal(4, 2, 3, 3)], {"strides": [2, 2], "pads": [0, 0, 1, 1]}, 1),
    ("conv2d_explicit_pads_dilated", "conv2d", [normal(2, 3, 9, 7), normal(5, 3, 3, 2), normal(5)],
     {"strides": [1, 2], "pads": [2, 0, 1, 3], "dilations": [2, 1]}, 1),
    ("max_pool2d_same", "max_pool2d", [normal(1, 3, 6, 6)], {"kernel": [2, 2], "strides": [2, 2]}, 1),
    ("max_pool2d_negative_inputs_padded", "max_pool2d", [-np.abs(normal(1, 2, 5, 5)) - 1],
     {"kernel": [3, 3], "strides": [1, 1], "pads": [2, 0, 0, 2]}, 1),
    ("avg_pool2d_valid", "avg_pool2d", [normal(2, 2, 6, 5)], {"kernel": [2, 2], "strides": [2, 1]}, 1),
    ("softmax_last_axis", "softmax", [normal(2, 3, 5)], {"axis": -1}, 1),
    ("slice_negative_step_to_front", "slice", [normal(6, 4)], {"axes": [0], "starts": [4], "ends": [-100], "steps": [-1]}, 1),
    ("gather_runtime_negative_indices", "gather", [normal(5, 3), np.array([-1, 0, -5, 4], np.int32)], {"axis": 0}, 1),
]


@pytest.fixture
def tflite_run(run_rml, tmp_path):
    """Converts an rml graph file with `rml convert --to tflite` (into the test's own
    folder) and runs it in the LiteRT interpreter through its "serving_default"
    signature: {output name: array}."""
    from ai_edge_litert.interpreter import Interpreter

    def run(graph_path, feeds):
        model = tmp_path / (Path(graph_path).stem + ".tflite")
        run_rml("convert", graph_path, "--to", "tflite", "-o", model)
        runner = Interpreter(model_path=str(model)).get_signature_runner("serving_default")
        assert set(runner.get_input_details()) == set(feeds)
        return runner(**feeds)

    return run


@pytest.mark.parametrize("graph", FIXTURES, ids=lambda p: p.stem)
def test_the_fixture_converts_and_litert_reproduces_its_golden_outputs(graph, tflite_run):
    golden = rml.read_tensors(str(graph.with_suffix("").with_suffix(".golden.safetensors")))
    feeds = {name: golden[name] for name in _input_names(graph)}
    outputs = tflite_run(graph, feeds)
    assert outputs, "no outputs"
    for name, got in outputs.items():
        want = golden[name]
        assert got.shape == want.shape, name
        worst = float(np.max(np.abs(got.astype(np.float64) - want), initial=0.0))
        assert worst <= 1e-5, f"{graph.stem} output '{name}': LiteRT differs from the framework by {worst:.3g}"


def _input_names(graph: Path) -> list[str]:
    return [entry["name"] for entry in json.loads(graph.read_text())["inputs"]]


@pytest.mark.parametrize("case, op, inputs, attributes, outputs", CASES + TFLITE_CASES,
                         ids=[c[0] for c in CASES + TFLITE_CASES])
def test_litert_matches_the_reference(case, op, inputs, attributes, outputs, tmp_path, tflite_run, run_rml):
    graph, feeds, expected = build_case(case, op, inputs, attributes, outputs, tmp_path)
    if case in REFUSED:
        check = run_rml("convert", graph, "--to", "tflite", "--check", check=False)
        assert check.returncode == 1 and REFUSED[case] in check.stdout, check.stdout
        return
    got = tflite_run(graph, feeds)
    for name, want in expected.items():
        assert got[name].dtype == want.dtype and got[name].shape == want.shape, name
        np.testing.assert_allclose(got[name], want, atol=1e-5, rtol=1e-5, err_msg=f"{case} output {name}")


def test_a_refused_node_is_named_and_nothing_is_written(run_rml, tmp_path):
    b = rml.Builder()
    x = b.input("x", np.zeros((1, 1, 6, 6), np.float32))
    pooled = b.op("max_pool2d", [x], {"kernel": [2, 2], "strides": [1, 1], "dilations": [2, 2]})
    b.output("y", b.op("exp", [pooled]))
    b.write(str(tmp_path / "m.json"))
    check = run_rml("convert", tmp_path / "m.json", "--to", "tflite", "--check", check=False)
    assert check.returncode == 1
    assert "node 0 (max_pool2d) -> 'value_1': TFLite pools have no dilation" in check.stdout
    convert = run_rml("convert", tmp_path / "m.json", "--to", "tflite", "-o", tmp_path / "m.tflite", check=False)
    assert convert.returncode == 1 and "node 0 (max_pool2d)" in convert.stderr
    left = sorted(p.name for p in tmp_path.iterdir())
    assert "m.tflite" not in left and not [name for name in left if name.startswith(".")], left


def test_the_committed_schema_and_its_generated_header_are_what_the_tool_writes():
    """third_party/tflite/schema.fbs is recovered from the pinned interpreter package's
    schema module, and include/rml/emit/tflite/schema_generated.h is flatc's output
    for it: both regenerate byte for byte (a new ai-edge-litert or flatc shows here)."""
    import subprocess
    import sys

    check = subprocess.run([sys.executable, str(REPO / "tools" / "tflite_schema.py"), "--check"],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
