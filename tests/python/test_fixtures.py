"""tools/make_fixtures.py: regenerating the committed fixtures gives the same graphs,
weights and golden inputs byte for byte and the same framework outputs within
GOLDEN_DRIFT (they move between CPUs); an output within it keeps the committed
file; a fixture that fails its check leaves nothing on disk."""
import importlib.util
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO

spec = importlib.util.spec_from_file_location("make_fixtures", REPO / "tools" / "make_fixtures.py")
make_fixtures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_fixtures)

SUFFIXES = (".json", ".safetensors", ".golden.safetensors")


def test_regenerating_every_fixture_matches_the_committed_files(tmp_path):
    # A separate process, as `make fixtures` runs it (fresh torch state, one thread).
    subprocess.run([sys.executable, "-W", "ignore", str(REPO / "tools" / "make_fixtures.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True, text=True)
    made = sorted(p.name for p in tmp_path.iterdir())
    committed = sorted(p.name for p in (REPO / "testdata").iterdir()
                       if any(p.name.startswith(route + "_") for route in make_fixtures.ROUTES))
    assert made == committed
    assert len(made) == 3 * len(make_fixtures.MODELS) * len(make_fixtures.ROUTES)
    problems = make_fixtures.fixture_differences(tmp_path, REPO / "testdata")
    assert not problems, "regenerated fixtures differ from the committed ones:\n" + "\n".join(problems)


def nudged_torch_route(by: float):
    """The torch route with every framework output moved by `by`, as another CPU might."""
    def route(model):
        builder, inputs, outputs = make_fixtures.torch_route(model)
        return builder, inputs, {name: (value + np.float32(by)).astype(np.float32) for name, value in outputs.items()}
    return route


def test_golden_outputs_may_move_within_the_bound_and_no_further(tmp_path, monkeypatch):
    bound = make_fixtures.GOLDEN_DRIFT
    assert bound <= 1e-5 / 4, "the bound must stay far below the executor's 1e-5 tolerance"
    committed, regenerated = tmp_path / "committed", tmp_path / "regenerated"
    committed.mkdir(), regenerated.mkdir()
    make_fixtures.make_fixture("torch", "mlp", committed)
    golden = committed / "torch_mlp.golden.safetensors"
    before_bytes, before_stat = golden.read_bytes(), golden.stat()

    # Within the bound: the check passes, and `make fixtures` keeps the committed file untouched.
    monkeypatch.setitem(make_fixtures.ROUTES, "torch", nudged_torch_route(0.5 * bound))
    make_fixtures.make_fixture("torch", "mlp", regenerated)
    assert make_fixtures.fixture_differences(regenerated, committed) == []
    summary = make_fixtures.make_fixture("torch", "mlp", committed)
    assert "kept the committed outputs" in summary
    after_stat = golden.stat()
    assert golden.read_bytes() == before_bytes
    assert (after_stat.st_ino, after_stat.st_mtime_ns) == (before_stat.st_ino, before_stat.st_mtime_ns)

    # Beyond it: the check names the file and its largest difference, and a regeneration writes the new outputs.
    monkeypatch.setitem(make_fixtures.ROUTES, "torch", nudged_torch_route(3 * bound))
    make_fixtures.make_fixture("torch", "mlp", regenerated)
    problems = make_fixtures.fixture_differences(regenerated, committed)
    assert len(problems) == 1, problems
    moved = re.fullmatch(r"torch_mlp\.golden\.safetensors: outputs moved by up to (\S+) \(bound [^)]*\)", problems[0])
    assert moved and 2.5 * bound < float(moved.group(1)) < 3.5 * bound, problems[0]
    make_fixtures.make_fixture("torch", "mlp", committed)
    assert golden.read_bytes() == (regenerated / golden.name).read_bytes() != before_bytes


def test_inputs_names_and_graphs_must_match_exactly(tmp_path):
    make_fixtures.make_fixture("torch", "mlp", tmp_path)
    tensors, inputs = make_fixtures.read_golden(tmp_path / "torch_mlp.golden.safetensors")
    assert inputs == ["input.0"]
    assert make_fixtures.golden_drift(tensors, tensors, inputs) == (0.0, "")
    one_bit = tensors["input.0"].copy()
    one_bit.flat[0] = np.nextafter(one_bit.flat[0], np.float32(np.inf))
    drift, why = make_fixtures.golden_drift(dict(tensors, **{"input.0": one_bit}), tensors, inputs)
    assert drift == float("inf") and why == "input 'input.0' differs"
    renamed = {"x" if name == "output" else name: value for name, value in tensors.items()}
    assert make_fixtures.golden_drift(renamed, tensors, inputs)[0] == float("inf")
    with_nan = dict(tensors, output=np.where(np.arange(tensors["output"].size).reshape(tensors["output"].shape) == 0,
                                             np.float32("nan"), tensors["output"]))
    assert make_fixtures.golden_drift(with_nan, tensors, inputs) == (float("inf"), "output 'output' has NaNs in other places")
    (tmp_path / "other").mkdir()
    for path in tmp_path.glob("torch_mlp.*"):
        (tmp_path / "other" / path.name).write_bytes(path.read_bytes())
    graph = tmp_path / "other" / "torch_mlp.json"
    graph.write_text(graph.read_text() + "\n")
    assert make_fixtures.fixture_differences(tmp_path / "other", tmp_path) == [
        "torch_mlp.json: differs from the committed file"]


def test_check_mode_compares_without_writing(tmp_path):
    make_fixtures.make_fixture("torch", "mlp", tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def check():
        return subprocess.run([sys.executable, "-W", "ignore", str(REPO / "tools" / "make_fixtures.py"), "--check",
                               "--models", "mlp", "--routes", "torch", "--out", str(tmp_path)],
                              capture_output=True, text=True)

    result = check()
    assert result.returncode == 0 and "every fixture matches" in result.stdout, result.stdout + result.stderr
    weights = tmp_path / "torch_mlp.safetensors"
    flipped = bytearray(weights.read_bytes())
    flipped[-1] ^= 1
    weights.write_bytes(bytes(flipped))
    result = check()
    assert result.returncode == 1 and "torch_mlp.safetensors: differs from the committed file" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(before)


def test_golden_files_hold_the_frameworks_inputs_and_outputs():
    import rml
    golden = rml.read_tensors(str(REPO / "testdata" / "torch_tiny_gpt.golden.safetensors"))
    assert list(golden) == ["input.0", "output"]
    assert golden["input.0"].dtype == np.int32 and golden["input.0"].shape == (2, 5)
    assert golden["output"].shape == (2, 5, 11)


def test_a_fixture_that_disagrees_with_its_framework_leaves_nothing(tmp_path, monkeypatch):
    def lying_route(model):
        builder, inputs, outputs = make_fixtures.torch_route(model)
        return builder, inputs, {name: value + 1e-3 for name, value in outputs.items()}

    monkeypatch.setitem(make_fixtures.ROUTES, "torch", lying_route)
    with pytest.raises(SystemExit, match="the written graph differs from the framework"):
        make_fixtures.make_fixture("torch", "mlp", tmp_path)
    assert list(tmp_path.iterdir()) == []
