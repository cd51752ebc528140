// simplify_shape_ops: identity reshapes and transposes vanish, reshape of
// reshape and transpose of transpose collapse, and a reshape that restores a
// reduction's rank becomes the reduction with keep_dims. Value identities go
// too, when they do not broadcast x: max(x, -inf) and min(x, +inf)
// (jax.nn.softmax clamps its max so), x + 0, x - 0 (an unrolled loop's zero
// initial state folds its first product to zeros), x * 1 and x / 1. Only
// x + 0 can change a bit: -0 + 0 is +0.
#pragma once

#include <limits>

#include "rml/passes/common.hpp"

namespace rml::passes {

struct SimplifyShapeOps {
  static constexpr std::string_view name = "simplify_shape_ops";

  static void run(Rewriter& rw) {
    const std::size_t count = rw.graph().nodes.size();
    for (std::size_t n = 0; n < count; ++n) {
      const Node node = rw.graph().nodes[n];
      if (!is_live(rw, node)) continue;
      if (holds<Reshape>(node.op)) simplify_reshape(rw, node);
      else if (const auto* transpose = get_if<Transpose>(&node.op)) simplify_transpose(rw, node, *transpose);
      else if (holds<Maximum>(node.op)) drop_identity(rw, node, -std::numeric_limits<float>::infinity(), true);
      else if (holds<Minimum>(node.op)) drop_identity(rw, node, std::numeric_limits<float>::infinity(), true);
      else if (holds<Add>(node.op)) drop_identity(rw, node, 0.0f, true);
      else if (holds<Mul>(node.op)) drop_identity(rw, node, 1.0f, true);
      else if (holds<Sub>(node.op)) drop_identity(rw, node, 0.0f, false);
      else if (holds<Div>(node.op)) drop_identity(rw, node, 1.0f, false);
    }
  }

 private:
  /// `out` may be replaced by `x` (a graph output must stay a computed value).
  static bool can_forward(const Rewriter& rw, ValueId x, ValueId out) {
    return !rw.is_output(out) || rw.graph().values[x].kind == ValueKind::node_output;
  }

  static void simplify_reshape(Rewriter& rw, const Node& node) {
    const ValueId x = node.inputs[0], out = node.outputs[0];
    if (rw.shape(x) == rw.shape(out)) {
      if (can_forward(rw, x, out)) rw.replace_uses(out, x);
      return;
    }
    const Node* inner = rw.producer(x);
    if (!inner) return;
    if (holds<Reshape>(inner->op)) {
      rw.replace_uses(out, rw.add(Reshape{rw.shape(out)}, {inner->inputs[0]}));
      return;
    }
    if (auto kept = with_keep_dims<ReduceSum, ReduceMean, ReduceMax, ReduceMin>(rw, *inner, rw.shape(out)))
      rw.replace_uses(out, *kept);
  }

  /// A reduction without keep_dims, reshaped to its input's rank with 1 at the
  /// reduced axes, is that reduction with keep_dims.
  template <class... Reduces>
  static std::optional<ValueId> with_keep_dims(Rewriter& rw, const Node& reduce, const Shape& target) {
    std::optional<ValueId> result;
    auto attempt = [&]<class R>() {
      const R* op = get_if<R>(&reduce.op);
      if (!op || op->keep_dims || result) return;
      Shape kept = rw.shape(reduce.inputs[0]);
      for (std::int64_t a : op->axes) kept[normalize_axis(a, kept.size())] = 1;
      if (kept != target) return;
      R with_dims = *op;
      with_dims.keep_dims = true;
      result = rw.add(with_dims, {reduce.inputs[0]});
    };
    (attempt.template operator()<Reduces>(), ...);
    return result;
  }

  /// op(x, c) = x for the op's identity element c (either side when the op
  /// commutes), when c does not broadcast x.
  static void drop_identity(Rewriter& rw, const Node& node, float identity, bool either_side) {
    for (std::size_t slot = either_side ? 0 : 1; slot < 2; ++slot) {
      const ValueId x = node.inputs[1 - slot], out = node.outputs[0];
      const auto value = splat_value(rw, node.inputs[slot]);
      if (value && *value == identity && rw.type(x) == rw.type(out) && can_forward(rw, x, out)) {
        rw.replace_uses(out, x);
        return;
      }
    }
  }

  static void simplify_transpose(Rewriter& rw, const Node& node, const Transpose& t) {
    const ValueId x = node.inputs[0], out = node.outputs[0];
    bool identity = true;
    for (std::size_t i = 0; i < t.perm.size(); ++i) identity = identity && t.perm[i] == static_cast<std::int64_t>(i);
    if (identity) {
      if (can_forward(rw, x, out)) rw.replace_uses(out, x);
      return;
    }
    const Node* inner = rw.producer(x);
    if (!inner || !holds<Transpose>(inner->op)) return;
    // transpose(transpose(y, p), q) = transpose(y, p[q])
    const Ints& p = get<Transpose>(inner->op).perm;
    Ints composed;
    for (std::int64_t q : t.perm) composed.push_back(p[q]);
    rw.replace_uses(out, rw.add(Transpose{composed}, {inner->inputs[0]}));
  }
};

}  // namespace rml::passes
