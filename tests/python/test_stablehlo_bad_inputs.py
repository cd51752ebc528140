"""StableHLO modules the importer must reject by name: the findings of
tests/fuzz/fuzz_stablehlo.py, each reduced to the smallest module text that
reproduces it. Each once escaped as another exception (or took minutes);
`export` must raise rml.ExportError naming what is wrong."""
import numpy as np
import pytest

import rml
from rml import from_stablehlo
from rml.from_stablehlo import export


def module(body: str, signature: str = "() -> tensor<i32>", functions: str = "") -> str:
    return f"func.func @main{signature} {{\n{body}\n}}\n{functions}"


def test_integer_power_with_a_negative_exponent():
    text = module("""
  %a = stablehlo.constant dense<2> : tensor<i32>
  %b = stablehlo.constant dense<-3> : tensor<i32>
  %0 = stablehlo.power %a, %b : tensor<i32>
  return %0 : tensor<i32>""")
    with pytest.raises(rml.ExportError, match=r"stablehlo.power: power of integers with a negative exponent"):
        export(text, None, [])


def test_nested_loops_past_the_total_trip_limit(monkeypatch):
    monkeypatch.setattr(from_stablehlo, "MAX_TOTAL_TRIPS", 100)
    text = module("""
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<20> : tensor<i32>
  %0:2 = stablehlo.while(%i = %zero, %x = %arg0) : tensor<i32>, tensor<2xf32>
  cond {
    %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %1:2 = stablehlo.while(%j = %zero, %y = %x) : tensor<i32>, tensor<2xf32>
    cond {
      %c = stablehlo.compare LT, %j, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %j1 = stablehlo.add %j, %one : tensor<i32>
      %y1 = stablehlo.negate %y : tensor<2xf32>
      stablehlo.return %j1, %y1 : tensor<i32>, tensor<2xf32>
    }
    %i1 = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %i1, %1#1 : tensor<i32>, tensor<2xf32>
  }
  return %0#1 : tensor<2xf32>""", "(%arg0: tensor<2xf32>) -> tensor<2xf32>")
    with pytest.raises(rml.ExportError, match=r"stablehlo.while: the module's loops run more than 100 trips in all"):
        export(text, None, [np.zeros(2, np.float32)])


def test_a_call_of_a_declaration_without_a_body():
    text = module("""
  %0 = func.call @f(%arg0) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>""", "(%arg0: tensor<2xf32>) -> tensor<2xf32>",
                  "func.func private @f(tensor<2xf32>) -> tensor<2xf32>")
    with pytest.raises(rml.ExportError, match=r"func.call: @f is a declaration without a body"):
        export(text, None, [np.zeros(2, np.float32)])


def test_main_a_declaration_without_a_body():
    with pytest.raises(rml.ExportError, match=r"@main is a declaration without a body"):
        export("func.func private @main(tensor<2xf32>) -> tensor<2xf32>", None, [np.zeros(2, np.float32)])


def test_dynamic_shapes_fail_by_name():
    text = module("""
  %0 = stablehlo.negate %arg0 : tensor<?xf32>
  return %0 : tensor<?xf32>""", "(%arg0: tensor<?xf32>) -> tensor<?xf32>")
    with pytest.raises(rml.ExportError, match=r"tensor<\?xf32> have no rml equivalent \(static shapes only\)"):
        export(text, None, [np.zeros(1, np.float32)])


@pytest.mark.parametrize("op", [
    "%0 = stablehlo.iota dim = 0 : tensor<100000000000xf32>",
    "%0 = stablehlo.constant dense<1.0> : tensor<100000000000xf32>",
])
def test_a_constant_past_the_element_limit(op):
    text = module(f"""
  {op}
  return %0 : tensor<100000000000xf32>""", "() -> tensor<100000000000xf32>")
    with pytest.raises(rml.ExportError, match=r"result #0 of shape \(100000000000,\) has 100000000000 elements, "
                                              r"more than the limit of 2147483648 for one value"):
        export(text, None, [])


def test_a_broadcast_past_the_element_limit():
    text = module("""
  %0 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> tensor<100000x100000xf32>
  %1 = stablehlo.reduce(%0 init: %arg0) applies stablehlo.add across dimensions = [0, 1]
      : (tensor<100000x100000xf32>, tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>""", "(%arg0: tensor<f32>) -> tensor<f32>")
    with pytest.raises(rml.ExportError, match=r"stablehlo.broadcast_in_dim: result #0 .* has 10000000000 elements"):
        export(text, None, [np.zeros((), np.float32)])


def nested_ifs(depth: int) -> str:
    body = "stablehlo.return %arg0 : tensor<f32>"
    for k in range(depth):
        body = (f'%r{k} = "stablehlo.if"(%p) ({{\n{body}\n}}, {{\nstablehlo.return %arg0 : tensor<f32>\n}})'
                f" : (tensor<i1>) -> tensor<f32>\nstablehlo.return %r{k} : tensor<f32>")
    body = body[:body.rindex("stablehlo.return")] + f"return %r{depth - 1} : tensor<f32>"
    return module("%p = stablehlo.constant dense<true> : tensor<i1>\n" + body, "(%arg0: tensor<f32>) -> tensor<f32>")


def test_regions_nested_past_the_limit():
    x = np.float32(2)
    assert export(nested_ifs(100), None, [x]).evaluate({"input.0": x})["output"] == 2
    with pytest.raises(rml.ExportError, match=r"stablehlo.if: regions and inlined calls nest more than 128 deep"):
        export(nested_ifs(300), None, [x])


def test_composites_calling_each_other_past_the_limit():
    functions = "\n".join(f"""func.func private @f{i}(%arg0: tensor<f32>) -> tensor<f32> {{
  %0 = stablehlo.composite "x.y" %arg0 {{decomposition = @f{i + 1}}} : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}}""" for i in range(300))
    text = module("""
  %0 = func.call @f0(%arg0) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>""", "(%arg0: tensor<f32>) -> tensor<f32>",
                  functions + "\nfunc.func private @f300(%arg0: tensor<f32>) -> tensor<f32> {\n"
                  "  return %arg0 : tensor<f32>\n}")
    with pytest.raises(rml.ExportError, match=r"stablehlo.composite: func.call of @f64 nests too deeply \(recursion\?\)"):
        export(text, None, [np.zeros((), np.float32)])


@pytest.mark.parametrize("attributes", ['k = "two"', "k = 2 : i64, largest = 3 : i64"])
def test_a_top_k_composite_with_other_attributes_inlines_its_decomposition(attributes):
    text = module(f"""
  %0:2 = stablehlo.composite "chlo.top_k" %arg0 {{composite_attributes = {{{attributes}}}, decomposition = @d}}
      : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xi32>)
  return %0#0 : tensor<2xf32>""", "(%arg0: tensor<4xf32>) -> tensor<2xf32>", """
func.func private @d(%arg0: tensor<4xf32>) -> (tensor<2xf32>, tensor<2xi32>) {
  %0:2 = chlo.top_k(%arg0, k = 2) : tensor<4xf32> -> (tensor<2xf32>, tensor<2xi32>)
  %1 = stablehlo.negate %0#0 : tensor<2xf32>
  return %1, %0#1 : tensor<2xf32>, tensor<2xi32>
}""")
    x = np.array([3, 1, 4, 2], np.float32)
    np.testing.assert_array_equal(export(text, None, [x]).evaluate({"input.0": x})["output"], [-4, -3])


def test_an_empty_broadcast_constant_with_a_huge_axis_writes_and_runs_at_once(tmp_path):
    """Accepted, not refused: a broadcast of a constant to [2^40, 0] folds into an empty
    constant, which the clean-up passes once compared row by row, 2^40 empty rows (a
    fuzz time-out). The graph must write, load and run in no time."""
    text = module("""
  %c = stablehlo.constant dense<4.0> : tensor<f32>
  %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<1099511627776x0xf32>
  %1 = stablehlo.add %arg0, %0 : tensor<1099511627776x0xf32>
  return %1 : tensor<1099511627776x0xf32>""", "(%arg0: tensor<1099511627776x0xf32>) -> tensor<1099511627776x0xf32>")
    x = np.zeros((2**40, 0), np.float32)
    builder = export(text, None, [x])
    builder.write(str(tmp_path / "m.json"))
    (y,) = rml.load(str(tmp_path / "m.json")).run({"input.0": x}).values()
    assert y.shape == (2**40, 0)


@pytest.mark.parametrize("reference, words", [
    ("%0#1111111113", r"result number #1111111113 is beyond 65535"),
    ("%0#" + "9" * 5000, r"result number #99999999999999999999 is beyond 65535"),
])
def test_a_huge_result_number_is_refused_before_jaxlib_parses_it(reference, words):
    """A fuzz finding: jaxlib's MLIR parser took 17 GB for `%2#1111111113` (an op with
    four results) before it said "reference to invalid result number". The importer
    refuses the number before the parser sees the text."""
    text = module(f"""
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %zero, %j = %arg0) : tensor<i32>, tensor<i32>
    cond {{
      %c = stablehlo.constant dense<2> : tensor<i32>
      %t = stablehlo.compare LT, %i, %c : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %t : tensor<i1>
    }} do {{
      %one = stablehlo.constant dense<1> : tensor<i32>
      %next = stablehlo.add %i, %one : tensor<i32>
      %sum = stablehlo.add %j, %i : tensor<i32>
      stablehlo.return %next, %sum : tensor<i32>, tensor<i32>
    }}
  return {reference} : tensor<i32>""", "(%arg0: tensor<i32>) -> tensor<i32>")
    with pytest.raises(rml.ExportError, match=words):
        export(text, None, [np.zeros((), np.int32)])
    small = text.replace(reference, "%0#1")
    assert export(small, None, [np.zeros((), np.int32)]) is not None


@pytest.mark.parametrize("numbers", [
    "[b, f, 0, 2147483647]x[o, i, 0, 1]->[b, f, 0, 1]",
    "[b, f, 0, 1]x[o, i, 0, 2147483647]->\ufffdb, f, 0, 1]",  # a fuzz finding: the last group's bracket mangled
])
def test_a_huge_convolution_dimension_number_is_refused_before_jaxlib_parses_it(numbers):
    """jaxlib's parser allocates about 8 bytes per spatial index written there (more than
    2 GB for 2147483647) before it rejects the module."""
    text = module(f"""
  %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = {numbers}, window = {{}} {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}} : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>""", "(%arg0: tensor<1x1x3x3xf32>, %arg1: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>")
    inputs = [np.zeros((1, 1, 3, 3), np.float32), np.zeros((1, 1, 2, 2), np.float32)]
    with pytest.raises(rml.ExportError, match=r"convolution dimension number 2147483647 is beyond 65535"):
        export(text, None, inputs)
    (y,) = export(text.replace("2147483647", "1").replace("\ufffd", "["), None, inputs).evaluate(
        {"input.0": inputs[0], "input.1": inputs[1]}).values()
    assert y.shape == (1, 1, 2, 2)


def test_a_loop_updating_rows_of_an_empty_constant_with_a_huge_axis_exports_at_once(tmp_path):
    """A fuzz finding (MemoryError): a loop writing rows of a [2^40, 0] constant left it
    in pieces, and joining them took the rows by an index list of 2^40 entries. The
    rows are taken as a view now; the graph must export, write and run."""
    text = '''module @m {
  func.func public @main(%arg0: tensor<1x0xf32>) -> tensor<1099511627776x0xf32> {
    %zero = stablehlo.constant dense<0> : tensor<i32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %two = stablehlo.constant dense<2> : tensor<i32>
    %cst = stablehlo.constant dense<0.0> : tensor<f32>
    %rows = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1099511627776x0xf32>
    %0:2 = stablehlo.while(%i = %zero, %acc = %rows) : tensor<i32>, tensor<1099511627776x0xf32>
    cond {
      %c = stablehlo.compare LT, %i, %two, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %u = stablehlo.dynamic_update_slice %acc, %arg0, %i, %zero : (tensor<1099511627776x0xf32>, tensor<1x0xf32>, tensor<i32>, tensor<i32>) -> tensor<1099511627776x0xf32>
      %n = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %n, %u : tensor<i32>, tensor<1099511627776x0xf32>
    }
    return %0#1 : tensor<1099511627776x0xf32>
  }
}'''
    x = np.zeros((1, 0), np.float32)
    builder = export(text, None, [x])
    builder.write(str(tmp_path / "m.json"))
    (y,) = rml.load(str(tmp_path / "m.json")).run({"input.0": x}).values()
    assert y.shape == (2**40, 0)
