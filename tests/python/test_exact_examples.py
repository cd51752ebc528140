"""The exact examples' generators (tools/make_tiny_net.py, tools/make_tiny_models.py)
regenerate the committed graphs, weights and literal headers byte for byte.

Each generator runs in its own process (it imports the three frameworks in the
order torch.export needs) into a temporary folder; it fails by itself if a
framework's output or a written graph is not bit for bit its NumPy reference.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def generated_files(folder: Path) -> list[str]:
    """The files a generator writes: everything in the folder but the hand-written C++."""
    return sorted(p.name for p in folder.iterdir() if p.suffix != ".cpp")


@pytest.mark.parametrize("example, generator", [("tiny_net", "make_tiny_net.py"), ("tiny_models", "make_tiny_models.py")])
def test_the_generator_rewrites_the_committed_example_byte_for_byte(tmp_path, example, generator):
    committed = REPO / "examples" / example
    done = subprocess.run([sys.executable, str(REPO / "tools" / generator), "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "framework and rml exact" in done.stdout
    assert generated_files(tmp_path) == generated_files(committed)
    for name in generated_files(committed):
        assert (tmp_path / name).read_bytes() == (committed / name).read_bytes(), f"{example}/{name} differs"


def test_a_broken_design_is_refused_by_the_exact_checks():
    """The exact forms of the non-linear functions refuse arguments f32 would round."""
    sys.path.insert(0, str(REPO / "tools"))
    import numpy as np

    import make_tiny_models as tiny

    with pytest.raises(SystemExit, match="sigmoid argument"):
        tiny.exact_sigmoid(np.array([0.0, 19.5]), "test")
    with pytest.raises(SystemExit, match="tanh argument"):
        tiny.exact_tanh(np.array([9.0]), "test")
    with pytest.raises(SystemExit, match="GELU argument"):
        tiny.exact_gelu(np.array([-3.0]), "test")
    with pytest.raises(SystemExit, match="40 above"):
        tiny.rows_and_margin(np.array([[1.0, -30.0]]), "test")
    with pytest.raises(SystemExit, match="not exact in f32"):
        tiny.f32(np.array([0.1]), "test")
