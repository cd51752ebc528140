"""Shared fixtures: the `rml` binary (from $RML_CLI, set by ctest) and a runner."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch  # noqa: F401  PyTorch loads before jaxlib and TensorFlow in every test process (the spec's import-order note)

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # the zoo package


@pytest.fixture(scope="session")
def rml_cli() -> str:
    path = os.environ.get("RML_CLI", str(REPO / "build" / "rml"))
    if not Path(path).is_file():
        pytest.fail(f"rml binary not found at {path}; build first (make build) or set RML_CLI")
    return path


@pytest.fixture
def run_rml(rml_cli):
    """Runs `rml ARGS...`; returns the CompletedProcess (text mode)."""

    def run(*args, check=True):
        result = subprocess.run([rml_cli, *map(str, args)], capture_output=True, text=True)
        if check and result.returncode != 0:
            raise AssertionError(f"rml {' '.join(map(str, args))} exited {result.returncode}: {result.stderr}")
        return result

    return run


@pytest.fixture
def dump_tensors(run_rml):
    """Reads a safetensors file through rml and returns {name: (dtype, shape, values)}."""

    def dump(path):
        out = json.loads(run_rml("tensors", path, "--json").stdout)
        return {name: (e["dtype"], tuple(e["shape"]), e["values"]) for name, e in out.items()}

    return dump


@pytest.fixture
def onnx_run(run_rml):
    """Converts an rml graph file with `rml convert --to onnx`, checks the model with
    onnx's full checker and runs it in ONNX Runtime: returns {output name: array}."""

    def run(graph_path, feeds):
        import onnx
        import onnxruntime

        model = Path(graph_path).with_suffix(".onnx")
        run_rml("convert", graph_path, "--to", "onnx", "-o", model)
        onnx.checker.check_model(str(model), full_check=True)
        session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        outputs = session.run(None, {i.name: feeds[i.name] for i in session.get_inputs()})
        return {o.name: value for o, value in zip(session.get_outputs(), outputs)}

    return run
