// A graph being rewritten by a clean-up pass: who produces and who reads each
// value, and the edits a pass makes (new nodes and constants, rerouted
// readers). New nodes are appended; `run_passes` restores a topological order
// and drops what became dead.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "rml/ir/dead_code.hpp"
#include "rml/ir/graph.hpp"
#include "rml/registry.hpp"

namespace rml::passes {

class Rewriter {
 public:
  explicit Rewriter(Graph& graph) : graph_(graph) { reindex(); }

  Graph& graph() { return graph_; }
  const Graph& graph() const { return graph_; }
  const TensorType& type(ValueId id) const { return graph_.values[id].type; }
  const Shape& shape(ValueId id) const { return graph_.values[id].type.shape; }
  bool is_constant(ValueId id) const { return graph_.values[id].kind == ValueKind::constant; }
  const Tensor& data(ValueId id) const { return *graph_.values[id].data; }

  /// The node computing `id`, or nullptr for inputs and constants.
  const Node* producer(ValueId id) const { return producer_[id] < 0 ? nullptr : &graph_.nodes[producer_[id]]; }
  std::int64_t producer_index(ValueId id) const { return producer_[id]; }
  /// Node indices reading `id` (a node reading it twice is listed twice).
  const std::vector<std::size_t>& readers(ValueId id) const { return readers_[id]; }
  bool is_output(ValueId id) const {
    return std::any_of(graph_.outputs.begin(), graph_.outputs.end(), [&](const NamedValue& o) { return o.value == id; });
  }
  /// Readers plus graph outputs naming it.
  std::size_t use_count(ValueId id) const {
    return readers_[id].size() + static_cast<std::size_t>(std::count_if(
                                     graph_.outputs.begin(), graph_.outputs.end(),
                                     [&](const NamedValue& o) { return o.value == id; }));
  }
  bool single_use(ValueId id) const { return use_count(id) == 1; }

  /// Appends a node; returns its outputs (types from the op's shape rule).
  std::vector<ValueId> add_multi(AnyOp op, std::vector<ValueId> inputs) {
    std::vector<TensorType> in_types;
    for (ValueId id : inputs) in_types.push_back(type(id));
    const Types out_types = infer_types(op, in_types);
    std::vector<ValueId> outputs;
    for (const TensorType& t : out_types) {
      outputs.push_back(static_cast<ValueId>(graph_.values.size()));
      graph_.values.push_back({t, ValueKind::node_output, std::nullopt, ""});
      producer_.push_back(static_cast<std::int64_t>(graph_.nodes.size()));
      readers_.emplace_back();
    }
    for (ValueId id : inputs) readers_[id].push_back(graph_.nodes.size());
    graph_.nodes.push_back({std::move(op), std::move(inputs), outputs});
    ++changes;
    return outputs;
  }
  ValueId add(AnyOp op, std::vector<ValueId> inputs) { return add_multi(std::move(op), std::move(inputs)).front(); }

  ValueId add_constant(Tensor data, std::string name = "") {
    const ValueId id = static_cast<ValueId>(graph_.values.size());
    const TensorType t = data.type();
    graph_.values.push_back({t, ValueKind::constant, std::move(data), std::move(name)});
    producer_.push_back(-1);
    readers_.emplace_back();
    return id;
  }

  /// Every reader of `from` (nodes and graph outputs) reads `to` instead. A
  /// graph output must stay computed, so an input or constant reaches it
  /// through an identity reshape.
  void replace_uses(ValueId from, ValueId to) {
    if (from == to) return;
    for (std::size_t n : readers_[from]) {
      for (ValueId& in : graph_.nodes[n].inputs)
        if (in == from) in = to;
    }
    // One reader entry per input slot, so the entries move over as they are.
    readers_[to].insert(readers_[to].end(), readers_[from].begin(), readers_[from].end());
    readers_[from].clear();
    for (NamedValue& out : graph_.outputs)
      if (out.value == from)
        out.value = graph_.values[to].kind == ValueKind::node_output ? to : add(Reshape{shape(to)}, {to});
    ++changes;
  }

  /// Node `node` reads `to` in input slot `slot`.
  void replace_input(std::size_t node, std::size_t slot, ValueId to) {
    ValueId& in = graph_.nodes[node].inputs[slot];
    auto& old = readers_[in];
    old.erase(std::find(old.begin(), old.end(), node));
    in = to;
    readers_[to].push_back(node);
    ++changes;
  }

  void reindex() {
    producer_.assign(graph_.values.size(), -1);
    readers_.assign(graph_.values.size(), {});
    for (std::size_t n = 0; n < graph_.nodes.size(); ++n) {
      for (ValueId id : graph_.nodes[n].outputs) producer_[id] = static_cast<std::int64_t>(n);
      for (ValueId id : graph_.nodes[n].inputs) readers_[id].push_back(n);
    }
  }

  /// Edits made so far (a pass changed the graph when this grew).
  std::size_t changes = 0;

 private:
  Graph& graph_;
  std::vector<std::int64_t> producer_;
  std::vector<std::vector<std::size_t>> readers_;
};

/// The nodes in a topological order that keeps the existing order where it
/// can (passes append nodes that earlier nodes may now read).
inline void sort_topologically(Graph& graph) {
  std::vector<std::int64_t> producer(graph.values.size(), -1);
  for (std::size_t n = 0; n < graph.nodes.size(); ++n)
    for (ValueId id : graph.nodes[n].outputs) producer[id] = static_cast<std::int64_t>(n);
  std::vector<int> state(graph.nodes.size(), 0);  // 0 new, 1 on the stack, 2 placed
  std::vector<Node> ordered;
  ordered.reserve(graph.nodes.size());
  for (std::size_t root = 0; root < graph.nodes.size(); ++root) {
    if (state[root]) continue;
    std::vector<std::pair<std::size_t, std::size_t>> stack{{root, 0}};  // node, next input
    state[root] = 1;
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < graph.nodes[n].inputs.size()) {
        const std::int64_t p = producer[graph.nodes[n].inputs[next++]];
        if (p >= 0 && state[p] == 1) fail(ErrorCode::internal, "a clean-up pass made the graph cyclic at ", describe_node(graph, n));
        if (p >= 0 && state[p] == 0) {
          state[p] = 1;
          stack.push_back({static_cast<std::size_t>(p), 0});
        }
        continue;
      }
      state[n] = 2;
      ordered.push_back(std::move(graph.nodes[n]));
      stack.pop_back();
    }
  }
  graph.nodes = std::move(ordered);
}

}  // namespace rml::passes
