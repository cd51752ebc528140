// The Builder: checked construction, examples, folding, outputs, evaluate, write.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "rml/core/canonical.hpp"
#include "test_util.hpp"

using namespace rml;
using rml::test::TempDir;

TEST_CASE("every value carries an example computed by the reference kernels") {
  Builder b;
  const auto x = b.input("x", Tensor::from<float>({2}, {1, -4}));
  const auto y = b.op(Relu{}, {x});
  const auto z = b.op("mul", {y, x});
  CHECK(b.example(y).bitwise_equal(Tensor::from<float>({2}, {1, 0})));
  CHECK(b.example(z).bitwise_equal(Tensor::from<float>({2}, {1, -0.0f})));
  CHECK(b.type(z) == TensorType{DType::f32, {2}});
  CHECK(b.graph().nodes.size() == 2);
}

TEST_CASE("an op whose inputs are all constant folds to a constant, adding no node") {
  Builder b;
  const auto c = b.constant(Tensor::from<float>({2}, {1, 4}));
  const auto folded = b.op(Sqrt{}, {c});
  CHECK(b.is_constant(folded));
  CHECK(b.graph().nodes.empty());
  CHECK(b.example(folded).bitwise_equal(Tensor::from<float>({2}, {1, 2})));
  const auto x = b.input("x", TensorType{DType::f32, {2}});
  const auto y = b.op(Add{}, {x, folded});
  CHECK_FALSE(b.is_constant(y));
  CHECK(b.graph().nodes.size() == 1);
}

TEST_CASE("a layout op folded on a named parameter keeps a name derived from it") {
  Builder b;
  const auto w = b.constant(Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6}), "fc.weight");
  const auto t = b.op(Transpose{{1, 0}}, {w});
  const auto again = b.op(Transpose{{1, 0}}, {w});
  const auto r = b.op(Reshape{{6}}, {t});
  const auto computed = b.op(Sqrt{}, {w});
  CHECK(b.graph().values[t].name == "fc.weight.transpose");
  CHECK(b.graph().values[again].name == "fc.weight.transpose.2");
  CHECK(b.graph().values[r].name == "fc.weight.transpose.reshape");
  CHECK(b.graph().values[computed].name.empty());  // not a layout op: a new array, unnamed
  CHECK(b.graph().nodes.empty());
}

TEST_CASE("by-name ops take JSON attributes; typed and by-name ops build the same node") {
  Builder b;
  const auto x = b.input("x", Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  const auto t1 = b.op(Transpose{{1, 0}}, {x});
  const auto t2 = b.op("transpose", {x}, Json{{"perm", {1, 0}}});
  CHECK(same_op(b.graph().nodes[0].op, b.graph().nodes[1].op));
  CHECK(b.example(t1).bitwise_equal(b.example(t2)));
  CHECK(b.type(t2).shape == Shape{3, 2});
}

TEST_CASE("the Builder rejects bad ops with ExportErrors naming the op and the values") {
  Builder b;
  const auto x = b.input("x", TensorType{DType::f32, {2, 3}});
  const auto ids = b.input("ids", TensorType{DType::i32, {4}});
  CHECK_THROWS_WITH_AS(b.op("warp", {x}), "unknown op 'warp'", ExportError);
  CHECK_THROWS_WITH_AS(b.op(Exp{}, {ids}), doctest::Contains("op 'exp': input 0 must be f32, got i32"), ExportError);
  CHECK_THROWS_WITH_AS(b.op(Exp{}, {ids}), doctest::Contains("value 1 i32[4]"), ExportError);
  CHECK_THROWS_WITH_AS(b.op(Add{}, {x, ids}), doctest::Contains("input 1 is i32 but input 0 is f32"), ExportError);
  CHECK_THROWS_WITH_AS(b.op(MatMul{}, {x, x}), doctest::Contains("contracted dimensions differ"), ExportError);
  CHECK_THROWS_WITH_AS(b.op(Relu{}, {x, x}), doctest::Contains("takes 1 inputs, got 2"), ExportError);
  CHECK_THROWS_WITH_AS(b.op(Relu{}, {99}), doctest::Contains("value 99 does not exist"), ExportError);
  CHECK_THROWS_WITH_AS(b.op("softmax", {x}, Json{{"axis", 5}}), doctest::Contains("axis 5 is out of range"), ExportError);
  CHECK_THROWS_WITH_AS(b.op("softmax", {x}, Json{{"dim", 1}}), doctest::Contains("unknown attribute 'dim'"), ExportError);
  CHECK(b.graph().nodes.empty());
}

TEST_CASE("op_multi returns every output; op refuses a multi-output op") {
  Builder b;
  const auto x = b.input("x", Tensor::from<float>({4}, {3, 1, 3, 2}));
  const auto out = b.op_multi(TopK{.k = 2}, {x}, 2);
  REQUIRE(out.size() == 2);
  CHECK(b.example(out[0]).bitwise_equal(Tensor::from<float>({2}, {3, 3})));
  CHECK(b.example(out[1]).bitwise_equal(Tensor::from<std::int32_t>({2}, {0, 2})));
  CHECK_THROWS_WITH_AS(b.op(TopK{.k = 2}, {x}), doctest::Contains("gives 2 outputs"), ExportError);
  CHECK_THROWS_WITH_AS(b.op_multi("top_k", {x}, 3, Json{{"k", 1}}), doctest::Contains("gives 2 outputs, 3 were asked for"),
                       ExportError);
}

TEST_CASE("an output that is an input or a constant goes through an identity reshape") {
  Builder b;
  const auto x = b.input("x", Tensor::from<float>({2}, {5, 6}));
  const auto c = b.constant(Tensor::from<float>({1}, {7}));
  b.output("same", x);
  b.output("seven", c);
  REQUIRE(b.graph().nodes.size() == 2);
  CHECK(holds<Reshape>(b.graph().nodes[0].op));
  const auto out = b.evaluate({{"x", Tensor::from<float>({2}, {8, 9})}});
  CHECK(out.at("same").bitwise_equal(Tensor::from<float>({2}, {8, 9})));
  CHECK(out.at("seven").bitwise_equal(Tensor::from<float>({1}, {7})));
  CHECK_THROWS_WITH_AS(b.output("same", x), "output name 'same' is used twice", ExportError);
}

TEST_CASE("names of inputs and named constants must be unique") {
  Builder b;
  b.input("x", TensorType{DType::f32, {1}});
  CHECK_THROWS_AS(b.input("x", TensorType{DType::f32, {1}}), ExportError);
  b.constant(Tensor(), "w");
  CHECK_THROWS_AS(b.constant(Tensor(), "w"), ExportError);
}

TEST_CASE("names must be UTF-8: the Builder refuses others where they are given") {
  Builder b;
  const auto x = b.input("x", TensorType{DType::f32, {1}});
  CHECK_THROWS_WITH_AS(b.input("bad\xff", TensorType{DType::f32, {1}}),
                       "input name 'bad...' is not valid UTF-8 (byte 255 at offset 3)", ExportError);
  CHECK_THROWS_WITH_AS(b.constant(Tensor(), "w\xc3"), doctest::Contains("constant name 'w...' is not valid UTF-8"), ExportError);
  CHECK_THROWS_WITH_AS(b.output("\xed\xa0\x80", b.op(Relu{}, {x})), doctest::Contains("byte 237 at offset 0"), ExportError);  // a surrogate
  b.output("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x99\x82", b.op(Exp{}, {x}));  // multi-byte UTF-8 is fine
  CHECK(b.graph().outputs.size() == 1);
  try {
    b.input("x\x80", TensorType{DType::f32, {1}});
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::invalid_utf8);
  }
}

TEST_CASE("evaluate on new inputs matches the examples for the example inputs") {
  Builder b = test::small_model();
  const auto out = b.evaluate({{"x", b.example(b.graph().inputs[0].value)}});
  CHECK(out.at("y").bitwise_equal(b.example(b.graph().outputs[0].value)));
  const auto other = b.evaluate({{"x", Tensor(DType::f32, {2, 3})}});
  CHECK_FALSE(other.at("y").bitwise_equal(out.at("y")));
}

TEST_CASE("write drops dead code and renumbers densely; reading back evaluates the same, byte-identical twice") {
  TempDir dir;
  Builder b = test::small_model();
  const auto x = b.graph().inputs[0].value;
  b.op(Exp{}, {x});  // dead: no output reads it
  b.write(dir / "m.json");
  b.write(dir / "n.json");
  const Graph g = read_graph(dir / "m.json");
  CHECK(g.nodes.size() == 4);
  CHECK(g.values.size() == 2 + 1 + 4);  // x, w, the inline bias, four node outputs
  const TensorMap in{{"x", Tensor::from<float>({2, 3}, {0.5f, 1, 2, -1, -2, 0})}};
  CHECK(evaluate(g, in).at("y").bitwise_equal(b.evaluate(in).at("y")));
  CHECK(test::slurp(dir / "m.safetensors") == test::slurp(dir / "n.safetensors"));
}

TEST_CASE("a non-finite float attribute is written as a string and reads back as the same value") {
  TempDir dir;
  Builder b;
  const auto x = b.input("x", Tensor::from<float>({1, 2}, {1, -2}));
  b.output("low", b.op(Pad{.pads = {0, 1, 0, 1}, .value = -std::numeric_limits<double>::infinity()}, {x}));
  b.output("nan", b.op(Pad{.pads = {0, 0, 0, 1}, .value = std::numeric_limits<double>::quiet_NaN()}, {x}));
  b.write(dir / "m.json");
  const std::string text = test::slurp(dir / "m.json");
  CHECK(text.find("\"value\":\"-inf\"") != std::string::npos);
  CHECK(text.find("\"value\":\"nan\"") != std::string::npos);

  const TensorMap out = evaluate(read_graph(dir / "m.json"), {{"x", Tensor::from<float>({1, 2}, {1, -2})}});
  const auto low = out.at("low").values<float>();
  CHECK(low[0] == -std::numeric_limits<float>::infinity());
  CHECK(low[1] == 1.0f);
  CHECK(low[3] == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(out.at("nan").values<float>()[2]));

  CHECK_THROWS_WITH_AS(op_from_json("pad", Json{{"pads", {0, 0}}, {"value", "infinity"}}),
                       doctest::Contains("attribute 'value' must be a number, \"inf\", \"-inf\" or \"nan\", got \"infinity\""),
                       Error);
}

TEST_CASE("canonical mapping: floats and booleans to f32, integers to i32, out of range is an error") {
  const std::vector<double> doubles{0.5, -1e40};
  CHECK(canonical_tensor<double>({2}, doubles).dtype() == DType::f32);
  CHECK(std::isinf(canonical_tensor<double>({2}, doubles).values<float>()[1]));
  const bool flags[] = {true, false};
  CHECK(canonical_tensor<bool>({2}, flags).bitwise_equal(Tensor::from<float>({2}, {1, 0})));
  const std::vector<std::int64_t> ok{-5, 2147483647};
  CHECK(canonical_tensor<std::int64_t>({2}, ok).bitwise_equal(Tensor::from<std::int32_t>({2}, {-5, 2147483647})));
  const std::vector<std::int64_t> big{1, 2147483648LL};
  CHECK_THROWS_WITH_AS(canonical_tensor<std::int64_t>({2}, big, "arange"),
                       "arange: element 1: integer 2147483648 is outside the i32 range", ExportError);
  const std::vector<std::uint64_t> huge{4294967295ULL};
  CHECK_THROWS_AS(canonical_tensor<std::uint64_t>({1}, huge), ExportError);
  const std::vector<std::uint8_t> bytes{255};
  CHECK(canonical_tensor<std::uint8_t>({1}, bytes).values<std::int32_t>()[0] == 255);
}
