// Converters, structurally and with no Python: build a graph by hand, convert
// it, decode the bytes with the wire-format reader, and assert what each
// guarantee promises. The numbers are checked by ONNX Runtime in the Python
// tier (tests/python/test_onnx.py).
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <map>

#include "rml/emit/converters.hpp"
#include "test_util.hpp"

using namespace rml;
using namespace rml::emit;
using rml::test::slurp;
using rml::test::TempDir;

namespace {

/// Runs the `rml` program; returns its exit code, stdout in `out`.
int rml_cli(const std::string& args, std::string* out = nullptr, const std::string& env = "") {
  TempDir dir;
  const std::string command = env + " " + RML_CLI + " " + args + " >" + (dir / "out").string() + " 2>&1";
  const int status = std::system(command.c_str());
  if (out) *out = slurp(dir / "out");
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// ---- a minimal ModelProto decoder ----

struct DecodedAttribute {
  std::int64_t i = 0;
  float f = 0;
  std::vector<std::int64_t> ints;
};
struct DecodedNode {
  std::string op_type, name;
  std::vector<std::string> inputs, outputs;
  std::map<std::string, DecodedAttribute> attributes;
};
struct DecodedTensor {
  std::string name;
  std::int32_t data_type = 0;
  std::vector<std::int64_t> dims;
  std::string raw;
  std::map<std::string, std::string> external;
  bool is_external = false;
};
struct DecodedModel {
  std::int64_t ir_version = 0, opset = 0;
  std::vector<DecodedNode> nodes;
  std::vector<DecodedTensor> initializers;
  std::vector<std::string> inputs, outputs;

  const DecodedNode& only(std::string_view op_type) const {
    const DecodedNode* found = nullptr;
    for (const DecodedNode& n : nodes)
      if (n.op_type == op_type) {
        REQUIRE_MESSAGE(!found, "more than one ", op_type, " node");
        found = &n;
      }
    REQUIRE_MESSAGE(found, "no ", op_type, " node");
    return *found;
  }
  std::size_t count(std::string_view op_type) const {
    return static_cast<std::size_t>(std::count_if(nodes.begin(), nodes.end(), [&](const auto& n) { return n.op_type == op_type; }));
  }
  const DecodedTensor* initializer(std::string_view name) const {
    for (const DecodedTensor& t : initializers)
      if (t.name == name) return &t;
    return nullptr;
  }
  /// An int64 initializer's values (shape, axes, ...).
  std::vector<std::int64_t> int64s(std::string_view name) const {
    const DecodedTensor* t = initializer(name);
    REQUIRE_MESSAGE(t, "no initializer ", name);
    REQUIRE(t->data_type == 7);
    std::vector<std::int64_t> values(t->raw.size() / 8);
    if (!values.empty()) std::memcpy(values.data(), t->raw.data(), t->raw.size());  // memcpy takes no null pointers
    return values;
  }
};

using protobuf::read_message;

DecodedTensor decode_tensor(std::string_view bytes) {
  DecodedTensor t;
  for (const auto& f : read_message(bytes)) {
    if (f.number == 1) t.dims.push_back(static_cast<std::int64_t>(f.varint));
    if (f.number == 2) t.data_type = static_cast<std::int32_t>(f.varint);
    if (f.number == 8) t.name = f.bytes;
    if (f.number == 9) t.raw = f.bytes;
    if (f.number == 14) t.is_external = f.varint == 1;
    if (f.number == 13) {
      std::string key, value;
      for (const auto& e : read_message(f.bytes)) (e.number == 1 ? key : value) = e.bytes;
      t.external[key] = value;
    }
  }
  return t;
}

DecodedModel decode(const std::string& bytes) {
  DecodedModel model;
  auto value_name = [](std::string_view info) {
    for (const auto& f : read_message(info))
      if (f.number == 1) return std::string(f.bytes);
    return std::string();
  };
  for (const auto& f : read_message(bytes)) {
    if (f.number == 1) model.ir_version = static_cast<std::int64_t>(f.varint);
    if (f.number == 8)
      for (const auto& o : read_message(f.bytes))
        if (o.number == 2) model.opset = static_cast<std::int64_t>(o.varint);
    if (f.number != 7) continue;
    for (const auto& g : read_message(f.bytes)) {
      if (g.number == 5) model.initializers.push_back(decode_tensor(g.bytes));
      if (g.number == 11) model.inputs.push_back(value_name(g.bytes));
      if (g.number == 12) model.outputs.push_back(value_name(g.bytes));
      if (g.number != 1) continue;
      DecodedNode node;
      for (const auto& n : read_message(g.bytes)) {
        if (n.number == 1) node.inputs.emplace_back(n.bytes);
        if (n.number == 2) node.outputs.emplace_back(n.bytes);
        if (n.number == 3) node.name = n.bytes;
        if (n.number == 4) node.op_type = n.bytes;
        if (n.number != 5) continue;
        std::string name;
        DecodedAttribute attribute;
        for (const auto& a : read_message(n.bytes)) {
          if (a.number == 1) name = a.bytes;
          if (a.number == 2) attribute.f = a.as_float();
          if (a.number == 3) attribute.i = static_cast<std::int64_t>(a.varint);
          if (a.number == 8) attribute.ints.push_back(static_cast<std::int64_t>(a.varint));
        }
        node.attributes[name] = attribute;
      }
      model.nodes.push_back(node);
    }
  }
  return model;
}

DecodedModel to_onnx(const Builder& b, ConvertOptions options = {}) {
  return decode(Converters::convert("onnx", b.graph(), options).data);
}

Tensor ramp(Shape shape) {
  Tensor t(DType::f32, std::move(shape));
  auto v = t.values<float>();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
  return t;
}

}  // namespace

TEST_CASE("the model imports opset 18 at IR version 8 and names its inputs and outputs after rml's") {
  Builder b;
  const ValueId x = b.input("pixels", TensorType{DType::f32, {2, 3}});
  b.output("scores", b.op(Relu{}, {x}));
  const DecodedModel m = to_onnx(b);
  CHECK(m.opset == 18);
  CHECK(m.ir_version == 8);
  CHECK(m.inputs == std::vector<std::string>{"pixels"});
  CHECK(m.outputs == std::vector<std::string>{"scores"});
  CHECK(m.only("Relu").inputs == std::vector<std::string>{"pixels"});
}

TEST_CASE("initializers keep the constant's name, dtype and dims; large ones go to the sidecar by the external-data convention") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {2, 64}});
  const ValueId w = b.constant(ramp({64, 32}), "dense.weight");
  const ValueId bias = b.constant(ramp({32}), "dense.bias");
  b.output("y", b.op(Add{}, {b.op(MatMul{}, {x, w}), bias}));
  ConvertOptions options;
  options.model_file_name = "net.onnx";
  const ConvertedModel converted = Converters::convert("onnx", b.graph(), options);
  const DecodedModel m = decode(converted.data);
  const DecodedTensor* weight = m.initializer("dense.weight");
  REQUIRE(weight);
  CHECK(weight->data_type == 1);
  CHECK(weight->dims == std::vector<std::int64_t>{64, 32});
  CHECK(weight->is_external);
  CHECK(weight->external.at("location") == "net.onnx.data");
  CHECK(weight->raw.empty());
  REQUIRE(converted.weights);
  CHECK(converted.weights->file_name == "net.onnx.data");
  const std::size_t offset = std::stoul(weight->external.at("offset")), length = std::stoul(weight->external.at("length"));
  CHECK(offset % 4096 == 0);
  CHECK(length == 64 * 32 * 4);
  CHECK(std::memcmp(converted.weights->data.data() + offset, b.example(w).raw(), length) == 0);
  const DecodedTensor* small = m.initializer("dense.bias");
  REQUIRE(small);
  CHECK_FALSE(small->is_external);
  CHECK(small->raw.size() == 32 * 4);
}

TEST_CASE("nothing goes to a sidecar below the threshold, and i32 constants stay INT32") {
  Builder b;
  const ValueId ids = b.input("ids", TensorType{DType::i32, {3}});
  const ValueId table = b.constant(Tensor::from<std::int32_t>({4}, {5, 6, 7, 8}), "table");
  b.output("picked", b.op(Gather{.axis = 0}, {table, ids}));
  const ConvertedModel converted = Converters::convert("onnx", b.graph());
  CHECK_FALSE(converted.weights);
  const DecodedModel model = decode(converted.data);
  const DecodedTensor* t = model.initializer("table");
  REQUIRE(t);
  CHECK(t->data_type == 6);
  CHECK(t->dims == std::vector<std::int64_t>{4});
}

TEST_CASE("never an identity cast: a cast to the same dtype is an Identity node") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {4}});
  b.output("y", b.op(Cast{.to = DType::f32}, {x}));
  const DecodedModel m = to_onnx(b);
  CHECK(m.count("Cast") == 0);
  CHECK(m.only("Identity").inputs == std::vector<std::string>{"x"});
}

TEST_CASE("helper nodes take one counter: each helper node and its output share the number") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {2, 8}});
  b.output("y", b.op(Gelu{.approximate = "tanh"}, {x}));
  const DecodedModel m = to_onnx(b);
  std::size_t helpers = 0;
  for (const DecodedNode& node : m.nodes) {
    if (node.name.rfind("rml_helper_", 0) != 0) continue;
    ++helpers;
    REQUIRE(node.outputs.size() == 1);
    CHECK(node.outputs[0] == node.name);
  }
  CHECK(helpers >= 6);
  CHECK(m.nodes.back().outputs == std::vector<std::string>{"y"});
}

TEST_CASE("reductions always carry their axes as an input, and empty axes reduce nothing") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {2, 3, 4}});
  const ValueId s = b.op(ReduceSum{.axes = {-1, 0}, .keep_dims = true}, {x});
  b.output("y", b.op(ReduceMax{.axes = {}}, {s}));
  const DecodedModel m = to_onnx(b);
  const DecodedNode& sum = m.only("ReduceSum");
  REQUIRE(sum.inputs.size() == 2);
  CHECK(m.int64s(sum.inputs[1]) == std::vector<std::int64_t>{-1, 0});
  CHECK(sum.attributes.at("keepdims").i == 1);
  const DecodedNode& max = m.only("ReduceMax");
  REQUIRE(max.inputs.size() == 2);
  CHECK(m.int64s(max.inputs[1]).empty());
  CHECK(max.attributes.at("noop_with_empty_axes").i == 1);
}

TEST_CASE("reshape carries the static output shape with allowzero, so 0 means an empty axis") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {0, 6}});
  b.output("y", b.op(Reshape{.shape = {-1, 2, 3}}, {x}));
  const DecodedModel m = to_onnx(b);
  const DecodedNode& reshape = m.only("Reshape");
  CHECK(m.int64s(reshape.inputs[1]) == std::vector<std::int64_t>{0, 2, 3});
  CHECK(reshape.attributes.at("allowzero").i == 1);
}

TEST_CASE("comparisons give f32 like rml: the boolean is cast to FLOAT") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {3}});
  const ValueId y = b.input("y", TensorType{DType::f32, {3}});
  b.output("ne", b.op(Ne{}, {x, y}));
  const DecodedModel m = to_onnx(b);
  CHECK(m.count("Equal") == 1);
  CHECK(m.count("Not") == 1);
  CHECK(m.only("Cast").attributes.at("to").i == 1);
  CHECK(m.only("Cast").outputs == std::vector<std::string>{"ne"});
}

TEST_CASE("top_k has two outputs; its int64 indices become rml's i32") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {2, 9}});
  const auto outs = b.op_multi(TopK{.k = 3}, {x}, 2);
  b.output("values", outs[0]);
  b.output("indices", outs[1]);
  const DecodedModel m = to_onnx(b);
  const DecodedNode& top_k = m.only("TopK");
  CHECK(top_k.outputs.size() == 2);
  CHECK(m.int64s(top_k.inputs[1]) == std::vector<std::int64_t>{3});
  CHECK(m.only("Cast").attributes.at("to").i == 6);
  CHECK(m.only("Cast").outputs == std::vector<std::string>{"indices"});
}

TEST_CASE("conv2d's four-sided pads map onto ONNX's begins-then-ends order") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {1, 2, 8, 8}});
  const ValueId w = b.constant(ramp({4, 1, 3, 3}), "conv.weight");
  b.output("y", b.op(Conv2d{.strides = {2, 1}, .pads = {1, 0, 2, 1}, .groups = 2}, {x, w}));
  const DecodedModel m = to_onnx(b);
  const DecodedNode& conv = m.only("Conv");
  CHECK(conv.attributes.at("pads").ints == std::vector<std::int64_t>{1, 0, 2, 1});
  CHECK(conv.attributes.at("strides").ints == std::vector<std::int64_t>{2, 1});
  CHECK(conv.attributes.at("kernel_shape").ints == std::vector<std::int64_t>{3, 3});
  CHECK(conv.attributes.at("group").i == 2);
}

TEST_CASE("layer_norm without a scale gets a ones scale; with one it passes through") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {2, 5}});
  b.output("y", b.op(LayerNorm{.eps = 1e-3}, {x}));
  const DecodedModel m = to_onnx(b);
  const DecodedNode& norm = m.only("LayerNormalization");
  REQUIRE(norm.inputs.size() == 2);
  const DecodedTensor* scale = m.initializer(norm.inputs[1]);
  REQUIRE(scale);
  CHECK(scale->dims == std::vector<std::int64_t>{5});
  std::vector<float> ones(5);
  std::memcpy(ones.data(), scale->raw.data(), 20);
  CHECK(ones == std::vector<float>(5, 1.0f));
  CHECK(norm.attributes.at("epsilon").f == doctest::Approx(1e-3));
}

TEST_CASE("an output that is also an input, or named twice, is copied under its own name") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {2}});
  const ValueId y = b.op(Exp{}, {x});
  b.output("first", y);
  b.output("second", y);
  const DecodedModel m = to_onnx(b);
  CHECK(m.outputs == std::vector<std::string>{"first", "second"});
  const DecodedNode& copy = m.only("Identity");
  CHECK(copy.inputs == std::vector<std::string>{"first"});
  CHECK(copy.outputs == std::vector<std::string>{"second"});
}

// ---- preflight and the support report ----

namespace {
/// A backend that lowers nothing but relu, to exercise the unsupported path.
struct ReluOnly {
  static constexpr std::string_view name = "relu-only";
  struct Context {};
};
}  // namespace
template <>
struct rml::emit::Lowering<ReluOnly, Relu> {
  static void lower(ReluOnly::Context&, const Node&, const Relu&) {}
};

TEST_CASE("preflight names each node a backend lacks: index, op, output and reason") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {1, 1, 6, 6}});
  const ValueId pooled = b.op(AvgPool2d{.kernel = {2, 2}, .strides = {1, 1}, .dilations = {2, 2}}, {b.op(Relu{}, {x})});
  b.output("y", b.op(Exp{}, {pooled}));
  const auto onnx = Converters::preflight("onnx", b.graph());
  REQUIRE(onnx.size() == 1);
  CHECK(onnx[0].node == 1);
  CHECK(onnx[0].op == "avg_pool2d");
  CHECK(onnx[0].output == "value_2");
  CHECK(onnx[0].reason.find("dilations") != std::string::npos);
  CHECK_THROWS_WITH_AS(Converters::convert("onnx", b.graph()), doctest::Contains("node 1 (avg_pool2d)"), Error);
  CHECK_THROWS_WITH_AS(convert<Onnx>(b.graph()), doctest::Contains("onnx: 1 node(s) cannot be converted:\n  node 1 (avg_pool2d)"), Error);

  const auto relu_only = preflight<ReluOnly>(b.graph());
  REQUIRE(relu_only.size() == 2);
  CHECK(relu_only[1].op == "exp");
  CHECK(relu_only[1].output == "y");
  CHECK(relu_only[1].reason == "relu-only has no lowering for op 'exp'");
  CHECK(support_row<ReluOnly>()[*Registry::find("relu")]);
  CHECK_FALSE(support_row<ReluOnly>()[*Registry::find("exp")]);
}

TEST_CASE("every registry op lowers to ONNX and to DOT") {
  for (bool supported : support_row<Onnx>()) CHECK(supported);
  for (bool supported : support_row<Dot>()) CHECK(supported);
}

TEST_CASE("docs/backend-ops.md holds exactly the support report the registry generates") {
  const std::string doc = slurp(std::filesystem::path(RML_SOURCE_DIR) / "docs" / "backend-ops.md");
  const std::string begin = "<!-- support report: generated by `make docs` -->\n", end = "<!-- end of support report -->";
  const auto from = doc.find(begin), to = doc.find(end);
  REQUIRE_MESSAGE(from != std::string::npos, "docs/backend-ops.md lacks the generated section");
  REQUIRE(to != std::string::npos);
  CHECK_MESSAGE(doc.substr(from + begin.size(), to - from - begin.size()) == support_report(),
                "docs/backend-ops.md is out of date: run `make docs`");
}

TEST_CASE("a converter called by type gives the bytes the one named at run time gives") {
  Builder b;
  b.output("y", b.op(Exp{}, {b.input("x", TensorType{DType::f32, {2, 3}})}));
  CHECK(convert<Onnx>(b.graph()).data == Converters::convert("onnx", b.graph()).data);
  CHECK(convert<Tflite>(b.graph()).data == Converters::convert("tflite", b.graph()).data);
  CHECK(convert<Dot>(b.graph()).data == Converters::convert("dot", b.graph()).data);
}

TEST_CASE("unknown formats are named with the list of converters") {
  Builder b;
  b.output("y", b.op(Exp{}, {b.input("x", TensorType{DType::f32, {1}})}));
  CHECK_THROWS_WITH_AS(Converters::convert("tensorrt", b.graph()), doctest::Contains("unknown format 'tensorrt' (converters: onnx, tflite, webnn, coreml, dot)"), Error);
}

TEST_CASE("a graph whose names are not UTF-8 is refused by every converter and the graph writer, which write nothing") {
  Builder b;
  b.output("y", b.op(Exp{}, {b.input("x", TensorType{DType::f32, {2}})}));
  TempDir dir;
  for (auto [where, bad_name] : {std::pair{"input", "x\xff"}, {"output", "\xc0\xaf"}}) {  // (an overlong '/')
    Graph graph = b.graph();  // as a program could assemble it without the Builder's checks
    (std::string_view(where) == "input" ? graph.inputs[0].name : graph.outputs[0].name) = bad_name;
    CAPTURE(where);
    CHECK_THROWS_WITH_AS(validate(graph), doctest::Contains((std::string(where) + " name '").c_str()), Error);
    for (const std::string_view format : Converters::names) {
      CAPTURE(format);
      try {
        write_converted(format, graph, dir / ("m." + std::string(format)));
        FAIL("no error");
      } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::invalid_utf8);
      }
    }
    CHECK_THROWS_WITH_AS(write_graph(graph, dir / "m.json"), doctest::Contains("is not valid UTF-8"), Error);
  }
  CHECK(std::filesystem::is_empty(dir.path()));
}

// ---- DOT ----

TEST_CASE("dot shows ops with attributes, edges with dtype and shape, constants by name") {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {2, 4}});
  const ValueId w = b.constant(ramp({4, 3}), "dense.weight");
  b.output("probs", b.op(Softmax{.axis = 1}, {b.op(MatMul{}, {x, w})}));
  const std::string text = Converters::convert("dot", b.graph()).data;
  CHECK(text.rfind("digraph rml {", 0) == 0);
  CHECK(text.find("label=\"softmax\\naxis = 1\"") != std::string::npos);
  CHECK(text.find("label=\"dense.weight\\nf32[4, 3]\"") != std::string::npos);
  CHECK(text.find("[label=\"f32[2, 3]\"]") != std::string::npos);
  CHECK(text.find("\"output:probs\"") != std::string::npos);
  CHECK(text.find('\n', text.find("label=\"x")) > text.find("];", text.find("label=\"x")));  // no raw newline inside a label
}

// ---- the command line ----

namespace {
/// A model with one large weight (external in ONNX) written to `dir`/m.json.
void write_model(const std::filesystem::path& dir) {
  Builder b;
  const ValueId x = b.input("x", TensorType{DType::f32, {2, 64}});
  b.output("y", b.op(MatMul{}, {x, b.constant(ramp({64, 64}), "w")}));
  b.write(dir / "m.json");
}
}  // namespace

TEST_CASE("rml convert writes the model and its sidecar together; --list names the formats") {
  TempDir dir;
  write_model(dir.path());
  std::string out;
  REQUIRE(rml_cli("convert " + (dir / "m.json").string() + " --to onnx -o " + (dir / "m.onnx").string(), &out) == 0);
  CHECK(out.find("and m.onnx.data") != std::string::npos);
  CHECK(std::filesystem::file_size(dir / "m.onnx.data") >= 64 * 64 * 4);
  CHECK(decode(slurp(dir / "m.onnx")).initializer("w")->external.at("location") == "m.onnx.data");
  REQUIRE(rml_cli("convert --list", &out) == 0);
  CHECK(out.find("onnx") != std::string::npos);
  CHECK(out.find("dot") != std::string::npos);
  CHECK(out.find("tflite") != std::string::npos);
  CHECK(out.find("coreml") != std::string::npos);
  CHECK(rml_cli("convert " + (dir / "m.json").string() + " --to tensorrt -o x", &out) == 2);
  CHECK(out.find("unknown format 'tensorrt'") != std::string::npos);
  CHECK(rml_cli("convert " + (dir / "m.json").string() + " --to onnx --check", &out) == 0);
}

TEST_CASE("a conversion that fails to write leaves neither the model nor its sidecar") {
  TempDir dir;
  write_model(dir.path());
  std::filesystem::create_directory(dir / "taken.onnx");  // the model cannot be renamed over a folder
  std::filesystem::create_directory(dir / "taken.onnx" / "inside");
  std::string out;
  CHECK(rml_cli("convert " + (dir / "m.json").string() + " --to onnx -o " + (dir / "taken.onnx").string(), &out) == 1);
  CHECK(out.find("cannot rename") != std::string::npos);
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"m.json", "m.safetensors", "taken.onnx"});
}

TEST_CASE("a fault at any step of writing a converted model leaves the previous pair, or nothing, and no temporary") {
  TempDir dir;
  write_model(dir.path());
  const Graph first = read_graph(dir / "m.json");
  Graph second = first;
  for (Value& v : second.values)
    if (v.name == "w") v.data = Tensor::from<float>(v.type.shape, std::vector<float>(64 * 64, 0.5f));
  const auto out = dir / "m.onnx";
  write_converted("onnx", first, out);
  const test::Snapshot before = test::snapshot(dir.path());
  REQUIRE(before.count("m.onnx.data"));
  const auto [faults, after, error] = test::inject_each_fault(dir.path(), before, [&] { write_converted("onnx", second, out); });
  CHECK(error.empty());
  REQUIRE(faults.size() == 12);  // sidecar: open write sync close rename; model: the same and two folder syncs
  for (std::size_t k = 0; k + 1 < faults.size(); ++k) {
    CAPTURE(faults[k].step);
    CHECK(faults[k].message.find("Input/output error") != std::string::npos);
    CHECK(faults[k].left == before);
  }
  CHECK(faults.back().left == after);
  // The new model references its sidecar under a tagged name; the old sidecar is gone.
  CHECK(after.size() == before.size());
  CHECK_FALSE(after.count("m.onnx.data"));
  const std::string location = decode(after.at("m.onnx")).initializer("w")->external.at("location");
  CHECK(location.starts_with("m.onnx."));
  CHECK(location.ends_with(".data"));
  CHECK(after.count(location));
  CHECK(after.at(location).size() == 64 * 64 * 4);
}

TEST_CASE("rml opt, convert and run refuse to write over a file they read") {
  TempDir dir;
  write_model(dir.path());
  const test::Snapshot before = test::snapshot(dir.path());
  const std::string model = (dir / "m.json").string();
  for (const std::string& command : {"opt " + model + " -o " + model, "opt " + model + " -o " + (dir / "m").string(),
                                     "convert " + model + " --to onnx -o " + model,
                                     "run " + model + " --output " + (dir / "m.safetensors").string()}) {
    CAPTURE(command);
    std::string out;
    CHECK(rml_cli(command, &out) == 1);
    CHECK(out.find("refusing to overwrite") != std::string::npos);
    CHECK(test::snapshot(dir.path()) == before);
  }
}

TEST_CASE("RML_DUMP_DIR: every conversion also writes its artifact and a one-line summary") {
  TempDir dir;
  write_model(dir.path());
  const std::string env = "RML_DUMP_DIR=" + (dir / "dumps").string();
  REQUIRE(rml_cli("convert " + (dir / "m.json").string() + " --to onnx -o " + (dir / "m.onnx").string(), nullptr, env) == 0);
  REQUIRE(rml_cli("dot " + (dir / "m.json").string() + " -o " + (dir / "m.dot").string(), nullptr, env) == 0);
  const std::string log = slurp(dir / "dumps" / "conversions.log");
  CHECK(std::count(log.begin(), log.end(), '\n') == 2);
  CHECK(log.find("onnx ") == 0);
  CHECK(log.find("bytes of weights") != std::string::npos);
  CHECK(log.find("\ndot ") != std::string::npos);
  std::size_t artifacts = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "dumps")) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with("-m.onnx")) CHECK(slurp(entry.path()) == slurp(dir / "m.onnx"));
    if (name.ends_with("-m.dot")) CHECK(slurp(entry.path()) == slurp(dir / "m.dot"));
    artifacts += name != "conversions.log";
  }
  CHECK(artifacts == 3);  // the ONNX model, its weights, the DOT file
}

TEST_CASE("rml convert --to coreml writes a package folder; --check and RML_DUMP_DIR cover it") {
  TempDir dir;
  write_model(dir.path());
  const std::string env = "RML_DUMP_DIR=" + (dir / "dumps").string();
  std::string out;
  REQUIRE(rml_cli("convert " + (dir / "m.json").string() + " --to coreml --check", &out) == 0);
  CHECK(out.find("every node converts to coreml") != std::string::npos);
  REQUIRE(rml_cli("convert " + (dir / "m.json").string() + " --to coreml -o " + (dir / "m.mlpackage").string(), &out, env) == 0);
  CHECK(out.find("(coreml package, 3 files") != std::string::npos);
  const std::string model = slurp(dir / "m.mlpackage" / "Data" / "com.apple.CoreML" / "model.mlmodel");
  CHECK(std::filesystem::file_size(dir / "m.mlpackage" / "Data" / "com.apple.CoreML" / "weights" / "weight.bin") > 64 * 64 * 4);
  const std::string log = slurp(dir / "dumps" / "conversions.log");
  CHECK(log.find("coreml " + std::to_string(model.size()) + " bytes") == 0);
  std::size_t dumps = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "dumps"))
    if (entry.path().filename().string().ends_with("-m.mlpackage")) {
      CHECK(slurp(entry.path() / "Data" / "com.apple.CoreML" / "model.mlmodel") == model);
      ++dumps;
    }
  CHECK(dumps == 1);
}

TEST_CASE("RML_DUMP_DIR covers TFLite and WebNN too: the artifact, its weights and a log line each") {
  TempDir dir;
  write_model(dir.path());
  const std::string env = "RML_DUMP_DIR=" + (dir / "dumps").string();
  REQUIRE(rml_cli("convert " + (dir / "m.json").string() + " --to tflite -o " + (dir / "m.tflite").string(), nullptr, env) == 0);
  REQUIRE(rml_cli("convert " + (dir / "m.json").string() + " --to webnn -o " + (dir / "m.js").string(), nullptr, env) == 0);
  const std::string log = slurp(dir / "dumps" / "conversions.log");
  CHECK(log.find("tflite " + std::to_string(std::filesystem::file_size(dir / "m.tflite")) + " bytes") == 0);
  CHECK(log.find("\nwebnn " + std::to_string(std::filesystem::file_size(dir / "m.js")) + " bytes + " +
                 std::to_string(std::filesystem::file_size(dir / "m.js.bin")) + " bytes of weights") != std::string::npos);
  std::size_t artifacts = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "dumps")) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with("-m.tflite")) CHECK(slurp(entry.path()) == slurp(dir / "m.tflite"));
    if (name.ends_with("-m.js")) CHECK(slurp(entry.path()) == slurp(dir / "m.js"));
    if (name.ends_with("-m.js.data")) CHECK(slurp(entry.path()) == slurp(dir / "m.js.bin"));
    artifacts += name != "conversions.log";
  }
  CHECK(artifacts == 3);  // the TFLite model, the WebNN module and its weights
}
