// Dropping what no output depends on.
#pragma once

#include "rml/ir/graph.hpp"

namespace rml {

/// The graph without nodes whose outputs no graph output depends on, and
/// without constants nothing reads. Inputs are kept: they are the interface.
inline Graph without_dead_code(const Graph& graph) {
  std::vector<std::int64_t> producer(graph.values.size(), -1);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n)
    for (ValueId id : graph.nodes[n].outputs) producer[id] = static_cast<std::int64_t>(n);
  std::vector<bool> live_node(graph.nodes.size(), false);
  std::vector<ValueId> pending;
  for (const NamedValue& out : graph.outputs) pending.push_back(out.value);
  while (!pending.empty()) {
    const ValueId id = pending.back();
    pending.pop_back();
    if (producer[id] < 0 || live_node[producer[id]]) continue;
    live_node[producer[id]] = true;
    for (ValueId in : graph.nodes[producer[id]].inputs) pending.push_back(in);
  }
  // Keep inputs, the outputs of live nodes and the constants they read,
  // in their original order.
  std::vector<bool> keep(graph.values.size(), false);
  for (const NamedValue& in : graph.inputs) keep[in.value] = true;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n)
    if (live_node[n]) {
      for (ValueId id : graph.nodes[n].inputs) keep[id] = true;
      for (ValueId id : graph.nodes[n].outputs) keep[id] = true;
    }
  std::vector<ValueId> new_id(graph.values.size(), 0);
  Graph out;
  for (std::size_t v = 0; v < graph.values.size(); ++v)
    if (keep[v]) {
      new_id[v] = static_cast<ValueId>(out.values.size());
      out.values.push_back(graph.values[v]);
    }
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    if (!live_node[n]) continue;
    Node node = graph.nodes[n];
    for (ValueId& id : node.inputs) id = new_id[id];
    for (ValueId& id : node.outputs) id = new_id[id];
    out.nodes.push_back(std::move(node));
  }
  for (const NamedValue& in : graph.inputs) out.inputs.push_back({in.name, new_id[in.value]});
  for (const NamedValue& o : graph.outputs) out.outputs.push_back({o.name, new_id[o.value]});
  return out;
}

}  // namespace rml
