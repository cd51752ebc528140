// Compiling a graph into a plan: nodes grouped and fused (exec/fusion.hpp),
// one kernel per group or node from the registry's dispatch
// (exec/dispatch.hpp), then memory laid out from lifetimes (exec/memory.hpp).
#pragma once

#include <algorithm>
#include <memory>

#include "rml/exec/memory.hpp"

namespace rml::exec {

struct Plan : MemoryLayout {
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::size_t fused_groups = 0;
  std::size_t packed_weight_bytes = 0;  // constant matmul operands, packed once each
};

/// A node (or fused group) whose every output is empty: nothing to compute,
/// so no loop runs over the other dimensions of an empty tensor and no
/// scratch or table is sized by them.
class EmptyOutputKernel final : public Kernel {
 public:
  void run(RunContext&) const override {}
  std::string describe() const override { return "nothing to compute (empty output)"; }
};

namespace plan_detail {

/// True when what the kernel for node `n` would write is all empty and no op
/// it covers checks input values (registry.hpp, nothing_to_compute).
inline bool nothing_to_compute(const PlanContext& ctx, const Node& node, const std::vector<ValueId>& writes) {
  Types written;
  for (ValueId v : writes) written.push_back(ctx.type(v));
  return rml::nothing_to_compute(node.op, written);
}

/// The kernel for node `n`, or nullptr when `n` runs inside another kernel
/// (a group member that is not its root, an absorbed broadcast or slice, a
/// node gathered into a conv's padding, an sdpa's reads or a reduction's
/// prologue, a transpose an sdpa writes, an epilogue producer); sets the
/// kernel's nodes, reads and writes.
inline std::unique_ptr<Kernel> kernel_for_node(const PlanContext& ctx, const Fusion& fusion, std::size_t n,
                                               std::size_t& fused_groups) {
  const Node& node = ctx.graph.nodes[n];
  if (fusion.absorbed(n) || fusion.gathered(n) || fusion.written_by_producer(n) ||
      (fusion.in_group(n) && !fusion.is_root(n)) || fusion.is_epilogue_producer(n))
    return nullptr;
  std::unique_ptr<Kernel> kernel;
  std::vector<std::size_t> covered{n};
  const std::optional<std::size_t> transposed_output = fusion.output_transpose(n);  // an sdpa's, written in place
  const std::vector<ValueId> writes = fusion.in_group(n) ? std::vector<ValueId>{node.outputs[0]}
                                      : transposed_output ? ctx.graph.nodes[*transposed_output].outputs
                                                          : node.outputs;
  if (nothing_to_compute(ctx, node, writes)) {
    kernel = std::make_unique<EmptyOutputKernel>();
    if (fusion.in_group(n)) covered = fusion.members(n);
    if (const auto producer = fusion.epilogue_producer(n)) covered.insert(covered.begin(), *producer);
  } else if (fusion.in_group(n)) {
    covered = fusion.members(n);
    if (const auto producer = fusion.epilogue_producer(n)) {
      kernel = make_kernel(ctx, ctx.graph.nodes[*producer], fusion.epilogue(*producer, n));
      covered.insert(covered.begin(), *producer);
    } else {
      kernel = std::make_unique<ElementwiseKernel>(fusion.group(n));
    }
    if (covered.size() > 1) ++fused_groups;
  } else {
    kernel = make_kernel(ctx, node, fusion.prologue(n));
  }
  // Gathered input nodes (a conv's padding, an sdpa's strided rows, a
  // reduction's prologue) run before it, in its kernel.
  for (const std::size_t m : std::vector<std::size_t>(covered)) {
    const std::vector<std::size_t> gathered = fusion.gathered_into(m);
    covered.insert(std::find(covered.begin(), covered.end(), m), gathered.begin(), gathered.end());
  }
  if (transposed_output) covered.push_back(*transposed_output);
  kernel->nodes = covered;
  // What the kernel reads from outside and writes.
  std::vector<ValueId> internal;
  for (std::size_t m : covered)
    for (ValueId v : ctx.graph.nodes[m].outputs) internal.push_back(v);
  for (std::size_t m : covered)
    for (ValueId v : ctx.graph.nodes[m].inputs) {
      const ValueId read = fusion.leaf_value(v);
      if (std::find(internal.begin(), internal.end(), read) == internal.end() &&
          std::find(kernel->reads.begin(), kernel->reads.end(), read) == kernel->reads.end())
        kernel->reads.push_back(read);
    }
  kernel->writes = writes;
  return kernel;
}

}  // namespace plan_detail

inline Plan compile_plan(const Model& model, bool fuse) {
  const Graph& graph = model.graph();
  const GraphUses uses(graph);
  const Fusion fusion(graph, model.order(), uses, fuse);
  PackedWeightCache packed_weights;
  const PlanContext ctx{graph, uses.is_output, packed_weights, &fusion.conv_pieces(), &fusion.sdpa_operands()};
  Plan plan;
  for (std::size_t n : model.order())
    if (auto kernel = plan_detail::kernel_for_node(ctx, fusion, n, plan.fused_groups)) plan.kernels.push_back(std::move(kernel));
  static_cast<MemoryLayout&>(plan) = plan_memory(graph, uses, fusion, plan.kernels);
  plan.packed_weight_bytes = packed_weights.bytes();
  return plan;
}

}  // namespace rml::exec
