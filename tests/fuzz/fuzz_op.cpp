// libFuzzer harness, structure-aware: the input bytes choose one op, its
// inputs' dtypes and shapes (rank <= 4, dimensions <= 5, zeros included),
// its attributes (small values and edge values such as 0, -1, 2^31, 2^62,
// INT64_MAX), which inputs after the first are small inlined constants, and the
// values (NaN and infinities included in inputs). The graph
// goes through the JSON text a file would hold, is loaded under tight
// LoadOptions, planned and run by the Executor (fused or not) and by the
// reference kernels, and converted to ONNX, whose bytes must decode again, and
// to TFLite, whose buffer the flatbuffers Verifier must accept.
// Every failure must be an rml::Error; anything else is a finding.
//
// To turn a finding into a catalogue fixture, replay it with
// RML_FUZZ_OP_FIXTURE=tests/bad_inputs/NAME set: the harness writes the graph
// as NAME.json and its inputs as NAME.inputs.safetensors before running it.
#include <array>
#include <cmath>
#include <cstdio>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "rml/rml.hpp"

namespace {

class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  std::uint8_t next() { return at_ < size_ ? data_[at_++] : 0; }
  template <class T, std::size_t N>
  T pick(const std::array<T, N>& choices) {
    return choices[next() % N];
  }
  std::int64_t integer() {
    static constexpr std::array<std::int64_t, 20> choices{
        0, 1, 2, 3, 4, 5, -1, -2, -3, 1, 2, 7, 16, std::int64_t(1) << 20, std::int64_t(1) << 31,
        std::int64_t(1) << 40, std::int64_t(1) << 62, std::numeric_limits<std::int64_t>::max(),
        std::numeric_limits<std::int64_t>::min(), 1};
    return pick(choices);
  }
  double real() {
    static constexpr std::array<double, 9> choices{0.0, 1.0, -1.0, 0.5, 1e-5, 2.0, 1e30, -1e30, 3.0};
    return pick(choices);
  }
  float value() {
    static constexpr std::array<float, 10> choices{0.0f, 1.0f, -1.0f, 0.5f, -2.5f, 3.0f, 1e30f,
                                                  std::numeric_limits<float>::infinity(),
                                                  -std::numeric_limits<float>::infinity(),
                                                  std::numeric_limits<float>::quiet_NaN()};
    return pick(choices);
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

/// A float attribute: now and then infinity or NaN, as a file spells them.
rml::Json non_finite_or_real(Bytes& in) {
  if (in.next() % 8 == 0) return in.pick(std::array<const char*, 3>{"inf", "-inf", "nan"});
  return in.real();
}

template <class T>
rml::Json attribute(Bytes& in) {
  if constexpr (std::is_same_v<T, std::int64_t>) return in.integer();
  else if constexpr (std::is_same_v<T, double>) return non_finite_or_real(in);
  else if constexpr (std::is_same_v<T, bool>) return in.next() % 2 == 1;
  else if constexpr (std::is_same_v<T, std::string>) return in.pick(std::array<const char*, 4>{"none", "tanh", "", "x"});
  else if constexpr (std::is_same_v<T, rml::DType>) return in.next() % 2 ? "f32" : "i32";
  else if constexpr (std::is_same_v<T, std::optional<double>>) return in.next() % 3 ? non_finite_or_real(in) : rml::Json();
  else {
    static_assert(std::is_same_v<T, rml::Ints>);
    rml::Json list = rml::Json::array();
    for (int n = in.next() % 6; n > 0; --n) list.push_back(in.integer());
    return list;
  }
}

template <class Op>
rml::Json attributes(Bytes& in) {
  rml::Json attrs = rml::Json::object();
  rml::for_each_field<Op>([&](const auto& field) {
    using T = typename std::decay_t<decltype(field)>::value_type;
    if (field.required || in.next() % 3 != 0) attrs[std::string(field.name)] = attribute<T>(in);
  });
  return attrs;
}

rml::TensorType input_type(Bytes& in, const rml::Types& earlier) {
  // Often the first input's shape, so that ops needing agreeing shapes get them.
  rml::TensorType type{in.next() % 4 == 0 ? rml::DType::i32 : rml::DType::f32, {}};
  if (!earlier.empty() && in.next() % 2 == 0) {
    type.shape = earlier.front().shape;
    return type;
  }
  for (int rank = in.next() % 5; rank > 0; --rank) type.shape.push_back(in.pick(std::array<std::int64_t, 8>{1, 2, 3, 4, 1, 2, 0, 5}));
  return type;
}

rml::Tensor input_value(Bytes& in, const rml::TensorType& type) {
  rml::Tensor t(type);
  if (type.dtype == rml::DType::f32)
    for (float& v : t.values<float>()) v = in.value();
  else
    for (std::int32_t& v : t.values<std::int32_t>()) v = static_cast<std::int32_t>(in.next() % 13) - 6;
  return t;
}

/// A constant's inline data: finite values only (JSON has no others).
rml::Json constant_data(Bytes& in, const rml::TensorType& type) {
  rml::Json data = rml::Json::array();
  for (std::int64_t i = rml::element_count(type.shape); i > 0; --i) {
    if (type.dtype == rml::DType::i32) {
      data.push_back(static_cast<int>(in.next() % 13) - 6);
    } else {
      const float v = in.value();
      data.push_back(std::isfinite(v) ? v : 0.0f);
    }
  }
  return data;
}

/// Protobuf model bytes must decode: the model and its graph (ONNX's
/// GraphProto, field 7; CoreML's MIL Program, field 502).
void check_decodes(const std::string& model, int graph_field) {
  namespace pb = rml::emit::protobuf;
  for (const pb::Field& field : pb::read_message(model))
    if (field.number == graph_field && field.type == pb::WireType::bytes) (void)pb::read_message(field.bytes);
}

/// A TFLite buffer must pass the flatbuffers Verifier; one that does not is a finding.
void check_verifies(const std::string& tflite) {
  flatbuffers::Verifier verifier(reinterpret_cast<const std::uint8_t*>(tflite.data()), tflite.size());
  if (!::tflite::VerifyModelBuffer(verifier)) {
    std::fprintf(stderr, "fuzz_op: the TFLite converter wrote a buffer the flatbuffers Verifier rejects\n");
    std::abort();
  }
}

template <class Op>
void run_one_op(Bytes& in) {
  const rml::Arity arity = Op::arity;
  const std::size_t most = std::min<std::size_t>(arity.max, arity.min + 3);
  const std::size_t count = arity.min + in.next() % (most - arity.min + 1);
  rml::Types types;
  for (std::size_t i = 0; i < count; ++i) types.push_back(input_type(in, types));
  const rml::Json attrs = attributes<Op>(in);

  rml::Types outputs;
  try {
    outputs = rml::infer_types(rml::op_from_json(Op::name, attrs), types);
  } catch (const rml::Error&) {
    return;  // refused by the shape rule: the file loader must refuse it too (checked below on valid ones)
  }
  rml::Json doc = {{"format", "rml-graph"}, {"version", 1}};
  rml::Json values = rml::Json::array(), node_inputs = rml::Json::array(), node_outputs = rml::Json::array();
  auto add_value = [&](const rml::TensorType& t) {
    values.push_back({{"id", values.size()}, {"dtype", rml::dtype_name(t.dtype)}, {"shape", t.shape}});
    return values.size() - 1;
  };
  // Inputs after the first may be small constants inlined in the JSON (weights, axes,
  // indices), which take the executor's constant-only paths: prepacked and direct kernels.
  std::vector<bool> constant(types.size(), false);
  for (std::size_t i = 0; i < types.size(); ++i) {
    node_inputs.push_back(add_value(types[i]));
    constant[i] = i > 0 && rml::element_count(types[i].shape) <= 16 && in.next() % 3 == 0;
    if (constant[i])
      values.back()["data"] = constant_data(in, types[i]);
    else
      doc["inputs"].push_back({{"name", "x" + std::to_string(i)}, {"value", i}});
  }
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    const std::size_t id = add_value(outputs[o]);
    node_outputs.push_back(id);
    doc["outputs"].push_back({{"name", "y" + std::to_string(o)}, {"value", id}});
  }
  doc["values"] = values;
  doc["nodes"] = rml::Json::array({{{"op", Op::name}, {"inputs", node_inputs}, {"outputs", node_outputs}, {"attrs", attrs}}});

  rml::LoadOptions limits;
  limits.max_tensor_elements = 1 << 16;
  limits.max_memory_bytes = std::uint64_t(1) << 28;
  const bool fuse = in.next() % 2;
  rml::TensorMap feeds;
  for (std::size_t i = 0; i < types.size(); ++i)
    if (!constant[i]) feeds.emplace("x" + std::to_string(i), input_value(in, types[i]));
  if (const char* prefix = std::getenv("RML_FUZZ_OP_FIXTURE")) {
    rml::write_file_atomically(std::string(prefix) + ".json", doc.dump(1) + "\n");
    rml::write_safetensors(std::string(prefix) + ".inputs.safetensors", rml::NamedTensors(feeds.begin(), feeds.end()));
  }
  try {
    const rml::Model model(rml::parse_valid_graph(doc.dump(), "/nonexistent-rml-fuzz-folder", limits), limits);
    rml::Executor(model, rml::ExecutorOptions{.threads = 1, .fuse = fuse}).run(feeds);
    rml::evaluate(model.graph(), feeds);
    if (rml::emit::Converters::preflight("onnx", model.graph()).empty())
      check_decodes(rml::emit::Converters::convert("onnx", model.graph()).data, 7);
    if (rml::emit::Converters::preflight("tflite", model.graph()).empty())
      check_verifies(rml::emit::Converters::convert("tflite", model.graph()).data);
    if (rml::emit::Converters::preflight("coreml", model.graph()).empty())
      check_decodes(rml::emit::Converters::convert("coreml", model.graph()).data, 502);
  } catch (const rml::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in(data, size);
  const std::size_t chosen = in.next() % rml::Registry::names.size();
  std::size_t index = 0;
  rml::Registry::for_each([&](auto tag) {
    if (index++ == chosen) run_one_op<typename decltype(tag)::type>(in);
  });
  return 0;
}
