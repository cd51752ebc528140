// What an ONNX lowering writes into: the graph's nodes and initializers as
// protobuf messages, with the naming rules every lowering shares. rml values
// keep their emitted names (emit::value_name); nodes and values a lowering adds
// take one counter, so a helper node and its output share a number.
#pragma once

#include <cmath>
#include <map>
#include <span>

#include "rml/emit/contract.hpp"
#include "rml/emit/protobuf.hpp"

namespace rml::emit::onnx {

/// The opset the emitted models import (ai.onnx). 18 is the first where
/// every reduction takes its axes as an input (ReduceSum did from 13), it has
/// LayerNormalization (17), and every ONNX Runtime of the last three years
/// runs it. GELU (opset 20) and attention (23) are written as subgraphs.
inline constexpr std::int64_t opset = 18;
/// IR version 8 is the one that goes with opset 18 (ONNX 1.13).
inline constexpr std::int64_t ir_version = 8;

/// TensorProto.DataType values.
enum class ElementType : std::int32_t { float32 = 1, int32 = 6, int64 = 7, boolean = 9 };

inline ElementType element_type(DType dtype) { return dtype == DType::f32 ? ElementType::float32 : ElementType::int32; }

using protobuf::Writer;

// AttributeProto: name = 1, f = 2, i = 3, s = 4, floats = 7, ints = 8, type = 20.
inline Writer attribute_int(std::string_view name, std::int64_t value) {
  return std::move(Writer().bytes(1, name).int64(3, value).varint(20, 2));
}
inline Writer attribute_float(std::string_view name, float value) {
  return std::move(Writer().bytes(1, name).float32(2, value).varint(20, 1));
}
inline Writer attribute_ints(std::string_view name, const std::vector<std::int64_t>& values) {
  Writer attribute;
  attribute.bytes(1, name);
  for (std::int64_t v : values) attribute.int64(8, v);  // proto2 repeated: one field per value
  attribute.varint(20, 7);
  return attribute;
}

/// A TensorProto's header: dims = 1, data_type = 2, name = 8.
inline Writer tensor_header(std::string_view name, ElementType type, std::span<const std::int64_t> dims) {
  Writer tensor;
  for (std::int64_t d : dims) tensor.int64(1, d);
  tensor.varint(2, static_cast<std::uint64_t>(type));
  tensor.bytes(8, name);
  return tensor;
}

class Context {
 public:
  Context(const Graph& graph, const ConvertOptions& options) : graph_(graph), options_(options) {}

  const Graph& graph() const { return graph_; }
  const TensorType& type(ValueId v) const { return graph_.values[v].type; }
  std::string name(ValueId v) const { return value_name(graph_, v); }
  std::string input(const Node& node, std::size_t i) const { return name(node.inputs[i]); }
  std::vector<std::string> inputs(const Node& node) const {
    std::vector<std::string> names;
    for (ValueId v : node.inputs) names.push_back(name(v));
    return names;
  }

  /// The node computing `rml_node`'s outputs (named after them).
  void emit(std::string_view op_type, std::vector<std::string> inputs, const Node& rml_node,
            std::vector<Writer> attributes = {}) {
    std::vector<std::string> outputs;
    for (ValueId v : rml_node.outputs) outputs.push_back(name(v));
    add_node(op_type, detail::concat(op_type, "_", outputs[0]), inputs, outputs, attributes);
  }
  /// An Identity node giving value `from` a second name.
  void copy(const std::string& from, const std::string& to) { add_node("Identity", "Identity_" + to, {from}, {to}, {}); }
  /// A helper node with `count` outputs, named by the shared counter.
  std::vector<std::string> helper_outputs(std::string_view op_type, std::vector<std::string> inputs, std::size_t count,
                                          std::vector<Writer> attributes = {}) {
    const std::string base = next_name();
    std::vector<std::string> outputs;
    for (std::size_t i = 0; i < count; ++i) outputs.push_back(count == 1 ? base : detail::concat(base, "_", i));
    add_node(op_type, base, inputs, outputs, attributes);
    return outputs;
  }
  std::string helper(std::string_view op_type, std::vector<std::string> inputs, std::vector<Writer> attributes = {}) {
    return helper_outputs(op_type, std::move(inputs), 1, std::move(attributes))[0];
  }

  /// Small constants a lowering needs (shapes, axes, scalars), always inline.
  std::string int64s(const std::vector<std::int64_t>& values) {
    const std::int64_t dims[] = {static_cast<std::int64_t>(values.size())};
    return inline_constant(ElementType::int64, dims, values.data(), values.size() * 8);
  }
  std::string scalar(double value, DType dtype) {
    if (dtype == DType::f32) {
      const float f = static_cast<float>(value);
      return inline_constant(ElementType::float32, {}, &f, 4);
    }
    const auto i = static_cast<std::int32_t>(value);
    return inline_constant(ElementType::int32, {}, &i, 4);
  }
  std::string floats(std::span<const std::int64_t> dims, const std::vector<float>& values) {
    return inline_constant(ElementType::float32, dims, values.data(), values.size() * 4);
  }

  /// A graph constant as an initializer: inline, or in the sidecar when large.
  void initializer(ValueId v) {
    const Tensor& data = *graph_.values[v].data;
    Writer tensor = tensor_header(name(v), element_type(data.dtype()), data.shape());
    const std::string_view bytes(reinterpret_cast<const char*>(data.raw()), data.bytes());
    if (bytes.size() >= options_.external_threshold && bytes.size() > 0) {
      // ONNX's external-data convention: location, offset, length; data_location = EXTERNAL.
      const std::size_t offset = (sidecar_.size() + 4095) / 4096 * 4096;  // page-aligned for memory mapping
      sidecar_.resize(offset, '\0');
      sidecar_.append(bytes);
      for (const auto& [key, value] : {std::pair<std::string, std::string>{"location", sidecar_name()},
                                       {"offset", std::to_string(offset)},
                                       {"length", std::to_string(bytes.size())}})
        tensor.message(13, Writer().bytes(1, key).bytes(2, value));
      tensor.varint(14, 1);
    } else {
      tensor.bytes(9, bytes);  // raw_data, little-endian
    }
    initializers_.push_back(std::move(tensor));
  }

  std::string sidecar_name() const {
    return options_.sidecar_file_name.empty() ? options_.model_file_name + ".data" : options_.sidecar_file_name;
  }
  const std::string& sidecar() const { return sidecar_; }
  const std::vector<Writer>& nodes() const { return nodes_; }
  const std::vector<Writer>& initializers() const { return initializers_; }

 private:
  std::string next_name() { return detail::concat("rml_helper_", counter_++); }

  std::string inline_constant(ElementType type, std::span<const std::int64_t> dims, const void* data, std::size_t bytes) {
    const std::string name = next_name();
    Writer tensor = tensor_header(name, type, dims);
    tensor.bytes(9, std::string_view(static_cast<const char*>(data), bytes));
    initializers_.push_back(std::move(tensor));
    return name;
  }

  // NodeProto: input = 1, output = 2, name = 3, op_type = 4, attribute = 5.
  void add_node(std::string_view op_type, const std::string& node_name, const std::vector<std::string>& inputs,
                const std::vector<std::string>& outputs, const std::vector<Writer>& attributes) {
    Writer node;
    for (const std::string& in : inputs) node.bytes(1, in);
    for (const std::string& out : outputs) node.bytes(2, out);
    node.bytes(3, node_name).bytes(4, op_type);
    for (const Writer& attribute : attributes) node.message(5, attribute);
    nodes_.push_back(std::move(node));
  }

  const Graph& graph_;
  const ConvertOptions& options_;
  std::vector<Writer> nodes_, initializers_;
  std::string sidecar_;
  std::size_t counter_ = 0;
};

}  // namespace rml::emit::onnx
