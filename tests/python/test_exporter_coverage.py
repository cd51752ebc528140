"""docs/exporter-ops.md is what tools/exporter_coverage.py generates from the exporters now."""
import difflib
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import exporter_coverage  # noqa: E402

DOC = REPO / "docs" / "exporter-ops.md"


@pytest.fixture(scope="module")
def generated():
    return exporter_coverage.render()


def test_the_committed_doc_is_current(generated):
    committed = DOC.read_text(encoding="utf-8")
    diff = "".join(list(difflib.unified_diff(committed.splitlines(True), generated.splitlines(True),
                                             "docs/exporter-ops.md", "generated"))[:60])
    assert committed == generated, f"docs/exporter-ops.md is out of date: run `make docs`\n{diff}"


def test_the_doc_lists_each_exporters_table(generated):
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in generated.splitlines()
             if line.startswith("| `")]
    rows = {cell[0].strip("`"): cell[1] for cell in cells if len(cell) == 2}  # the per-exporter tables
    assert len(rows) >= 300
    assert rows["aten.addmm.default"] == "`add`, `matmul`, `mul`"        # helpers followed (L.binary)
    assert rows["aten.amax.default"] == "`reduce_max`"                     # a factory's argument
    assert rows["MaxPool"] == "`max_pool2d`, `transpose`"                  # through nchw_op
    assert rows["stablehlo.xor"] == "`ne`"                                 # a table keyed by the op
    assert rows["stablehlo.dot_general"] == "`matmul`, `reshape`, `transpose`"  # a recipe in rml.lowering
    assert rows["stablehlo.cbrt"].startswith("none: computed only on constants")
    assert rows["Identity"].startswith("none: identity")
    assert rows["Shape"].startswith("none: a constant computed")
    assert rows["pjit"].startswith("none: inlined")


def test_the_core_aten_op_set_is_covered_to_the_issue_target(generated):
    """Issue 19: of the core ATen ops inference graphs use, at least 90 % lowered; every
    core op is lowered, out of scope or explained (render raises otherwise)."""
    import re
    section = generated[generated.index("## PyTorch core ATen op set"):]
    total, out, in_scope, lowered = (int(n) for n in re.search(
        r"(\d+) ops; (\d+) are out of scope .*?of the other (\d+), \*\*(\d+) are lowered", section, re.S).groups())
    rows = [line for line in section.splitlines() if line.startswith("| `aten.")]
    assert len(rows) == total and total - out == in_scope
    assert sum(" | lowered | " in r for r in rows) == lowered
    assert lowered >= 0.9 * in_scope, f"{lowered} of {in_scope} core ATen ops lowered"
    assert "| `aten.cumsum.default` | lowered |" in section
    assert "| `aten.fmod.Tensor` | not lowered |" in section
    assert "| `aten.convolution_backward.default` | out of scope | a gradient" in section


@pytest.mark.parametrize("title, kind", [("JAX primitives", "primitive"), ("StableHLO op set", "op"),
                                         ("TensorFlow ops Keras layers emit", "op type")])
def test_jax_primitives_and_the_stablehlo_op_set_are_measured(generated, title, kind):
    """Issue 19: each framework's operator set, read from the installed package, with every
    operator lowered, out of scope or not lowered with its reason."""
    import re
    section = generated[generated.index(f"## {title}"):]
    section = section[:section.find("\n## ", 1)] if "\n## " in section[1:] else section
    total, out, in_scope, lowered = (int(n) for n in re.search(
        rf"(\d+) {kind}s against .*?; (\d+) are out of scope .*?of the other (\d+), \*\*(\d+) are lowered",
        section, re.S).groups())
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines() if line.startswith("| `")]
    assert len(rows) == total > 50 and total - out == in_scope
    assert sum(r[1] == "lowered" for r in rows) == lowered
    assert all(r[1] in ("lowered", "out of scope", "not lowered") and (r[1] == "lowered" or r[2]) for r in rows)


def test_an_operator_nobody_classified_fails_generation(monkeypatch):
    import op_set_coverage
    monkeypatch.setattr(op_set_coverage.JAX, "ops", lambda: op_set_coverage.jax_primitives() + ["made_up_primitive"])
    with pytest.raises(ValueError, match="primitive made_up_primitive is neither lowered"):
        exporter_coverage.render()


def test_known_rows_of_the_operator_sets(generated):
    for row in ("| `cumsum` | lowered |", "| `cumprod` | not lowered | a cumulative product", "| `while` | lowered |", "| `cond` | lowered |",
                "| `psum` | out of scope | a collective", "| `stablehlo.reverse` | lowered |",
                "| `stablehlo.remainder` | not lowered | f32 remainder", "| `iota` | lowered | computed at export time",
                "| `Einsum` | lowered |", "| `While` | lowered |", "| `Conv2DBackpropInput` | lowered |", "| `Conv3D` | lowered |",
                "| `MaxPool3D` | lowered |", "| `Conv3DBackpropInputV2` | lowered |"):
        assert row in generated, row
