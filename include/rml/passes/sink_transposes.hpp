// sink_transposes: f(transpose(x, p)) becomes transpose(f(x), p) for an
// elementwise f, with a constant other operand permuted to match (or another
// transpose by the same p). Only single-reader transposes move. Sinking a
// convolution's NCHW -> NHWC transpose below its bias add and activation
// brings it next to the next layer's NHWC -> NCHW transpose, where
// simplify_shape_ops cancels the pair.
#pragma once

#include "rml/passes/common.hpp"

namespace rml::passes {

struct SinkTransposes {
  static constexpr std::string_view name = "sink_transposes";

  static void run(Rewriter& rw) {
    const std::size_t count = rw.graph().nodes.size();
    for (std::size_t n = 0; n < count; ++n) {
      const Node node = rw.graph().nodes[n];
      if (!is_live(rw, node) || !is_elementwise_op(node.op) || node.outputs.size() != 1) continue;
      if (node.inputs.size() == 1) sink_unary(rw, node);
      else if (node.inputs.size() == 2) sink_binary(rw, node);
    }
  }

 private:
  /// The permutation of a single-reader transpose producing `v`, if it is one.
  static const Ints* movable_transpose(const Rewriter& rw, ValueId v) {
    const Node* producer = rw.producer(v);
    if (!producer || !holds<Transpose>(producer->op) || !rw.single_use(v)) return nullptr;
    return &get<Transpose>(producer->op).perm;
  }

  static Ints inverse(const Ints& perm) {
    Ints inv(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<std::int64_t>(i);
    return inv;
  }

  static void sink_unary(Rewriter& rw, const Node& node) {
    const Ints* perm = movable_transpose(rw, node.inputs[0]);
    if (!perm) return;
    const Ints p = *perm;
    const ValueId inner = rw.add(node.op, {rw.producer(node.inputs[0])->inputs[0]});
    rw.replace_uses(node.outputs[0], rw.add(Transpose{p}, {inner}));
  }

  static void sink_binary(Rewriter& rw, const Node& node) {
    for (std::size_t slot = 0; slot < 2; ++slot) {
      const Ints* perm = movable_transpose(rw, node.inputs[slot]);
      if (!perm) continue;
      const Ints p = *perm;
      const ValueId other = node.inputs[1 - slot];
      std::optional<ValueId> other_inside;
      if (rw.is_constant(other)) {
        other_inside = permuted_constant(rw, other, inverse(p));
      } else if (const Ints* q = movable_transpose(rw, other); q && *q == p) {
        other_inside = rw.producer(other)->inputs[0];
      }
      if (!other_inside) continue;
      std::vector<ValueId> inputs(2);
      inputs[slot] = rw.producer(node.inputs[slot])->inputs[0];
      inputs[1 - slot] = *other_inside;
      const ValueId inner = rw.add(node.op, inputs);
      rw.replace_uses(node.outputs[0], rw.add(Transpose{p}, {inner}));
      return;
    }
  }

  /// The constant brought to the transpose's rank (leading 1s) and permuted.
  static std::optional<ValueId> permuted_constant(Rewriter& rw, ValueId c, const Ints& perm) {
    Shape full = rw.shape(c);
    if (full.size() > perm.size()) return std::nullopt;
    full.insert(full.begin(), perm.size() - full.size(), 1);
    const Tensor reshaped = compute(Reshape{full}, {&rw.data(c)});
    // A parameter keeps its name when this permuted copy replaces its only use.
    std::string name;
    if (rw.single_use(c)) std::swap(name, rw.graph().values[c].name);
    return rw.add_constant(compute(Transpose{perm}, {&reshaped}), std::move(name));
  }
};

}  // namespace rml::passes
