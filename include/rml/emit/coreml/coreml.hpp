// The CoreML converter: an rml graph to an ML Program package (.mlpackage),
// the folder Xcode and coremltools read:
//
//   Manifest.json                               the package's items, by identifier
//   Data/com.apple.CoreML/model.mlmodel         the Model protobuf (specification
//                                               version 6, iOS 15) holding the MIL program
//   Data/com.apple.CoreML/weights/weight.bin    the f32 constants of at least
//                                               external_threshold bytes (when there are any)
//
// Scan: nodes past MIL's limits are refused in preflight (refuse_node: rank
// above 5, empty tensors). Boundary, lower and emit: coreml/context.hpp and
// coreml/lowerings.hpp. The package's identifiers are derived from its
// contents, so converting the same graph twice writes the same bytes.
#pragma once

#include "rml/core/file.hpp"
#include "rml/emit/coreml/lowerings.hpp"
#include "rml/ir/op_json.hpp"

namespace rml::emit {

struct Coreml {
  static constexpr std::string_view name = "coreml";
  static constexpr std::string_view summary = "CoreML ML Program package (.mlpackage, iOS 15 opset; checked by coremltools)";
  static constexpr std::string_view content_type = "application/vnd.apple.mlpackage";
  static constexpr std::string_view extension = ".mlpackage";
  static constexpr std::string_view manifest = "Manifest.json";
  using Context = coreml::Context;

  /// MIL tensors have no zero-sized dimension and rank at most 5. A value
  /// of higher rank is carried with its leading axes merged
  /// (Context::mil_shape) between reshapes, and through broadcasts that
  /// leave those axes alone; any other use, or the model's boundary, is refused.
  static std::string refuse_node(const Graph& graph, const Node& node) {
    for (const std::vector<ValueId>* values : {&node.inputs, &node.outputs})
      for (ValueId v : *values)
        if (std::string reason = refuse_value(graph, node, v); !reason.empty()) return reason;
    return "";
  }

  static ConvertedModel convert(const Graph& graph, const ConvertOptions& options) {
    const std::vector<std::size_t> order = validate(graph);
    coreml::Context c(graph, options);
    const std::vector<coreml::Writer> inputs = c.declare_inputs();
    lower_nodes<Coreml>(c, graph, order);
    const std::vector<std::string> outputs = c.declare_outputs();

    coreml::Writer block;
    for (const std::string& out : outputs) block.bytes(2, out);               // Block.outputs
    for (const coreml::Writer& op : c.operations()) block.message(3, op);     // Block.operations
    coreml::Writer function;
    for (const coreml::Writer& in : inputs) function.message(1, in);          // Function.inputs
    function.bytes(2, opset).message(3, coreml::entry(opset, block));         // opset, block_specializations
    coreml::Writer program;
    program.varint(1, 1).message(2, coreml::entry("main", function));        // Program.version, functions
    coreml::Writer description;
    for (std::size_t i = 0; i < graph.inputs.size(); ++i)
      description.message(1, coreml::feature(c.input_names()[i], boundary(graph, graph.inputs[i])));   // ModelDescription.input
    for (std::size_t i = 0; i < graph.outputs.size(); ++i)
      description.message(10, coreml::feature(c.output_names()[i], boundary(graph, graph.outputs[i])));  // ModelDescription.output
    coreml::Writer model;
    model.varint(1, specification_version).message(2, description).message(502, program);  // Model.mlProgram

    ConvertedModel out{model.str(), std::string(content_type), std::nullopt, c.op_count(), {}};
    const bool has_weights = !c.blob().empty();
    out.package.push_back({std::string(manifest), manifest_json(out.data, has_weights)});
    out.package.push_back({"Data/com.apple.CoreML/model.mlmodel", out.data});
    if (has_weights) out.package.push_back({"Data/com.apple.CoreML/weights/weight.bin", c.blob().finish()});
    return out;
  }

 private:
  static constexpr std::uint64_t specification_version = 6;  // iOS 15, the first with ML Programs
  static constexpr std::string_view opset = "CoreML5";          // the MIL opset of iOS 15

  static std::string refuse_value(const Graph& graph, const Node& node, ValueId v) {
    const Shape& shape = graph.values[v].type.shape;
    if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return detail::concat("coreml: MIL has no empty tensors, ", to_string(shape));
    if (shape.size() <= coreml::Context::max_rank || (carries_high_rank(graph, node) && !at_boundary(graph, v))) return "";
    return detail::concat("coreml: MIL tensors have rank at most 5, this one ", to_string(shape));
  }

  /// Reshapes, and broadcasts whose input (padded to the output's rank)
  /// keeps the output's leading axes, work on merged leading axes alike.
  static bool carries_high_rank(const Graph& graph, const Node& node) {
    if (holds<Reshape>(node.op)) return true;
    if (!holds<BroadcastTo>(node.op)) return false;
    const Shape &in = graph.type(node.inputs[0]).shape, &out = graph.type(node.outputs[0]).shape;
    if (out.size() <= coreml::Context::max_rank) return true;
    const std::size_t merged = out.size() - (coreml::Context::max_rank - 1), padding = out.size() - in.size();
    for (std::size_t axis = 0; axis < merged; ++axis)
      if ((axis < padding ? 1 : in[axis - padding]) != out[axis]) return false;
    return true;
  }

  static bool at_boundary(const Graph& graph, ValueId v) {
    auto is = [v](const NamedValue& named) { return named.value == v; };
    return std::any_of(graph.inputs.begin(), graph.inputs.end(), is) || std::any_of(graph.outputs.begin(), graph.outputs.end(), is) ||
           graph.values[v].kind == ValueKind::constant;
  }

  static TensorType boundary(const Graph& graph, const NamedValue& value) {
    const TensorType& t = graph.type(value.value);
    return {t.dtype, coreml::Context::boundary_shape(t.shape)};
  }

  /// A UUID-shaped identifier derived from `bytes`.
  static std::string identifier(std::string_view bytes, std::uint64_t salt) {
    const std::uint64_t a = file_detail::content_hash(bytes) ^ salt;
    const std::uint64_t b = file_detail::content_hash(std::to_string(a));
    char text[37];
    std::snprintf(text, sizeof text, "%08llx-%04llx-4%03llx-8%03llx-%012llx", static_cast<unsigned long long>(a >> 32),
                  static_cast<unsigned long long>((a >> 16) & 0xFFFF), static_cast<unsigned long long>(a & 0xFFF),
                  static_cast<unsigned long long>(b >> 52), static_cast<unsigned long long>(b & 0xFFFFFFFFFFFFull));
    return text;
  }

  static std::string manifest_json(std::string_view model, bool has_weights) {
    const std::string root = identifier(model, 1);
    Json items = Json::object();
    items[root] = {{"author", "com.apple.CoreML"}, {"description", "CoreML Model Specification"},
                   {"name", "model.mlmodel"}, {"path", "com.apple.CoreML/model.mlmodel"}};
    if (has_weights)
      items[identifier(model, 2)] = {{"author", "com.apple.CoreML"}, {"description", "CoreML Model Weights"},
                                     {"name", "weights"}, {"path", "com.apple.CoreML/weights"}};
    const Json manifest_value = {{"fileFormatVersion", "1.0.0"}, {"itemInfoEntries", items}, {"rootModelIdentifier", root}};
    return manifest_value.dump(4) + "\n";
  }
};

}  // namespace rml::emit
