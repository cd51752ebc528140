// The ONNX converter: an rml graph to a ModelProto at opset 18 that ONNX
// Runtime loads, in four phases. Scan: which constants are used (unused ones
// are dropped) and whether any name would be given to two values. Boundary:
// graph inputs and outputs with their element types and static shapes.
// Lower: one lowering per node, in execution order (onnx/lowerings.hpp).
// Emit: the ModelProto, and the sidecar holding large initializers.
#pragma once

#include <set>

#include "rml/emit/onnx/lowerings.hpp"

namespace rml::emit {

struct Onnx {
  static constexpr std::string_view name = "onnx";
  static constexpr std::string_view summary = "ONNX ModelProto, opset 18 (checked by ONNX Runtime)";
  static constexpr std::string_view content_type = "application/onnx";
  static constexpr std::string_view extension = ".onnx";
  using Context = onnx::Context;

  static ConvertedModel convert(const Graph& graph, const ConvertOptions& options) {
    const std::vector<std::size_t> order = validate(graph);
    check_names(graph);
    onnx::Context context(graph, options);
    for (ValueId v : used_constants(graph, order)) context.initializer(v);
    lower_nodes<Onnx>(context, graph, order);
    // An output whose value already has another name (an input, a constant,
    // an earlier output) is copied under its own.
    for (const NamedValue& out : graph.outputs)
      if (context.name(out.value) != out.name) context.copy(context.name(out.value), out.name);
    return {model_bytes(graph, context), std::string(content_type), sidecar(context), context.nodes().size(), {}};
  }

 private:
  /// Constants some node reads, in first-use order.
  static std::vector<ValueId> used_constants(const Graph& graph, const std::vector<std::size_t>& order) {
    std::vector<ValueId> used;
    std::set<ValueId> seen;
    for (std::size_t n : order)
      for (ValueId v : graph.nodes[n].inputs)
        if (graph.values[v].kind == ValueKind::constant && seen.insert(v).second) used.push_back(v);
    for (const NamedValue& out : graph.outputs)
      if (graph.values[out.value].kind == ValueKind::constant && seen.insert(out.value).second) used.push_back(out.value);
    return used;
  }

  /// ONNX names each value once: two rml values may not share an emitted name.
  static void check_names(const Graph& graph) {
    std::map<std::string, ValueId> owner;
    for (ValueId v = 0; v < graph.values.size(); ++v) {
      const auto [it, fresh] = owner.emplace(value_name(graph, v), v);
      if (!fresh) fail(ErrorCode::duplicate_definition, "onnx: values ", it->second, " and ", v, " would both be named '", it->first, "'");
    }
    for (const NamedValue& out : graph.outputs)
      if (const auto it = owner.find(out.name); it != owner.end() && it->second != out.value)
        fail(ErrorCode::duplicate_definition, "onnx: output '", out.name, "' has the name of value ", it->second);
  }

  // ValueInfoProto: name = 1, type = 2; TypeProto.tensor_type = 1;
  // Tensor: elem_type = 1, shape = 2; TensorShapeProto.dim = 1; dim_value = 1.
  static onnx::Writer value_info(const std::string& name, const TensorType& type) {
    onnx::Writer shape;
    for (std::int64_t d : type.shape) shape.message(1, onnx::Writer().int64(1, d));
    onnx::Writer tensor;
    tensor.varint(1, static_cast<std::uint64_t>(onnx::element_type(type.dtype))).message(2, shape);
    return std::move(onnx::Writer().bytes(1, name).message(2, onnx::Writer().message(1, tensor)));
  }

  // GraphProto: node = 1, name = 2, initializer = 5, input = 11, output = 12.
  // ModelProto: ir_version = 1, producer_name = 2, producer_version = 3,
  // graph = 7, opset_import = 8 (domain = 1, version = 2).
  static std::string model_bytes(const Graph& graph, const onnx::Context& context) {
    onnx::Writer g;
    for (const onnx::Writer& node : context.nodes()) g.message(1, node);
    g.bytes(2, "rml");
    for (const onnx::Writer& tensor : context.initializers()) g.message(5, tensor);
    for (const NamedValue& in : graph.inputs) g.message(11, value_info(in.name, graph.type(in.value)));
    for (const NamedValue& out : graph.outputs) g.message(12, value_info(out.name, graph.type(out.value)));
    onnx::Writer model;
    model.int64(1, onnx::ir_version).bytes(2, "rml").bytes(3, "0.1.0").message(7, g);
    model.message(8, onnx::Writer().bytes(1, "").int64(2, onnx::opset));
    return model.str();
  }

  static std::optional<Sidecar> sidecar(const onnx::Context& context) {
    if (context.sidecar().empty()) return std::nullopt;
    return Sidecar{context.sidecar_name(), context.sidecar()};
  }
};

}  // namespace rml::emit
