"""The bad-input catalogue through the Python binding: every fixture of
tests/bad_inputs/expected.tsv raises rml.Error at its stage with its code as an
rml.ErrorCode (the C++ API and the CLI are checked in tests/test_bad_inputs.cpp)."""
import json
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rml

FOLDER = Path(__file__).resolve().parents[1] / "bad_inputs"


def catalogue():
    rows = []
    for line in (FOLDER / "expected.tsv").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, stage, code, _ = line.split("\t")
            rows.append((name, stage, code))
    return rows


def inputs_for(name):
    """The fixture's own inputs, or zeros of each input's declared type."""
    given = FOLDER / f"{name}.inputs.safetensors"
    if given.exists():
        return rml.read_tensors(str(given))
    doc = json.loads((FOLDER / f"{name}.json").read_text(encoding="utf-8"))
    declared = {v["id"]: v for v in doc["values"]}
    return {i["name"]: np.zeros(declared[i["value"]]["shape"], dtype=np.float32 if declared[i["value"]]["dtype"] == "f32"
                                else np.int32) for i in doc["inputs"]}


def outcome(name):
    """(stage, code name) of the first refusal, or ("ok", "-")."""
    stage = "load"
    try:
        model = rml.load(str(FOLDER / f"{name}.json"))
        stage = "run"
        try:
            feeds = inputs_for(name)
        except ValueError:
            # numpy refuses a shape whose dimensions' product overflows even when one of them is
            # 0 ([0, 2^61] f32): such a run cannot be asked for from Python. The C++ and CLI
            # catalogue tests run these fixtures.
            return "ok (numpy cannot hold the inputs)", "-"
        model.run(feeds)
        model.evaluate(feeds)
        return "ok", "-"
    except rml.Error as e:
        assert isinstance(e.code, rml.ErrorCode), e
        return stage, e.code.name


@pytest.mark.parametrize("name,stage,code", catalogue(), ids=[row[0] for row in catalogue()])
def test_fixture_yields_its_code(name, stage, code):
    got_stage, got_code = outcome(name)
    assert (got_stage.split()[0], got_code) == (stage, code)


def test_no_fixture_allocates_past_8_gib_or_runs_past_60_s():
    """The catalogue again, in a child process whose address space is capped at 8 GiB and whose
    time at 60 s: a fixture that made rml allocate what its shapes declare would end in a
    MemoryError (or be killed) there instead of reaching its code."""
    cap = 8 << 30
    child = ("import json, sys\n"
             f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
             "import test_bad_inputs as t\n"
             "print(json.dumps([[name, *t.outcome(name)] for name, _, _ in t.catalogue()]))\n")
    result = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60,
                            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (cap, cap)))
    assert result.returncode == 0, result.stderr[-2000:]
    got = {name: (stage.split()[0], code) for name, stage, code in json.loads(result.stdout)}
    assert got == {name: (stage, code) for name, stage, code in catalogue()}


def test_error_codes_match_the_cli_listing(run_rml):
    listed = [line.split()[:2] for line in run_rml("errors").stdout.splitlines()]
    assert [(int(number), name) for number, name in listed] == [(int(c), c.name) for c in rml.ErrorCode.__members__.values()]


def test_limits_bound_a_load_and_name_the_limit():
    example = str(Path(__file__).resolve().parents[2] / "examples" / "tiny_classifier.json")
    assert rml.load(example, limits={"max_nodes": 100}).node_count > 1
    with pytest.raises(rml.Error, match=r"LoadOptions::max_nodes") as caught:
        rml.load(example, limits={"max_nodes": 1})
    assert caught.value.code == rml.ErrorCode.limit_exceeded
    with pytest.raises(rml.Error, match="unknown limit 'max_bogus'") as caught:
        rml.load(example, limits={"max_bogus": 1})
    assert caught.value.code == rml.ErrorCode.invalid_argument


def test_export_errors_raised_in_python_carry_the_class_code():
    with pytest.raises(rml.ExportError) as caught:
        raise rml.ExportError("no lowering for aten.frobnicate")
    assert caught.value.code == rml.ErrorCode.export_unsupported
    builder = rml.Builder()
    x = builder.input("x", np.zeros([2], np.float32))
    with pytest.raises(rml.ExportError) as caught:  # from C++: the Builder's own code
        builder.op("frobnicate", [x])
    assert caught.value.code == rml.ErrorCode.unknown_op
