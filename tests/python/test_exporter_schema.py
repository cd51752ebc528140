"""Every rml op and attribute name the exporters' lowerings hand to the Builder is in the
op registry (`rml.op_schema()`), checked statically by tools/exporter_lowerings.py: a
misspelt op or attribute fails here, with its file and line, before any model meets it."""
import ast
import sys
from collections import Counter
from pathlib import Path

import pytest

import rml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
from exporter_coverage import EXPORTERS, TABLE, emitted_ops, registrations  # noqa: E402
from exporter_lowerings import FACTS, Analysis, schema_problems  # noqa: E402

# The task's two mistakes, in the exporters' own style.
MISTAKES = '''
class Lowering:
    def op(self, name, inputs, attrs=None):
        return self.b.op(name, inputs, attrs or {})


def _frobnicate(L, x):
    return L.op("frobnicate", [x])


def _softmax(L, x):
    return L.op("softmax", [x], {"axes": [1]})
'''

# Each way an op name or attribute reaches the Builder, with a mistake on every line marked
# "# wrong"; the other names are right, so a line reported but not marked fails too.
FORMS = '''
LOWERINGS = {}
UNARY = {"Neg": "neg", "Frob": "frob_unary"}  # wrong
for _op, _name in UNARY.items():
    LOWERINGS[_op] = (lambda name: lambda L, x: L.op(name, [x]))(_name)


class Lowering:
    def op(self, name, inputs, attrs=None):
        return self.b.op(name, inputs, attrs or {})

    def binary(self, name, a, b):
        return self.op(name, [a, b])


def _reduction(name):
    def lower(L, x):
        return L.op(name, [x], dict(axes=[0], keepdims=True))  # wrong
    return lower


LOWERINGS["Sum"] = _reduction("reduce_sum")
LOWERINGS["Prod"] = _reduction("reduce_prod")  # wrong


def nchw_op(L, x, name, attrs):
    return L.op(name, [x], attrs)


def _pool(name):
    def lower(L, x):
        attrs = {"kernel": [2, 2], "strides": [2, 2]}
        if name == "avg_pool2d":
            attrs["count_include_pad"] = False
        else:
            attrs["ceil_mode"] = True  # wrong
        return nchw_op(L, x, name, attrs)
    return lower


LOWERINGS["MaxPool"] = _pool("max_pool2d")
LOWERINGS["AvgPool"] = _pool("avg_pool2d")
COMPARE = {"EQ": "eq", "NE": "not_equal"}  # wrong


def _compare(L, x, y, direction):
    window = {"k": 1,
              "axis": -1}  # wrong
    values, _ = L.b.op_multi("top_k", [x], 2, attrs={**window})
    return L.binary(COMPARE[direction], values, L.binary("maximun", x, y))  # wrong


def _from_the_graph(L, x, mode):
    return L.op(mode, [x])  # wrong: which op is known only at run time
'''


@pytest.fixture(scope="module")
def schema():
    return rml.op_schema()


@pytest.fixture(scope="module")
def analysis():
    return Analysis.of_package()


@pytest.fixture(scope="module")
def exporter_uses(analysis):
    return analysis.op_uses()


def test_exporters_name_only_ops_and_attributes_the_registry_has(exporter_uses, schema):
    problems = schema_problems(*exporter_uses, schema)
    assert not problems, "exporter lowerings name what the op registry lacks:\n" + "\n".join(problems)


def test_the_analysis_finds_every_exporters_lowerings(exporter_uses):
    uses, _ = exporter_uses
    assert len(uses) >= 250, f"only {len(uses)} op uses found in the package: is the scan broken?"
    assert len({u.op for u in uses}) >= 40, "the exporters name nearly every registry op"
    attributes = Counter(name for u in uses for name in u.attributes)
    assert attributes["axes"] >= 20 and attributes["shape"] >= 10


# Methods of the lowering state that only read (shapes, dtypes, attributes, known values).
QUERIES = {"shape", "rank", "dtype", "attr", "constant"}

def emits(lowering) -> bool:
    """Whether a lowering may emit an op, read from its own body: it calls a method of the
    lowering state other than a query, or hands the state to a helper."""
    state = lowering.node.args.args[0].arg
    for call in (n for n in ast.walk(lowering.node) if isinstance(n, ast.Call)):
        on_state = isinstance(call.func, ast.Attribute) and getattr(call.func.value, "id", None) == state
        if (on_state and call.func.attr not in QUERIES) or any(getattr(a, "id", None) == state for a in call.args):
            return True
    return False


@pytest.mark.parametrize("exporter", EXPORTERS, ids=lambda e: Path(e.path).stem)
def test_every_table_entry_that_emits_resolves_to_an_op(analysis, exporter):
    """Wherever a lowering's recipe lives (the exporter or the shared lowering layer), the
    scan follows it from the table entry to the rml ops it names."""
    table = registrations(analysis, analysis.sources[exporter.path], TABLE)
    assert len(table) >= 20, f"only {len(table)} table entries found in {exporter.path}: is the scan broken?"
    unresolved = []
    for op, lowering in table.items():
        env = {FACTS: {exporter.facts: op}} if exporter.facts else {}
        if emits(lowering) and not emitted_ops(analysis, lowering, env, lowering.node.args.args[0].arg):
            unresolved.append(op)
    assert not unresolved, f"{exporter.path}: no rml op found for {unresolved}"


def test_the_check_reports_an_unknown_op_and_attribute(schema):
    problems = schema_problems(*Analysis({"pkg/mistakes.py": MISTAKES}).op_uses(), schema)
    lines = MISTAKES.splitlines()
    frobnicate, softmax = (next(i for i, line in enumerate(lines, 1) if word in line) for word in ('"frobnicate"', '"axes"'))
    assert f"pkg/mistakes.py:{frobnicate}: rml op 'frobnicate' is not in the op registry" in problems
    assert any(p.startswith(f"pkg/mistakes.py:{softmax}: rml op 'softmax'") and "no attribute 'axes'" in p
               for p in problems), problems
    assert len(problems) == 2, problems


def test_the_check_follows_every_form_to_the_line_at_fault(schema):
    problems = schema_problems(*Analysis({"pkg/forms.py": FORMS}).op_uses(), schema)
    reported = sorted({int(p.split(":")[1]) for p in problems})
    marked = [i for i, line in enumerate(FORMS.splitlines(), 1) if "# wrong" in line]
    assert reported == marked, "\n".join(problems)
