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
    rows = {op.strip("`"): ops for op, ops in cells}
    assert len(rows) >= 300
    assert rows["aten.addmm.default"] == "`add`, `matmul`, `mul`"        # helpers followed (L.binary)
    assert rows["aten.amax.default"] == "`reduce_max`"                     # a factory's argument
    assert rows["MaxPool"] == "`max_pool2d`, `transpose`"                  # through nchw_op
    assert rows["stablehlo.xor"] == "`ne`"                                 # a table keyed by the op
    assert rows["stablehlo.dot_general"] == "`matmul`, `reshape`, `transpose`"  # a recipe in rml.lowering
    assert rows["stablehlo.floor"].startswith("none: computed only on constants")
    assert rows["Identity"].startswith("none: identity")
    assert rows["Shape"].startswith("none: a constant computed")
    assert rows["pjit"].startswith("none: inlined")
