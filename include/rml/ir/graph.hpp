// The in-memory IR: values with static types, nodes applying ops, named
// inputs and outputs; and the validation every loaded graph goes through.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "rml/core/tensor.hpp"
#include "rml/core/utf8.hpp"
#include "rml/registry.hpp"

namespace rml {

using ValueId = std::uint32_t;

enum class ValueKind : std::uint8_t { input, constant, node_output };

struct Value {
  TensorType type;
  ValueKind kind = ValueKind::node_output;
  /// Constants only: the data, and the name it is stored under (empty for an
  /// unnamed constant, which the writer may inline).
  std::optional<Tensor> data;
  std::string name;
};

struct Node {
  AnyOp op;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
};

struct NamedValue {
  std::string name;
  ValueId value;
  friend bool operator==(const NamedValue&, const NamedValue&) = default;
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<NamedValue> inputs;
  std::vector<NamedValue> outputs;

  const TensorType& type(ValueId id) const { return values.at(id).type; }
};

inline std::string describe_node(const Graph& graph, std::size_t index) {
  return detail::concat("node ", index, " (", op_name(graph.nodes[index].op), ")");
}

/// Fails unless `name` (what `role` names: an input, an output, a constant)
/// is valid UTF-8; the message shows the name up to the bad byte.
inline void check_name_utf8(std::string_view name, std::string_view role) {
  if (const auto bad = first_invalid_utf8(name))
    fail(ErrorCode::invalid_utf8, role, " name '", name.substr(0, *bad), "...' is not valid UTF-8 (byte ",
         static_cast<unsigned>(static_cast<unsigned char>(name[*bad])), " at offset ", *bad, ")");
}

/// Checks every structural rule and re-runs every shape rule; returns the
/// nodes in a valid execution order. Errors name the node, value or output.
inline std::vector<std::size_t> validate(const Graph& graph) {
  const std::size_t value_count = graph.values.size();
  std::vector<std::int64_t> producer(value_count, -1);  // node index, or -1
  std::vector<bool> listed_input(value_count, false);

  auto check_id = [&](ValueId id, auto&&... where) {
    if (id >= value_count)
      fail(ErrorCode::undefined_value, where..., " refers to value ", id, ", which does not exist (the graph has ",
           value_count, " values)");
  };

  std::unordered_set<std::string> names;
  for (const NamedValue& in : graph.inputs) {
    check_name_utf8(in.name, "input");
    check_id(in.value, "input '", in.name, "'");
    if (!names.insert(in.name).second) fail(ErrorCode::duplicate_definition, "input name '", in.name, "' is used twice");
    if (graph.values[in.value].kind != ValueKind::input)
      fail(ErrorCode::graph_schema, "input '", in.name, "' names value ", in.value, ", which is not an input value");
    if (listed_input[in.value]) fail(ErrorCode::duplicate_definition, "value ", in.value, " is listed as two inputs");
    listed_input[in.value] = true;
  }
  for (std::size_t v = 0; v < value_count; ++v) {
    const Value& value = graph.values[v];
    element_count(value.type.shape, detail::concat("value ", v));
    if (value.kind == ValueKind::input && !listed_input[v])
      fail(ErrorCode::graph_schema, "value ", v, " is marked as an input but no input names it");
    if (value.kind == ValueKind::constant) {
      check_name_utf8(value.name, "constant");
      if (!value.data) fail(ErrorCode::graph_schema, "constant value ", v, " has no data");
      if (value.data->type() != value.type)
        fail(ErrorCode::weights_mismatch, "constant value ", v, " is declared ", to_string(value.type), " but holds ",
             to_string(value.data->type()));
    }
  }

  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    for (std::size_t i = 0; i < node.inputs.size(); ++i)
      check_id(node.inputs[i], describe_node(graph, n), ": input ", i);
    if (node.outputs.empty()) fail(ErrorCode::wrong_arity, describe_node(graph, n), " has no outputs");
    for (std::size_t o = 0; o < node.outputs.size(); ++o) {
      const ValueId id = node.outputs[o];
      check_id(id, describe_node(graph, n), ": output ", o);
      if (graph.values[id].kind != ValueKind::node_output)
        fail(ErrorCode::duplicate_definition, describe_node(graph, n), ": output ", o, " is value ", id,
             ", which is an input or a constant");
      if (producer[id] >= 0)
        fail(ErrorCode::duplicate_definition, "value ", id, " is produced twice, by ", describe_node(graph, producer[id]),
             " and ", describe_node(graph, n));
      producer[id] = static_cast<std::int64_t>(n);
    }
  }
  for (std::size_t v = 0; v < value_count; ++v)
    if (graph.values[v].kind == ValueKind::node_output && producer[v] < 0)
      fail(ErrorCode::undefined_value, "value ", v, " is dangling: no node produces it and it is not an input or constant");

  // Kahn's algorithm: a node is ready once every input it reads is available.
  std::vector<std::size_t> waiting(graph.nodes.size(), 0);
  std::vector<std::vector<std::size_t>> readers(value_count);
  std::vector<std::size_t> order, ready;
  for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
    for (ValueId id : graph.nodes[n].inputs)
      if (producer[id] >= 0) {
        ++waiting[n];
        readers[id].push_back(n);
      }
    if (waiting[n] == 0) ready.push_back(n);
  }
  while (!ready.empty()) {
    // Lowest index first keeps the order stable and deterministic.
    const auto lowest = std::min_element(ready.begin(), ready.end());
    const std::size_t n = *lowest;
    ready.erase(lowest);
    order.push_back(n);
    for (ValueId out : graph.nodes[n].outputs)
      for (std::size_t reader : readers[out])
        if (--waiting[reader] == 0) ready.push_back(reader);
  }
  if (order.size() != graph.nodes.size()) {
    for (std::size_t n = 0; n < graph.nodes.size(); ++n)
      if (waiting[n] > 0) fail(ErrorCode::graph_cycle, "the graph has a cycle through ", describe_node(graph, n));
  }

  for (std::size_t n : order) {
    const Node& node = graph.nodes[n];
    Types in;
    for (ValueId id : node.inputs) in.push_back(graph.values[id].type);
    Types out;
    try {
      out = infer_types(node.op, in);
    } catch (...) {
      rethrow_with_context(describe_node(graph, n));
    }
    if (out.size() != node.outputs.size())
      fail(ErrorCode::wrong_arity, describe_node(graph, n), " has ", node.outputs.size(), " outputs, its op gives ",
           out.size());
    for (std::size_t o = 0; o < out.size(); ++o)
      if (out[o] != graph.values[node.outputs[o]].type)
        fail(ErrorCode::invalid_shape, describe_node(graph, n), ": output ", o, " (value ", node.outputs[o],
             ") is recorded as ", to_string(graph.values[node.outputs[o]].type),
             " but the shape rule gives ", to_string(out[o]));
  }

  names.clear();
  if (graph.outputs.empty()) fail(ErrorCode::graph_schema, "the graph has no outputs");
  for (const NamedValue& out : graph.outputs) {
    check_name_utf8(out.name, "output");
    check_id(out.value, "output '", out.name, "'");
    if (!names.insert(out.name).second) fail(ErrorCode::duplicate_definition, "output name '", out.name, "' is used twice");
    if (graph.values[out.value].kind != ValueKind::node_output)
      fail(ErrorCode::graph_schema, "output '", out.name, "' is value ", out.value,
           ", an input or constant; outputs must be computed by a node");
  }
  return order;
}

/// A graph that passed `validate`, with the execution order it returned.
struct ValidGraph {
  Graph graph;
  std::vector<std::size_t> order;
};

/// Checks that `inputs` supplies every graph input, with its declared type,
/// and nothing else.
inline void check_inputs(const Graph& graph, const TensorMap& inputs) {
  for (const NamedValue& in : graph.inputs) {
    const auto it = inputs.find(in.name);
    if (it == inputs.end()) fail(ErrorCode::bad_run_inputs, "input '", in.name, "' is missing");
    if (it->second.type() != graph.type(in.value))
      fail(ErrorCode::bad_run_inputs, "input '", in.name, "' must be ", to_string(graph.type(in.value)), ", got ",
           to_string(it->second.type()));
  }
  for (const auto& [name, tensor] : inputs) {
    bool known = false;
    for (const NamedValue& in : graph.inputs) known = known || in.name == name;
    if (!known) fail(ErrorCode::bad_run_inputs, "the graph has no input named '", name, "'");
  }
}

}  // namespace rml
