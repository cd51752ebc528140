// Reference evaluation: one op on tensors, or a whole graph, through the
// reference kernels. Used for folding, `Builder::evaluate` and as the oracle
// the executor is tested against.
#pragma once

#include <map>
#include <string>

#include "rml/ir/graph.hpp"
#include "rml/ref/attention.hpp"
#include "rml/ref/conv_pool.hpp"
#include "rml/ref/elementwise.hpp"
#include "rml/ref/index.hpp"
#include "rml/ref/layout.hpp"
#include "rml/ref/linalg.hpp"
#include "rml/ref/nn.hpp"
#include "rml/ref/reduce.hpp"

namespace rml {

template <class Op>
concept HasReference = requires(const Op& op, ref::Inputs in, std::span<Tensor> out) {
  ref::reference(op, in, out);
};

template <class Op>
constexpr bool check_reference() {
  static_assert(HasReference<Op>,
                "op has no reference kernel: declare ref::reference(const Op&, ref::Inputs, "
                "std::span<Tensor>) in a header under rml/ref/ and include it here");
  return true;
}
template <class... Ops>
constexpr bool all_have_reference(std::type_identity<OpList<Ops...>>) {
  return (check_reference<Ops>() && ...);
}
static_assert(all_have_reference(std::type_identity<Registry>{}));

/// Applies one op to tensors with its reference kernel. Checks the inputs
/// against the op's shape rule first, so a kernel never sees a bad shape.
inline std::vector<Tensor> evaluate_op(const AnyOp& op, std::span<const Tensor* const> inputs) {
  Types types;
  for (const Tensor* t : inputs) types.push_back(t->type());
  std::vector<Tensor> outputs;
  const Types output_types = infer_types(op, types);
  for (const TensorType& type : output_types) outputs.emplace_back(type);
  // A kernel's loops over the other dimensions of an empty tensor could run
  // for 2^60 steps; empty outputs need none.
  if (nothing_to_compute(op, output_types)) return outputs;
  try {
    visit_op([&](const auto& o) { ref::reference(o, ref::Inputs(inputs), outputs); }, op);
  } catch (...) {
    rethrow_with_context("op '", op_name(op), "'");
  }
  return outputs;
}

/// Runs the whole graph with reference kernels; returns its named outputs.
inline TensorMap evaluate(const Graph& graph, const TensorMap& inputs) {
  const std::vector<std::size_t> order = validate(graph);
  check_inputs(graph, inputs);
  std::vector<const Tensor*> value(graph.values.size(), nullptr);
  std::vector<Tensor> computed(graph.values.size());
  for (const NamedValue& in : graph.inputs) value[in.value] = &inputs.at(in.name);
  for (std::size_t v = 0; v < graph.values.size(); ++v)
    if (graph.values[v].kind == ValueKind::constant) value[v] = &*graph.values[v].data;
  for (std::size_t n : order) {
    const Node& node = graph.nodes[n];
    std::vector<const Tensor*> args;
    for (ValueId id : node.inputs) args.push_back(value[id]);
    std::vector<Tensor> results;
    try {
      results = evaluate_op(node.op, args);
    } catch (...) {
      rethrow_with_context(describe_node(graph, n));
    }
    for (std::size_t o = 0; o < results.size(); ++o) {
      computed[node.outputs[o]] = std::move(results[o]);
      value[node.outputs[o]] = &computed[node.outputs[o]];
    }
  }
  TensorMap outputs;
  for (const NamedValue& out : graph.outputs) outputs.emplace(out.name, *value[out.value]);
  return outputs;
}

}  // namespace rml
