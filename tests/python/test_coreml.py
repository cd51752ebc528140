"""`rml convert --to coreml` checked by coremltools (pinned in requirements-test.txt),
the consumer of the format that runs on Linux; CoreML itself runs only on Apple's
systems. For every committed fixture and every per-op case (op_cases.py):

1. the package loads as a spec (`coremltools.utils.load_spec`, through the package
   manifest) and as an `MLModel` (without compiling: that needs macOS);
2. its MIL program converts back to a coremltools MIL program (the milproto loader),
   which builds every op again through coremltools' op definitions and infers its
   output types: each op's type, output names, shapes and dtypes equal what rml wrote,
   and every constant holds rml's bytes (the weight blob read by coremltools' reader);
3. the model's inputs and outputs are rml's (names made MIL identifiers, scalars [1]);
4. numbers: with the inputs written in as constants, coremltools' value inference (its
   NumPy form of each MIL op) evaluates the program; where it reaches every output
   (coremltools has no value inference for conv and the pools), the outputs match the
   golden data (fixtures) or rml's reference kernels (op cases) within 1e-5."""
import json
from pathlib import Path

import numpy as np
import pytest

import rml
from conftest import REPO
from op_cases import CASES, build_case

FIXTURES = sorted((REPO / "testdata").glob("*.json"))

# Cases the converter refuses, each with the words its reason must contain.
REFUSED = {
    "reshape_empty": "MIL has no empty tensors",
    "slice_huge_steps_and_empty": "MIL has no empty tensors",
    "conv2d": "MIL convolutions with run-time weights have no dilation",
}

# Fixtures the converter refuses, and why: this unet upsamples through a rank-6
# transpose (the torch and TF unets' rank-6 reshape and broadcast are carried in
# rank 5, their leading axes merged).
NOT_CONVERTIBLE = {"stablehlo_tf_unet": "node 10 (transpose) -> 'value_22': coreml: MIL tensors have rank at most 5"}

# MIL ops coremltools 9.0 cannot evaluate (no value inference): a program holding
# one is checked for structure only.
NOT_EVALUATED = {"conv", "max_pool", "avg_pool"}


@pytest.fixture(scope="module")
def ct():
    """coremltools, with two mends to its NumPy value inference (the test's oracle, not
    CoreML): its reductions pass NumPy 2 a numpy.bool as `keepdims`, which NumPy refuses
    (a TypeError), so they get a bool; and its cumsum's exclusive branch calls
    np.zeros(shape, data) (a TypeError) and would not drop the last sum, so exclusive
    sums are computed as MIL defines them (the sums before each element)."""
    import coremltools
    from coremltools.converters.mil.mil import precondition
    from coremltools.converters.mil.mil.operation import VALUE
    from coremltools.converters.mil.mil.ops.defs.iOS15.reduction import ReductionAxes
    from coremltools.converters.mil.mil.ops.defs.iOS15.tensor_operation import cumsum
    from coremltools.converters.mil.mil.types import nptype_from_builtin

    @precondition(allow=VALUE)
    def value_inference(self):
        axes = tuple(self.axes.val) if self.axes is not None else None
        result = self.get_operator()(self.x.val, axis=axes, keepdims=bool(self.keep_dims.val))
        return result.astype(nptype_from_builtin(self.x.dtype))

    @precondition(allow=VALUE)
    def cumsum_value_inference(self):
        axis, data = int(self.axis.val), np.copy(self.x.val)
        data = np.flip(data, axis) if self.reverse.val else data
        sums = np.cumsum(data, axis=axis)
        if self.exclusive.val:
            sums = sums - data
        return np.flip(sums, axis) if self.reverse.val else sums

    originals = ReductionAxes.value_inference, cumsum.value_inference
    ReductionAxes.value_inference, cumsum.value_inference = value_inference, cumsum_value_inference
    yield coremltools
    ReductionAxes.value_inference, cumsum.value_inference = originals


@pytest.fixture
def coreml_package(run_rml, tmp_path):
    def convert(graph_path):
        package = tmp_path / (Path(graph_path).stem + ".mlpackage")
        run_rml("convert", graph_path, "--to", "coreml", "-o", package)
        return package

    return convert


def _main_block(spec):
    function = spec.mlProgram.functions["main"]
    return function, function.block_specializations[function.opset]


def _load_program(ct, spec, package):
    from coremltools.converters.mil.frontend.milproto.load import load

    return load(spec, spec.specificationVersion, str(package / "Data" / "com.apple.CoreML" / "weights"))


def _written_ops(spec):
    """(op type, [(output name, MIL dtype name, shape)]) per op, as rml wrote them."""
    from coremltools.proto import MIL_pb2

    _, block = _main_block(spec)
    return [(op.type, [(out.name, MIL_pb2.DataType.Name(out.type.tensorType.dataType),
                        [d.constant.size for d in out.type.tensorType.dimensions]) for out in op.outputs])
            for op in block.operations]


def _loaded_ops(program):
    """The same, for the program coremltools built from them."""
    from coremltools.converters.mil.mil import types

    names = {types.fp32: "FLOAT32", types.int32: "INT32", types.bool: "BOOL", types.str: "STRING"}
    return [(op.op_type, [(v.name, names.get(v.dtype, str(v.dtype)), [int(d) for d in v.shape]) for v in op.outputs])
            for op in program.functions["main"].operations]


def _identifiers(names):
    """rml names as the converter makes them MIL identifiers (first come, first served)."""
    taken, out = set(), []
    for name in names:
        base = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
        base = "_" + base if not base or base[0].isdigit() else base
        candidate, n = base, 1
        while candidate in taken:
            candidate, n = f"{base}_{n}", n + 1
        taken.add(candidate)
        out.append(candidate)
    return out


def _evaluate(ct, spec, package, feeds):
    """The outputs coremltools' value inference gives with `feeds` (by MIL input name)
    written in as constants; None where an op on the way has no value inference."""
    from coremltools.proto import MIL_pb2

    function, block = _main_block(spec)
    constants = []
    for declared in function.inputs:
        value = np.asarray(feeds[declared.name])
        op = MIL_pb2.Operation(type="const")
        op.outputs.add().CopyFrom(declared)
        val = op.attributes["val"]
        val.type.CopyFrom(declared.type)
        flat = value.ravel().tolist()
        (val.immediateValue.tensor.floats if value.dtype == np.float32 else val.immediateValue.tensor.ints).values.extend(flat)
        name = op.attributes["name"]
        name.type.tensorType.dataType = MIL_pb2.STRING
        name.immediateValue.tensor.strings.values.append(declared.name)
        constants.append(op)
    operations = list(block.operations)
    del block.operations[:]
    block.operations.extend(constants + operations)
    del function.inputs[:]
    program = _load_program(ct, spec, package)
    return {v.name: v.val for v in program.functions["main"].outputs}, program


def _input_vars(op):
    for value in op.inputs.values():
        yield from value if isinstance(value, (list, tuple)) else [value]


def check_package(ct, package, graph_path, feeds, expected, weights=None):
    """Points 1-4 above for one converted graph. feeds / expected by rml name."""
    graph = json.loads(Path(graph_path).read_text())
    spec = ct.utils.load_spec(str(package))
    ct.models.MLModel(str(package), skip_model_load=True)

    # 2. Every op coremltools builds again has the types rml wrote.
    program = _load_program(ct, spec, package)
    # coremltools adds const ops of its own for the defaults of optional inputs.
    written, loaded = _written_ops(spec), _loaded_ops(program)
    loaded_constants = {outputs[0][0]: outputs for op, outputs in loaded if op == "const"}
    for op, wrote in written:
        if op == "const":
            assert loaded_constants.get(wrote[0][0]) == wrote, f"constant {wrote[0][0]}"
    computed = [(op, outputs) for op, outputs in written if op != "const"]
    rebuilt = [(op, outputs) for op, outputs in loaded if op != "const"]
    assert [op for op, _ in rebuilt] == [op for op, _ in computed]
    for (op, wrote), (_, built) in zip(computed, rebuilt):
        assert built == wrote, f"{op}: coremltools infers {built}, rml wrote {wrote}"
    if weights:
        constants = {op.outputs[0].name: op.outputs[0].val for op in program.functions["main"].operations if op.op_type == "const"}
        for value in graph["values"]:
            if "weight" in value:
                mil_name = _identifiers([value["name"]])[0] if "name" in value else f"v{value['id']}"
                want = weights[value["weight"]]
                assert mil_name in constants, f"weight {value['weight']} is not the constant {mil_name}"
                assert np.array_equal(np.asarray(constants[mil_name]).reshape(want.shape), want), mil_name

    # 3. The boundary.
    in_names = _identifiers([e["name"] for e in graph["inputs"]] + [e["name"] for e in graph["outputs"]])
    declared = list(spec.description.input) + list(spec.description.output)
    assert [d.name for d in declared] == in_names
    rml_shapes = [list(feeds[e["name"]].shape) for e in graph["inputs"]] + [list(expected[e["name"]].shape) for e in graph["outputs"]]
    assert [list(d.type.multiArrayType.shape) for d in declared] == [s or [1] for s in rml_shapes]

    # 4. The numbers, where coremltools can evaluate every op: {rml output name: array}.
    mil_feeds = {mil: feeds[e["name"]].reshape(feeds[e["name"]].shape or (1,))
                 for mil, e in zip(in_names, graph["inputs"])}
    got, evaluated = _evaluate(ct, spec, package, mil_feeds)
    blind = {op.op_type for op in evaluated.functions["main"].operations
             if op.outputs[0].val is None and all(v.val is not None for v in _input_vars(op))}
    if any(value is None for value in got.values()):
        assert blind and blind <= NOT_EVALUATED, f"coremltools did not evaluate {sorted(blind)}"
        return None
    return {e["name"]: np.asarray(got[mil]).reshape(expected[e["name"]].shape)
            for mil, e in zip(in_names[len(graph["inputs"]):], graph["outputs"])}


def assert_close(got, expected, names):
    for name in names:
        want = expected[name]
        assert got[name].dtype == want.dtype, name
        worst = float(np.max(np.abs(got[name].astype(np.float64) - want), initial=0.0))
        assert worst <= 1e-5, f"output '{name}': coremltools' evaluation differs by {worst:.3g}"


@pytest.mark.parametrize("graph", FIXTURES, ids=lambda p: p.stem)
def test_the_fixture_round_trips_through_coremltools(graph, ct, coreml_package, run_rml):
    if graph.stem in NOT_CONVERTIBLE:
        check = run_rml("convert", graph, "--to", "coreml", "--check", check=False)
        assert check.returncode == 1 and NOT_CONVERTIBLE[graph.stem] in check.stdout, check.stdout
        return
    golden = rml.read_tensors(str(graph.with_suffix("").with_suffix(".golden.safetensors")))
    entries = json.loads(graph.read_text())
    feeds = {e["name"]: golden[e["name"]] for e in entries["inputs"]}
    weights_file = graph.with_suffix(".safetensors")
    weights = rml.read_tensors(str(weights_file)) if weights_file.exists() else None
    got = check_package(ct, coreml_package(graph), graph, feeds, golden, weights)
    uses_conv_or_pool = any(n["op"] in ("conv2d", "max_pool2d", "avg_pool2d") for n in entries["nodes"])
    assert (got is None) == uses_conv_or_pool, "coremltools' evaluation reach changed"
    if got is not None:
        assert_close(got, golden, [e["name"] for e in entries["outputs"]])


@pytest.mark.parametrize("case, op, inputs, attributes, outputs", CASES, ids=[c[0] for c in CASES])
def test_the_op_round_trips_through_coremltools(case, op, inputs, attributes, outputs, ct, tmp_path, coreml_package, run_rml):
    graph, feeds, expected = build_case(case, op, inputs, attributes, outputs, tmp_path)
    if case in REFUSED:
        check = run_rml("convert", graph, "--to", "coreml", "--check", check=False)
        assert check.returncode == 1 and REFUSED[case] in check.stdout, check.stdout
        return
    got = check_package(ct, coreml_package(graph), graph, feeds, expected)
    assert (got is None) == (op in ("conv2d", "max_pool2d", "avg_pool2d")), "coremltools' evaluation reach changed"
    if got is None:
        return
    if op != "top_k":
        return assert_close(got, expected, expected)
    # MIL leaves the order of tied values open (coremltools' NumPy form sorts
    # unstably): the values must be rml's, the indices point at them.
    assert_close(got, expected, ["y0"])
    assert np.array_equal(np.take_along_axis(inputs[0], got["y1"], axis=-1), expected["y0"])
    assert all(len(set(row)) == len(row) for row in got["y1"].reshape(-1, got["y1"].shape[-1]).tolist())


def test_scalars_and_outputs_without_an_op_of_their_own_round_trip(ct, tmp_path, coreml_package):
    """The boundary: a scalar input is declared [1] and reshaped, scalar outputs are
    reshaped to [1], an input and a constant given as outputs pass through identity,
    and a reshape to a scalar inside the program stays a scalar."""
    b = rml.Builder()
    scale = b.input("scale", np.float32(2.5).reshape(()))
    x = b.input("x.0", np.arange(3, dtype=np.float32))
    total = b.op("reduce_sum", [b.op("mul", [x, scale])], {"axes": [0]})
    b.output("total", total)
    b.output("again", b.op("reshape", [b.op("reshape", [total], {"shape": [1]})], {"shape": []}))
    b.output("x_out", x)
    b.output("ones", b.constant(np.ones((2,), np.float32), "ones"))
    graph = tmp_path / "boundary.json"
    b.write(str(graph), clean_up=False)
    feeds = {"scale": np.float32(2.5).reshape(()), "x.0": np.arange(3, dtype=np.float32)}
    expected = rml.load(str(graph)).evaluate(feeds)
    got = check_package(ct, coreml_package(graph), graph, feeds, expected)
    assert_close(got, expected, expected)
    spec = ct.utils.load_spec(str(tmp_path / "boundary.mlpackage"))
    assert [(f.name, list(f.type.multiArrayType.shape)) for f in spec.description.input] == [("scale", [1]), ("x_0", [3])]
