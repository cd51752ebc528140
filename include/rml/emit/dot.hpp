// The Graphviz converter: the graph as DOT text. Nodes show their op and
// attributes, edges the dtype and shape they carry, constants their names;
// inputs and outputs are ellipses. Every op lowers the same way.
#pragma once

#include <sstream>

#include "rml/emit/contract.hpp"
#include "rml/ir/op_json.hpp"

namespace rml::emit {

struct Dot;

namespace dot {

/// A DOT string literal (named so that ADL cannot pick std::quoted instead).
inline std::string literal(std::string_view text) {
  std::string out = "\"";
  for (char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (ch == '\n') out += "\\n";
    else out += ch;
  }
  return out + "\"";
}

class Context {
 public:
  explicit Context(const Graph& graph) : graph_(graph), producer_(graph.values.size()) {
    out_ << "digraph rml {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n"
            "  edge [fontname=\"Helvetica\", fontsize=9];\n";
    for (const NamedValue& in : graph.inputs) {
      producer_[in.value] = "input:" + in.name;
      out_ << "  " << literal(producer_[in.value]) << " [shape=ellipse, label="
           << literal(in.name + "\n" + to_string(graph.type(in.value))) << "];\n";
    }
  }

  void node(const Node& node, std::string_view op, const Json& attributes) {
    const std::string id = detail::concat("node:", nodes_++);
    std::string label(op);
    for (const auto& [key, value] : attributes.items()) label += "\n" + key + " = " + value.dump();
    out_ << "  " << literal(id) << " [shape=box, style=rounded, label=" << literal(label) << "];\n";
    for (ValueId v : node.inputs) {
      const std::string from = source(v);  // (declares a constant first)
      out_ << "  " << literal(from) << " -> " << literal(id) << " [label=" << literal(edge(v)) << "];\n";
    }
    for (ValueId v : node.outputs) producer_[v] = id;
  }

  std::string finish() {
    for (const NamedValue& out : graph_.outputs) {
      const std::string id = "output:" + out.name;
      out_ << "  " << literal(id) << " [shape=ellipse, label=" << literal(out.name) << "];\n";
      const std::string from = source(out.value);
      out_ << "  " << literal(from) << " -> " << literal(id) << " [label=" << literal(edge(out.value)) << "];\n";
    }
    out_ << "}\n";
    return out_.str();
  }
  std::size_t nodes() const { return nodes_; }

 private:
  std::string edge(ValueId v) const { return to_string(graph_.type(v)); }
  /// Where a value comes from; a constant gets a box the first time it is read.
  const std::string& source(ValueId v) {
    if (producer_[v].empty() && graph_.values[v].kind == ValueKind::constant) {
      const Value& value = graph_.values[v];
      producer_[v] = detail::concat("constant:", v);
      const std::string label = value.name.empty() ? "constant" : value.name;
      out_ << "  " << literal(producer_[v]) << " [shape=box, style=dashed, label=" << literal(label + "\n" + edge(v)) << "];\n";
    }
    return producer_[v];
  }

  const Graph& graph_;
  std::vector<std::string> producer_;  // per value: the DOT node it comes from
  std::ostringstream out_;
  std::size_t nodes_ = 0;
};

}  // namespace dot

template <class Op>
struct Lowering<Dot, Op> {
  static void lower(dot::Context& c, const Node& node, const Op&) { c.node(node, Op::name, op_attributes_json(node.op)); }
};

struct Dot {
  static constexpr std::string_view name = "dot";
  static constexpr std::string_view summary = "Graphviz DOT text (render with `dot -Tsvg`)";
  static constexpr std::string_view content_type = "text/vnd.graphviz";
  static constexpr std::string_view extension = ".dot";
  using Context = dot::Context;

  static ConvertedModel convert(const Graph& graph, const ConvertOptions&) {
    dot::Context context(graph);
    for (std::size_t n : validate(graph))
      visit_op([&](const auto& op) { Lowering<Dot, std::decay_t<decltype(op)>>::lower(context, graph.nodes[n], op); },
                 graph.nodes[n].op);
    const std::size_t nodes = context.nodes();
    return {context.finish(), std::string(content_type), std::nullopt, nodes, {}};
  }
};

}  // namespace rml::emit
