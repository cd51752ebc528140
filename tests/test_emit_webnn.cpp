// The WebNN converter, structurally: the module's text for hand-built graphs.
// Every fixture's module is replayed against WebNN's shape rules under Node,
// and tried in headless Chromium, in the Python tier (tests/python/test_webnn.py).
#include <doctest/doctest.h>

#include "rml/emit/converters.hpp"
#include "test_util.hpp"

using namespace rml;
using namespace rml::emit;

namespace {

ConvertedModel to_webnn(const Builder& b) {
  ConvertOptions options;
  options.model_file_name = "m.js";
  return Converters::convert("webnn", b.graph(), options);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Tensor filled(Shape shape, float value) {
  Tensor t(DType::f32, std::move(shape));
  for (float& v : t.values<float>()) v = value;
  return t;
}

}  // namespace

TEST_CASE("a WebNN module names inputs and outputs as rml does; a value output twice passes through identity") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {2, 3}});
  const ValueId y = b.op(Relu{}, {x});
  b.output("y", y);
  b.output("y_again", y);
  const ConvertedModel m = to_webnn(b);
  CHECK(m.content_type == "text/javascript");
  CHECK(has(m.data, "export const inputs = {\n  \"x\": {dataType: \"float32\", shape: [2, 3]}\n};"));
  CHECK(has(m.data, "const v0 = b.input(\"x\", {dataType: \"float32\", shape: [2, 3]});"));
  CHECK(has(m.data, "const v1 = b.relu(v0);"));
  CHECK(has(m.data, "const t0 = b.identity(v1);"));
  CHECK(has(m.data, "return b.build({\"y\": v1, \"y_again\": t0});"));
  CHECK(has(m.data, "export const sidecar = null;"));
  CHECK_FALSE(m.weights);
}

TEST_CASE("WebNN constants are read from the sidecar at 16-byte aligned offsets") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {3}});
  const ValueId a = b.constant(filled({3}, 1.5f), "a");
  const ValueId c = b.constant(filled({2, 3}, -2.0f), "c");
  b.output("y", b.op(Mul{}, {b.op(Add{}, {x, a}), c}));
  const ConvertedModel m = to_webnn(b);
  REQUIRE(m.weights);
  CHECK(m.weights->file_name == "m.js.bin");
  CHECK(has(m.data, "export const sidecar = \"m.js.bin\";"));
  CHECK(has(m.data, "= constant({dataType: \"float32\", shape: [3]}, 0, 3);"));
  CHECK(has(m.data, "= constant({dataType: \"float32\", shape: [2, 3]}, 16, 6);"));
  REQUIRE(m.weights->data.size() == 16 + 24);
  float second[6];
  std::memcpy(second, m.weights->data.data() + 16, sizeof second);
  CHECK(second[5] == -2.0f);
}

TEST_CASE("WebNN's padding is [top, bottom, left, right]; a counted average pool pads first") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {1, 1, 6, 6}});
  b.output("m", b.op(MaxPool2d{.kernel = {3, 3}, .strides = {1, 1}, .pads = {1, 2, 0, 1}}, {x}));
  b.output("a", b.op(AvgPool2d{.kernel = {2, 2}, .strides = {2, 2}, .pads = {1, 0, 1, 0}, .count_include_pad = true}, {x}));
  const ConvertedModel m = to_webnn(b);
  CHECK(has(m.data, "b.maxPool2d(v0, {windowDimensions: [3, 3], padding: [1, 0, 2, 1]"));
  CHECK(has(m.data, "b.pad(v0, [0, 0, 1, 0], [0, 0, 1, 0])"));
  CHECK(has(m.data, "b.averagePool2d(t0, {windowDimensions: [2, 2], padding: [0, 0, 0, 0]"));
}

TEST_CASE("a negative WebNN slice step reverses the axis and slices a window forwards") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {6, 4}});
  b.output("y", b.op(Slice{.axes = {0}, .starts = {4}, .ends = {-100}, .steps = {-2}}, {x}));
  const ConvertedModel m = to_webnn(b);
  // rows 4, 2, 0 are rows 1, 3, 5 of the reversed axis: a window of 5 from 1, stride 2
  CHECK(has(m.data, "const t0 = b.reverse(v0, {axes: [0]});"));
  CHECK(has(m.data, "b.slice(t0, [1, 0], [5, 4], {strides: [2, 1]})"));
}

TEST_CASE("every registry op but top_k lowers to WebNN, and top_k is refused by name") {
  const auto row = support_row<WebNN>();
  std::size_t op = 0;
  Registry::for_each([&](auto type) {
    using Op = typename decltype(type)::type;
    CHECK_MESSAGE(row[op++] == (Op::name != "top_k"), Op::name);
  });
  Builder b;
  b.output("y", b.op_multi(TopK{.k = 2}, {b.input("x", TensorType{DType::f32, {2, 5}})}, 2)[0]);
  const auto found = Converters::preflight("webnn", b.graph());
  REQUIRE(found.size() == 1);
  CHECK(found[0].reason == "webnn has no lowering for op 'top_k'");
}
