// The TFLite converter, structurally: build a graph by hand, convert it, run
// the flatbuffers Verifier on the bytes, read them back with the accessors
// flatc generated from the schema, and assert what each guarantee promises.
// The numbers are checked by the LiteRT interpreter in the Python tier
// (tests/python/test_tflite.py).
#include <doctest/doctest.h>

#include "rml/emit/converters.hpp"
#include "rml/ir/graph_io.hpp"
#include "test_util.hpp"

using namespace rml;
using namespace rml::emit;
using ::tflite::BuiltinOperator;

namespace {

/// A converted model, verified, with its buffer kept alive.
struct Converted {
  std::string bytes;
  const ::tflite::Model* model = nullptr;

  const ::tflite::SubGraph& graph() const { return *model->subgraphs()->Get(0); }
  BuiltinOperator code(const ::tflite::Operator& op) const {
    return static_cast<BuiltinOperator>(model->operator_codes()->Get(op.opcode_index())->builtin_code());
  }
  std::vector<BuiltinOperator> codes() const {
    std::vector<BuiltinOperator> out;
    for (const ::tflite::Operator* op : *graph().operators()) out.push_back(code(*op));
    return out;
  }
  const ::tflite::Operator& only(BuiltinOperator wanted) const {
    const ::tflite::Operator* found = nullptr;
    for (const ::tflite::Operator* op : *graph().operators())
      if (code(*op) == wanted) {
        REQUIRE_MESSAGE(!found, "more than one ", ::tflite::EnumNameBuiltinOperator(wanted));
        found = op;
      }
    REQUIRE_MESSAGE(found, "no ", ::tflite::EnumNameBuiltinOperator(wanted));
    return *found;
  }
  const ::tflite::Tensor& tensor(std::int32_t index) const { return *graph().tensors()->Get(static_cast<flatbuffers::uoffset_t>(index)); }
  std::vector<std::int32_t> shape(std::int32_t index) const {
    const auto* dims = tensor(index).shape();
    return dims ? std::vector<std::int32_t>(dims->begin(), dims->end()) : std::vector<std::int32_t>{};
  }
  /// A constant tensor's data as 4-byte values.
  template <class T>
  std::vector<T> data(std::int32_t index) const {
    const auto* buffer = model->buffers()->Get(tensor(index).buffer());
    REQUIRE_MESSAGE(buffer->data(), "tensor ", index, " has no data");
    std::vector<T> values(buffer->data()->size() / sizeof(T));
    std::memcpy(values.data(), buffer->data()->data(), values.size() * sizeof(T));
    return values;
  }
};

Converted to_tflite(const Builder& b) {
  Converted c;
  c.bytes = Converters::convert("tflite", b.graph()).data;
  flatbuffers::Verifier verifier(reinterpret_cast<const std::uint8_t*>(c.bytes.data()), c.bytes.size());
  REQUIRE_MESSAGE(::tflite::VerifyModelBuffer(verifier), "the flatbuffers Verifier rejects the model");
  c.model = ::tflite::GetModel(c.bytes.data());
  return c;
}

Tensor ramp(Shape shape) {
  Tensor t(DType::f32, std::move(shape));
  auto v = t.values<float>();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return t;
}

}  // namespace

TEST_CASE("a TFLite model verifies, carries TFL3, and keeps rml's input and output names, in a signature too") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {2, 3}});
  b.output("y", b.op(Relu{}, {x}));
  b.output("x_again", x);  // an input that is also an output: copied under its own name
  const Converted c = to_tflite(b);
  CHECK(::tflite::ModelBufferHasIdentifier(c.bytes.data()));
  CHECK(c.model->version() == 3);
  const auto& g = c.graph();
  REQUIRE(g.inputs()->size() == 1);
  CHECK(c.tensor(g.inputs()->Get(0)).name()->str() == "x");
  REQUIRE(g.outputs()->size() == 2);
  CHECK(c.tensor(g.outputs()->Get(0)).name()->str() == "y");
  CHECK(c.tensor(g.outputs()->Get(1)).name()->str() == "x_again");
  CHECK(c.codes() == std::vector{BuiltinOperator::RELU, BuiltinOperator::RESHAPE});
  const auto* signature = c.model->signature_defs()->Get(0);
  CHECK(signature->signature_key()->str() == "serving_default");
  CHECK(signature->inputs()->Get(0)->name()->str() == "x");
  CHECK(signature->outputs()->Get(1)->name()->str() == "x_again");
  CHECK(c.model->buffers()->Get(0)->data() == nullptr);  // buffer 0: the empty sentinel
}

TEST_CASE("conv2d runs in NHWC between two transposes, with its constant OIHW filter permuted to OHWI at conversion") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {1, 2, 5, 5}});
  const ValueId w = b.constant(ramp({3, 2, 3, 2}), "w");
  b.output("y", b.op(Conv2d{.strides = {2, 1}}, {x, w}));
  const Converted c = to_tflite(b);
  CHECK(c.codes() == std::vector{BuiltinOperator::TRANSPOSE, BuiltinOperator::CONV_2D, BuiltinOperator::TRANSPOSE});
  const auto& conv = c.only(BuiltinOperator::CONV_2D);
  const auto* options = conv.builtin_options_as_Conv2DOptions();
  REQUIRE(options);
  CHECK(options->padding() == static_cast<std::int8_t>(::tflite::Padding::VALID));
  CHECK(options->stride_h() == 2);
  CHECK(options->stride_w() == 1);
  CHECK(c.shape(conv.inputs()->Get(0)) == std::vector{1, 5, 5, 2});
  const std::int32_t filter = conv.inputs()->Get(1);
  CHECK(c.shape(filter) == std::vector{3, 3, 2, 2});
  const std::vector<float> ohwi = c.data<float>(filter);
  const Tensor weights = ramp({3, 2, 3, 2});
  const auto oihw = weights.values<float>();
  for (int o = 0; o < 3; ++o)
    for (int h = 0; h < 3; ++h)
      for (int w_ = 0; w_ < 2; ++w_)
        for (int i = 0; i < 2; ++i) CHECK(ohwi[((o * 3 + h) * 2 + w_) * 2 + i] == oihw[((o * 2 + i) * 3 + h) * 2 + w_]);
  CHECK(c.data<float>(conv.inputs()->Get(2)) == std::vector<float>(3, 0.0f));  // no bias: zeros
  CHECK(c.shape(conv.outputs()->Get(0)) == std::vector{1, 2, 4, 3});
  CHECK(c.tensor(c.graph().outputs()->Get(0)).name()->str() == "y");
  CHECK(c.shape(c.graph().outputs()->Get(0)) == std::vector{1, 3, 2, 4});
}

TEST_CASE("a depthwise conv2d takes a [1, kh, kw, O] filter and its channel multiplier") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {1, 2, 4, 4}});
  b.output("y", b.op(Conv2d{.groups = 2}, {x, b.constant(ramp({6, 1, 3, 3}), "w")}));
  const Converted c = to_tflite(b);
  const auto& conv = c.only(BuiltinOperator::DEPTHWISE_CONV_2D);
  CHECK(c.shape(conv.inputs()->Get(1)) == std::vector{1, 3, 3, 6});
  CHECK(conv.builtin_options_as_DepthwiseConv2DOptions()->depth_multiplier() == 3);
}

TEST_CASE("SAME pads become SAME; other pads a PADV2 (zeros for conv2d, -inf for max_pool2d) before a VALID window") {
  SUBCASE("SAME") {
    Builder b;
    const ValueId x = b.input("x", TensorType{DType::f32, {1, 1, 8, 8}});
    b.output("y", b.op(Conv2d{.strides = {2, 2}, .pads = {0, 0, 1, 1}}, {x, b.constant(ramp({1, 1, 3, 3}), "w")}));
    const Converted c = to_tflite(b);
    CHECK(c.only(BuiltinOperator::CONV_2D).builtin_options_as_Conv2DOptions()->padding() == static_cast<std::int8_t>(::tflite::Padding::SAME));
    CHECK(c.codes() == std::vector{BuiltinOperator::TRANSPOSE, BuiltinOperator::CONV_2D, BuiltinOperator::TRANSPOSE});
  }
  SUBCASE("explicit") {
    Builder b;
    const ValueId x = b.input("x", TensorType{DType::f32, {1, 1, 6, 6}});
    b.output("y", b.op(MaxPool2d{.kernel = {3, 3}, .strides = {1, 1}, .pads = {2, 0, 0, 1}}, {x}));
    const Converted c = to_tflite(b);
    const auto& pad = c.only(BuiltinOperator::PADV2);
    CHECK(c.data<std::int32_t>(pad.inputs()->Get(1)) == std::vector<std::int32_t>{0, 0, 2, 0, 0, 1, 0, 0});
    CHECK(c.shape(pad.inputs()->Get(1)) == std::vector{4, 2});
    CHECK(c.data<float>(pad.inputs()->Get(2)) == std::vector<float>{-INFINITY});
    const auto* pool = c.only(BuiltinOperator::MAX_POOL_2D).builtin_options_as_Pool2DOptions();
    CHECK(pool->padding() == static_cast<std::int8_t>(::tflite::Padding::VALID));
    CHECK(pool->filter_height() == 3);
  }
}

TEST_CASE("comparisons give f32 like rml: the bool is cast to FLOAT32; a cast to the same dtype is a copy, never a CAST") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::i32, {2, 3}});
  b.output("lt", b.op(Lt{}, {x, b.input("z", TensorType{DType::i32, {3}})}));
  b.output("same", b.op(Cast{.to = DType::i32}, {x}));
  const Converted c = to_tflite(b);
  CHECK(c.codes() == std::vector{BuiltinOperator::LESS, BuiltinOperator::CAST, BuiltinOperator::RESHAPE});
  const auto& cast = c.only(BuiltinOperator::CAST);
  CHECK(c.tensor(cast.inputs()->Get(0)).type() == static_cast<std::int8_t>(::tflite::TensorType::BOOL));
  CHECK(c.tensor(cast.outputs()->Get(0)).type() == static_cast<std::int8_t>(::tflite::TensorType::FLOAT32));
}

TEST_CASE("a negative slice step that runs to the front sets the axis's end_mask bit") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {6, 4}});
  b.output("y", b.op(Slice{.axes = {0}, .starts = {4}, .ends = {-100}, .steps = {-2}}, {x}));
  const Converted c = to_tflite(b);
  const auto& slice = c.only(BuiltinOperator::STRIDED_SLICE);
  CHECK(c.data<std::int32_t>(slice.inputs()->Get(1)) == std::vector<std::int32_t>{4, 0});
  CHECK(c.data<std::int32_t>(slice.inputs()->Get(3)) == std::vector<std::int32_t>{-2, 1});
  CHECK(slice.builtin_options_as_StridedSliceOptions()->end_mask() == 1);
}

TEST_CASE("operator codes from 127 on live in builtin_code; BROADCAST_TO asks for version 2") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {3, 1}});
  b.output("y", b.op(Gelu{}, {b.op(BroadcastTo{.shape = {2, 3, 4}}, {x})}));
  const Converted c = to_tflite(b);
  for (const auto* code : *c.model->operator_codes()) {
    const auto builtin = static_cast<BuiltinOperator>(code->builtin_code());
    CHECK(code->deprecated_builtin_code() == std::min(code->builtin_code(), 127));
    CHECK(code->version() == (builtin == BuiltinOperator::BROADCAST_TO ? 2 : 1));
  }
  CHECK(c.codes() == std::vector{BuiltinOperator::BROADCAST_TO, BuiltinOperator::GELU});
}

TEST_CASE("preflight refuses what TFLite's builtins cannot express, by name") {
  auto reason = [](Builder& b) {
    const auto found = Converters::preflight("tflite", b.graph());
    REQUIRE(found.size() == 1);
    return found[0].reason;
  };
  Builder erf;
  erf.output("y", erf.op(Erf{}, {erf.input("x", TensorType{DType::f32, {2}})}));
  CHECK(reason(erf) == "tflite has no lowering for op 'erf'");
  Builder grouped;
  grouped.output("y", grouped.op(Conv2d{.groups = 2}, {grouped.input("x", TensorType{DType::f32, {1, 4, 5, 5}}),
                                                       grouped.constant(ramp({4, 2, 3, 3}))}));
  CHECK(reason(grouped) == "grouped convolution other than depthwise (groups = input channels)");
  Builder matmul;
  matmul.output("y", matmul.op(MatMul{}, {matmul.input("a", TensorType{DType::i32, {2, 3}}), matmul.input("b", TensorType{DType::i32, {3, 2}})}));
  CHECK(reason(matmul) == "BATCH_MATMUL has no int32 kernel");
  Builder avg;
  avg.output("y", avg.op(AvgPool2d{.kernel = {3, 3}, .strides = {1, 1}, .pads = {2, 0, 0, 0}}, {avg.input("x", TensorType{DType::f32, {1, 1, 5, 5}})}));
  CHECK(reason(avg) == "pads that are not SAME's, uncounted (count_include_pad false)");
  Builder dilated;
  dilated.output("y", dilated.op(MaxPool2d{.kernel = {2, 2}, .strides = {1, 1}, .dilations = {2, 1}},
                                 {dilated.input("x", TensorType{DType::f32, {1, 1, 5, 5}})}));
  CHECK(reason(dilated) == "TFLite pools have no dilation");
}

TEST_CASE("every registry op but erf lowers to TFLite") {
  const auto row = support_row<Tflite>();
  std::size_t op = 0;
  Registry::for_each([&](auto type) {
    using Op = typename decltype(type)::type;
    CHECK_MESSAGE(row[op++] == (Op::name != "erf"), Op::name);
  });
}

TEST_CASE("every committed fixture converts to a buffer the flatbuffers Verifier accepts") {
  std::size_t converted = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(RML_SOURCE_DIR) / "testdata")) {
    if (entry.path().extension() != ".json") continue;
    const Graph graph = read_graph(entry.path());
    const std::string bytes = Converters::convert("tflite", graph).data;
    flatbuffers::Verifier verifier(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    CHECK_MESSAGE(::tflite::VerifyModelBuffer(verifier), entry.path().filename().string());
    ++converted;
  }
  CHECK(converted >= 100);
}
