// What a TFLite lowering writes into: the tensors, constant buffers and
// operators of one subgraph, kept as plain records while the graph is lowered
// and serialized at the end with the builders flatc generated from the
// schema (schema_generated.h). Every rml value is one tensor, named by
// emit::value_name; tensors a lowering adds (NHWC copies, shapes, axes,
// intermediate results) are named `rml_helper_<n>` from one counter.
//
// Layout: rml's spatial ops are NCHW with OIHW weights, TFLite's are NHWC
// with OHWI filters. A spatial lowering reads `permuted(x, to_nhwc)` (a
// TRANSPOSE made once per value, or the constant's data permuted here) and
// writes its NHWC result back to the rml value through one TRANSPOSE, so the
// model's inputs and outputs keep rml's layout.
#pragma once

#include <cmath>
#include <functional>
#include <map>

#include "rml/emit/contract.hpp"
// flatc's Verifier for an options union of which the converter builds no member
// (BuiltinOptions2) leaves its parameters unused.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "rml/emit/tflite/schema_generated.h"
#pragma GCC diagnostic pop

namespace rml::emit::tfl {

namespace fb = ::flatbuffers;
using ::tflite::BuiltinOperator;
using ::tflite::BuiltinOptions;
using TflType = ::tflite::TensorType;

/// The NCHW -> NHWC permutation (also OIHW -> OHWI for filters), and back.
inline const Ints to_nhwc{0, 2, 3, 1};
inline const Ints to_nchw{0, 3, 1, 2};

/// An operator's builtin options: the union member and a function that
/// builds its table (called while the model is serialized).
struct Options {
  BuiltinOptions type = BuiltinOptions::NONE;
  std::function<fb::Offset<void>(fb::FlatBufferBuilder&)> build;
};

inline TflType tensor_type(DType dtype) { return dtype == DType::f32 ? TflType::FLOAT32 : TflType::INT32; }

/// TFLite stores dimensions and most index operands as int32.
inline std::int32_t narrow(std::int64_t value, std::string_view what) {
  if (value < INT32_MIN || value > INT32_MAX) fail(ErrorCode::unsupported, "tflite: ", what, " ", value, " does not fit in int32");
  return static_cast<std::int32_t>(value);
}

class Context {
 public:
  explicit Context(const Graph& graph) : graph_(graph), value_tensors_(graph.values.size(), -1) { buffers_.emplace_back(); }

  const Graph& graph() const { return graph_; }
  const TensorType& type(ValueId v) const { return graph_.values[v].type; }
  bool is_constant(ValueId v) const { return graph_.values[v].kind == ValueKind::constant; }

  /// The tensor holding rml value `v`: graph inputs, constants (with their
  /// data in a buffer) and node outputs, made on first use.
  std::int32_t tensor(ValueId v) {
    if (value_tensors_[v] >= 0) return value_tensors_[v];
    const Value& value = graph_.values[v];
    std::uint32_t buffer = 0;
    if (value.kind == ValueKind::constant) {
      const Tensor& data = *value.data;
      buffer = add_buffer(std::string(reinterpret_cast<const char*>(data.raw()), data.bytes()));
    }
    return value_tensors_[v] = add_tensor(value_name(graph_, v), tensor_type(value.type.dtype), value.type.shape, buffer);
  }
  std::int32_t input(const Node& node, std::size_t i) { return tensor(node.inputs[i]); }
  std::int32_t output(const Node& node, std::size_t i = 0) { return tensor(node.outputs[i]); }

  /// A new tensor for a value a lowering computes on the way.
  std::int32_t temporary(TflType type, const Shape& shape) { return add_tensor(next_name(), type, shape, 0); }

  /// Constants a lowering needs (shapes, axes, permutations, fill values).
  std::int32_t int32s(const std::vector<std::int64_t>& values, std::optional<Shape> shape = std::nullopt) {
    std::vector<std::int32_t> narrowed;
    for (std::int64_t v : values) narrowed.push_back(narrow(v, "constant"));
    return constant(TflType::INT32, shape ? *shape : Shape{static_cast<std::int64_t>(values.size())},
                    narrowed.data(), narrowed.size() * 4);
  }
  std::int32_t scalar(double value, DType dtype) {
    if (dtype == DType::f32) {
      const float f = static_cast<float>(value);
      return constant(TflType::FLOAT32, {}, &f, 4);
    }
    const std::int32_t i = narrow(static_cast<std::int64_t>(value), "constant");
    return constant(TflType::INT32, {}, &i, 4);
  }
  std::int32_t floats(const Shape& shape, const std::vector<float>& values) {
    return constant(TflType::FLOAT32, shape, values.data(), values.size() * 4);
  }

  /// An operator computing `outputs` from `inputs` (tensor indices).
  void op(BuiltinOperator code, std::vector<std::int32_t> inputs, std::vector<std::int32_t> outputs, Options options = {}) {
    const auto [it, fresh] = opcodes_.emplace(code, static_cast<std::uint32_t>(opcodes_.size()));
    operators_.push_back({it->second, std::move(inputs), std::move(outputs), std::move(options)});
  }
  /// An operator with one new output tensor, returned.
  std::int32_t helper(BuiltinOperator code, std::vector<std::int32_t> inputs, TflType type, const Shape& shape,
                      Options options = {}) {
    const std::int32_t out = temporary(type, shape);
    op(code, std::move(inputs), {out}, std::move(options));
    return out;
  }

  /// `v` with its axes permuted (out axis i = axis perm[i]): a constant's
  /// data is permuted here, any other value gets one TRANSPOSE, made once.
  std::int32_t permuted(ValueId v, const Ints& perm) {
    const auto key = std::pair(v, perm);
    if (const auto it = permuted_.find(key); it != permuted_.end()) return it->second;
    const TensorType& t = type(v);
    const Shape shape = permute(t.shape, perm);
    std::int32_t result;
    if (is_constant(v)) {
      const Tensor& data = *graph_.values[v].data;
      result = constant(tensor_type(t.dtype), shape, permute_data(data, perm).data(), data.bytes());
    } else {
      result = transpose(tensor(v), t.dtype, t.shape, perm);
    }
    return permuted_[key] = result;
  }
  /// A TRANSPOSE of tensor `x` (of rml shape `shape`) into a new tensor.
  std::int32_t transpose(std::int32_t x, DType dtype, const Shape& shape, const Ints& perm) {
    return helper(BuiltinOperator::TRANSPOSE, {x, int32s(perm)}, tensor_type(dtype), permute(shape, perm));
  }

  /// The serialized model: one subgraph whose inputs and outputs are the rml
  /// graph's, and a "serving_default" signature naming them.
  std::string finish() {
    for (const NamedValue& in : graph_.inputs) tensor(in.value);
    for (const NamedValue& out : graph_.outputs) outputs_.push_back({out.name, output_tensor(out)});
    fb::FlatBufferBuilder b;
    std::vector<fb::Offset<::tflite::Buffer>> buffers;
    for (const std::string& bytes : buffers_) {
      if (bytes.empty()) {
        buffers.push_back(::tflite::CreateBuffer(b));
        continue;
      }
      b.ForceVectorAlignment(bytes.size(), 1, 16);  // the schema's force_align: 16
      const auto data = b.CreateVector(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      buffers.push_back(::tflite::CreateBuffer(b, data));
    }
    std::vector<fb::Offset<::tflite::Tensor>> tensors;
    for (const TensorRecord& t : tensors_)
      tensors.push_back(::tflite::CreateTensor(b, b.CreateVector(t.shape), static_cast<std::int8_t>(t.type), t.buffer,
                                               b.CreateString(t.name)));
    std::vector<fb::Offset<::tflite::Operator>> operators;
    for (const OperatorRecord& o : operators_) {
      const fb::Offset<void> options = o.options.build ? o.options.build(b) : fb::Offset<void>();
      operators.push_back(::tflite::CreateOperator(b, o.opcode, b.CreateVector(o.inputs), b.CreateVector(o.outputs),
                                                   o.options.type, options));
    }
    std::vector<std::int32_t> inputs, outputs;
    std::vector<fb::Offset<::tflite::TensorMap>> input_map, output_map;
    for (const NamedValue& in : graph_.inputs) {
      inputs.push_back(tensor(in.value));
      input_map.push_back(::tflite::CreateTensorMap(b, b.CreateString(in.name), static_cast<std::uint32_t>(inputs.back())));
    }
    for (const auto& [name, index] : outputs_) {
      outputs.push_back(index);
      output_map.push_back(::tflite::CreateTensorMap(b, b.CreateString(name), static_cast<std::uint32_t>(index)));
    }
    const auto subgraph = ::tflite::CreateSubGraph(b, b.CreateVector(tensors), b.CreateVector(inputs), b.CreateVector(outputs),
                                                   b.CreateVector(operators), b.CreateString("main"));
    const auto signature = ::tflite::CreateSignatureDef(b, b.CreateVector(input_map), b.CreateVector(output_map),
                                                        b.CreateString("serving_default"), 0);
    std::vector<fb::Offset<::tflite::OperatorCode>> codes(opcodes_.size());
    for (const auto& [code, index] : opcodes_) {
      const auto value = static_cast<std::int32_t>(code);
      // Codes from 127 on live in builtin_code only; the old byte field says "look there".
      codes[index] = ::tflite::CreateOperatorCode(b, static_cast<std::int8_t>(std::min(value, 127)), 0, version(code), value);
    }
    const auto model = ::tflite::CreateModel(b, 3, b.CreateVector(codes), b.CreateVector(std::vector{subgraph}),
                                             b.CreateString("rml"), b.CreateVector(buffers), 0, 0,
                                             b.CreateVector(std::vector{signature}));
    b.Finish(model, ::tflite::ModelIdentifier());
    return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
  }

  std::size_t operator_count() const { return operators_.size(); }

  static Shape permute(const Shape& shape, const Ints& perm) {
    Shape out;
    for (std::int64_t axis : perm) out.push_back(shape[static_cast<std::size_t>(axis)]);
    return out;
  }

 private:
  struct TensorRecord {
    std::string name;
    TflType type;
    std::vector<std::int32_t> shape;
    std::uint32_t buffer;
  };
  struct OperatorRecord {
    std::uint32_t opcode;
    std::vector<std::int32_t> inputs, outputs;
    Options options;
  };

  /// The operator version the interpreter's kernel registers: 1, except
  /// BROADCAST_TO, whose kernel starts at 2 (1 was a placeholder).
  static std::int32_t version(BuiltinOperator code) { return code == BuiltinOperator::BROADCAST_TO ? 2 : 1; }

  std::string next_name() { return detail::concat("rml_helper_", counter_++); }

  std::int32_t add_tensor(std::string name, TflType type, const Shape& shape, std::uint32_t buffer) {
    std::vector<std::int32_t> dims;
    for (std::int64_t d : shape) dims.push_back(narrow(d, "dimension"));
    tensors_.push_back({std::move(name), type, std::move(dims), buffer});
    return static_cast<std::int32_t>(tensors_.size() - 1);
  }
  std::uint32_t add_buffer(std::string bytes) {
    buffers_.push_back(std::move(bytes));
    return static_cast<std::uint32_t>(buffers_.size() - 1);
  }
  std::int32_t constant(TflType type, const Shape& shape, const void* data, std::size_t bytes) {
    return add_tensor(next_name(), type, shape, add_buffer(std::string(static_cast<const char*>(data), bytes)));
  }

  /// A tensor of 4-byte elements with its axes permuted.
  static std::string permute_data(const Tensor& data, const Ints& perm) {
    const Shape& in = data.shape();
    const std::size_t rank = in.size();
    std::vector<std::int64_t> strides(rank, 1);
    for (std::size_t i = rank; i-- > 1;) strides[i - 1] = strides[i] * in[i];
    const Shape out = permute(in, perm);
    std::string bytes(data.bytes(), '\0');
    const auto* from = reinterpret_cast<const std::uint32_t*>(data.raw());
    auto* to = reinterpret_cast<std::uint32_t*>(bytes.data());
    std::vector<std::int64_t> index(rank, 0);
    for (std::size_t n = 0, count = bytes.size() / 4; n < count; ++n) {
      std::int64_t offset = 0;
      for (std::size_t i = 0; i < rank; ++i) offset += index[i] * strides[static_cast<std::size_t>(perm[i])];
      to[n] = from[offset];
      for (std::size_t i = rank; i-- > 0;) {  // next output index, last axis fastest
        if (++index[i] < out[i]) break;
        index[i] = 0;
      }
    }
    return bytes;
  }

  /// The tensor a graph output is read from: a RESHAPE copy named after the
  /// output when its value's tensor has another name (an input, a constant,
  /// a value output twice).
  std::int32_t output_tensor(const NamedValue& out) {
    const std::int32_t t = tensor(out.value);
    if (tensors_[static_cast<std::size_t>(t)].name == out.name) return t;
    const TensorType& vt = type(out.value);
    const std::int32_t copy = add_tensor(out.name, tensor_type(vt.dtype), vt.shape, 0);
    op(BuiltinOperator::RESHAPE, {t, int32s(vt.shape)}, {copy});
    return copy;
  }

  const Graph& graph_;
  std::vector<std::int32_t> value_tensors_;
  std::vector<TensorRecord> tensors_;
  std::vector<std::string> buffers_;  // buffer 0 is the schema's empty sentinel
  std::map<BuiltinOperator, std::uint32_t> opcodes_;
  std::vector<OperatorRecord> operators_;
  std::vector<std::pair<std::string, std::int32_t>> outputs_;
  std::map<std::pair<ValueId, Ints>, std::int32_t> permuted_;
  std::size_t counter_ = 0;
};

}  // namespace rml::emit::tfl
