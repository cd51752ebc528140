"""tools/make_fixtures.py: regenerating the committed fixtures changes no byte,
and a fixture that fails its check leaves nothing on disk."""
import importlib.util
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO

spec = importlib.util.spec_from_file_location("make_fixtures", REPO / "tools" / "make_fixtures.py")
make_fixtures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_fixtures)

SUFFIXES = (".json", ".safetensors", ".golden.safetensors")


def test_regenerating_every_fixture_is_byte_identical(tmp_path):
    # A separate process, as `make fixtures` runs it (fresh torch state, one thread).
    subprocess.run([sys.executable, "-W", "ignore", str(REPO / "tools" / "make_fixtures.py"), "--out", str(tmp_path)],
                   check=True, capture_output=True, text=True)
    made = sorted(p.name for p in tmp_path.iterdir())
    committed = sorted(p.name for p in (REPO / "testdata").iterdir()
                       if any(p.name.startswith(route + "_") for route in make_fixtures.ROUTES))
    assert made == committed
    assert len(made) == 3 * len(make_fixtures.MODELS) * len(make_fixtures.ROUTES)
    changed = [name for name in made if (tmp_path / name).read_bytes() != (REPO / "testdata" / name).read_bytes()]
    assert not changed, f"regenerated fixtures differ from the committed ones: {changed}"


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
