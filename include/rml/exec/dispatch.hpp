// The executor's op -> kernel dispatch, generated from the op registry: every
// op in the list must declare its kernel (KernelFor<Op>) or, if elementwise,
// its block function (BlockFor<Op>); a missing one is a compile error whose
// instantiation trace names the op.
#pragma once

#include <array>
#include <optional>

#include "rml/exec/kernels/conv_pool.hpp"
#include "rml/exec/kernels/elementwise.hpp"
#include "rml/exec/kernels/index.hpp"
#include "rml/exec/kernels/layout.hpp"
#include "rml/exec/kernels/linalg.hpp"
#include "rml/exec/kernels/nn.hpp"
#include "rml/exec/kernels/reduce.hpp"
#include "rml/registry.hpp"

namespace rml::exec {

template <class Op>
concept HasBlockFunction = requires(const Op& op, const Types& in) {
  { BlockFor<Op>::function(op, in) } -> std::same_as<BlockFn>;
};
template <class Op>
concept HasKernel = requires(const PlanContext& ctx, const Node& node, const Op& op) {
  { KernelFor<Op>::make(ctx, node, op) } -> std::same_as<std::unique_ptr<Kernel>>;
};
/// Ops whose kernel can run a fused elementwise group: on each output tile
/// (an epilogue: matmul, conv2d), or to make the terms it reads (a
/// prologue: the reductions).
template <class Op>
concept TakesFusedGroup = requires(const PlanContext& ctx, const Node& node, const Op& op) {
  { KernelFor<Op>::make(ctx, node, op, std::optional<ElementwiseGroup>{}) } -> std::same_as<std::unique_ptr<Kernel>>;
};

/// True when Op has what the executor needs; otherwise a static_assert
/// fails inside `has_executor_kernel<Op>`, which the compiler names.
template <class Op>
consteval bool has_executor_kernel() {
  if constexpr (is_elementwise<Op>)
    static_assert(HasBlockFunction<Op>,
                  "this elementwise op has no block function: specialise exec::BlockFor<Op> "
                  "(exec/kernels/elementwise.hpp shows the families)");
  else
    static_assert(HasKernel<Op>,
                  "this op has no executor kernel: specialise exec::KernelFor<Op> in exec/kernels/<family>.hpp");
  return true;
}

template <class List>
struct KernelCoverage;
template <class... Ops>
struct KernelCoverage<OpList<Ops...>> {
  static constexpr bool complete = (has_executor_kernel<Ops>() && ...);
};
static_assert(KernelCoverage<Registry>::complete);

/// The block function of an elementwise op for these input types.
inline BlockFn block_function(const AnyOp& op, const Types& inputs) {
  return visit_op(
      [&](const auto& o) -> BlockFn {
        using Op = std::decay_t<decltype(o)>;
        if constexpr (is_elementwise<Op>) return BlockFor<Op>::function(o, inputs);
        else fail(ErrorCode::internal, "op '", Op::name, "' is not elementwise and has no block function");
      },
      op);
}

/// An elementwise op's time per element relative to an add: BlockFor<Op>::cost, or 1.
template <class Op>
consteval int block_cost_of() {
  if constexpr (requires { BlockFor<Op>::cost; }) return BlockFor<Op>::cost;
  else return 1;
}
template <class List>
struct BlockCosts;
template <class... Ops>
struct BlockCosts<OpList<Ops...>> {
  static constexpr std::array<int, sizeof...(Ops)> table{block_cost_of<Ops>()...};
};
inline int block_cost(const AnyOp& op) { return BlockCosts<Registry>::table[op.index()]; }

/// The kernel for one node that is not elementwise (elementwise nodes run as
/// groups). `fused`, when given, is fused into the kernel (exec/fusion.hpp
/// decides which); only ops that TakesFusedGroup are handed one.
inline std::unique_ptr<Kernel> make_kernel(const PlanContext& ctx, const Node& node,
                                           std::optional<ElementwiseGroup> fused = std::nullopt) {
  return visit_op(
      [&](const auto& op) -> std::unique_ptr<Kernel> {
        using Op = std::decay_t<decltype(op)>;
        if constexpr (is_elementwise<Op>) {
          fail(ErrorCode::internal, "op '", Op::name, "' is elementwise: it runs in a group, not as a kernel of its own");
        } else if constexpr (TakesFusedGroup<Op>) {
          return KernelFor<Op>::make(ctx, node, op, std::move(fused));
        } else {
          if (fused) fail(ErrorCode::internal, "op '", Op::name, "' cannot take a fused group");
          return KernelFor<Op>::make(ctx, node, op);
        }
      },
      node.op);
}

}  // namespace rml::exec
