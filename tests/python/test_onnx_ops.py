"""Every rml op's ONNX lowering, one small graph each (op_cases.py), run by ONNX
Runtime and compared with rml's reference kernels within 1e-5 (absolute, plus 1e-5
relative for large values). The cases must cover every op in the registry."""
import numpy as np
import pytest

import rml
from op_cases import CASES, build_case


@pytest.mark.parametrize("case, op, inputs, attributes, outputs", CASES, ids=[c[0] for c in CASES])
def test_onnx_runtime_matches_the_reference(case, op, inputs, attributes, outputs, tmp_path, onnx_run):
    graph, feeds, expected = build_case(case, op, inputs, attributes, outputs, tmp_path)
    got = onnx_run(graph, feeds)
    for name, want in expected.items():
        assert got[name].dtype == want.dtype and got[name].shape == want.shape, name
        np.testing.assert_allclose(got[name], want, atol=1e-5, rtol=1e-5, err_msg=f"{case} output {name}")


def test_the_cases_cover_every_op_in_the_registry():
    missing = set(rml.op_schema()) - {case[1] for case in CASES}
    assert not missing, f"ops with no ONNX Runtime case: {sorted(missing)}"
