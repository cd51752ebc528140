// The converter contract. A converter is pure: a validated rml graph in, the
// bytes of another runtime's model out (plus an optional weights sidecar). It
// never touches a device or the file system; the CLI writes what it returns.
//
// Each backend declares its lowering for each op as a specialisation
// `emit::Lowering<Backend, Op>` with `static void lower(Backend::Context&,
// const Node&, const Op&)` (one-to-one mappings are plain data that a generic
// specialisation reads). An op without one is a known "unsupported" entry:
// the preflight check and the support matrix are computed from the op list at
// compile time, not by grepping sources.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "rml/core/folder.hpp"
#include "rml/ir/graph.hpp"

namespace rml::emit {

/// A file that belongs beside the model (external weights).
struct Sidecar {
  std::string file_name;  // as the model refers to it: a plain name in the model's folder
  std::string data;
};

struct ConvertedModel {
  std::string data;  // the model file; for a folder format, its root model file (also in `package`)
  std::string content_type;
  std::optional<Sidecar> weights;
  std::size_t nodes = 0;  // nodes in the emitted model
  std::vector<FolderFile> package;  // not empty: the model is a folder of these files (a CoreML .mlpackage)
};

struct ConvertOptions {
  /// The model's file name (no folder): sidecars are named after it.
  std::string model_file_name = "model";
  /// The sidecar's file name; empty: the backend names it after the model.
  std::string sidecar_file_name;
  /// Constants of at least this many bytes go to the sidecar, where the format has one.
  std::size_t external_threshold = 1024;
};

/// A node a backend cannot take, and why.
struct Unsupported {
  std::size_t node;
  std::string op;
  std::string output;  // the node's first output, by its emitted name
  std::string reason;
};

/// One backend's lowering of one op; undefined (unsupported) unless specialised.
template <class Backend, class Op>
struct Lowering;

template <class Backend, class Op>
concept Lowers = requires(typename Backend::Context& context, const Node& node, const Op& op) {
  Lowering<Backend, Op>::lower(context, node, op);
};

/// Why this node cannot be lowered although its op can ("" when it can): a
/// backend may refuse any node past its format's limits with `static
/// std::string refuse_node(const Graph&, const Node&)` (CoreML's rank limit),
/// and a lowering may refuse dtypes or attributes with `static std::string
/// refuse(const Graph&, const Node&, const Op&)`.
template <class Backend, class Op>
std::string refusal(const Graph& graph, const Node& node, const Op& op) {
  if constexpr (requires { Backend::refuse_node(graph, node); })
    if (std::string reason = Backend::refuse_node(graph, node); !reason.empty()) return reason;
  if constexpr (requires { Lowering<Backend, Op>::refuse(graph, node, op); })
    return Lowering<Backend, Op>::refuse(graph, node, op);
  else
    return "";
}

/// Whether `Backend` lowers each registry op, in registry order.
template <class Backend>
constexpr auto support_row() {
  std::array<bool, Registry::size> row{};
  std::size_t i = 0;
  Registry::for_each([&](auto type) { row[i++] = Lowers<Backend, typename decltype(type)::type>; });
  return row;
}

/// The name a value has in emitted models: its graph output name (a node
/// output's first), input name or constant name, else `value_<id>`.
inline std::string value_name(const Graph& graph, ValueId id) {
  const Value& value = graph.values[id];
  if (value.kind == ValueKind::node_output)
    for (const NamedValue& out : graph.outputs)
      if (out.value == id) return out.name;
  if (value.kind == ValueKind::input)
    for (const NamedValue& in : graph.inputs)
      if (in.value == id) return in.name;
  if (value.kind == ValueKind::constant && !value.name.empty()) return value.name;
  return detail::concat("value_", id);
}

/// Lowers the nodes in `order` with Backend's lowerings; a node without one
/// is an error (convert runs preflight first, which names them all).
template <class Backend>
void lower_nodes(typename Backend::Context& context, const Graph& graph, const std::vector<std::size_t>& order) {
  for (std::size_t n : order)
    visit_op(
        [&](const auto& op) {
          using Op = std::decay_t<decltype(op)>;
          if constexpr (Lowers<Backend, Op>) Lowering<Backend, Op>::lower(context, graph.nodes[n], op);
          else fail(ErrorCode::unsupported, Backend::name, " has no lowering for op '", Op::name, "'");
        },
        graph.nodes[n].op);
}

/// Every node `Backend` cannot take, in node order.
template <class Backend>
std::vector<Unsupported> preflight(const Graph& graph) {
  std::vector<Unsupported> found;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    const std::string reason = visit_op(
        [&](const auto& op) -> std::string {
          using Op = std::decay_t<decltype(op)>;
          if constexpr (!Lowers<Backend, Op>)
            return detail::concat(Backend::name, " has no lowering for op '", Op::name, "'");
          else
            return refusal<Backend>(graph, node, op);
        },
        node.op);
    if (!reason.empty())
      found.push_back({n, std::string(op_name(node.op)), value_name(graph, node.outputs[0]), reason});
  }
  return found;
}

inline std::string describe(const Unsupported& u) {
  return detail::concat("node ", u.node, " (", u.op, ") -> '", u.output, "': ", u.reason);
}

}  // namespace rml::emit
