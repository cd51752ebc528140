// simplify_shape_ops: identity reshapes and transposes vanish, reshape of
// reshape and transpose of transpose collapse, and a reshape that restores a
// reduction's rank becomes the reduction with keep_dims. Two value identities
// go too: max(x, -inf) and min(x, +inf) (jax.nn.softmax clamps its max so),
// when they do not broadcast x.
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
      else if (const auto* transpose = std::get_if<Transpose>(&node.op)) simplify_transpose(rw, node, *transpose);
      else if (holds<Maximum>(node.op)) drop_bound(rw, node, -std::numeric_limits<float>::infinity());
      else if (holds<Minimum>(node.op)) drop_bound(rw, node, std::numeric_limits<float>::infinity());
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
      const R* op = std::get_if<R>(&reduce.op);
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

  /// max(x, -inf) = x and min(x, +inf) = x, NaN included.
  static void drop_bound(Rewriter& rw, const Node& node, float bound) {
    for (std::size_t slot = 0; slot < 2; ++slot) {
      const ValueId x = node.inputs[1 - slot], out = node.outputs[0];
      const auto value = splat_value(rw, node.inputs[slot]);
      if (value && *value == bound && rw.type(x) == rw.type(out) && can_forward(rw, x, out)) {
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
    const Ints& p = std::get<Transpose>(inner->op).perm;
    Ints composed;
    for (std::int64_t q : t.perm) composed.push_back(p[q]);
    rw.replace_uses(out, rw.add(Transpose{composed}, {inner->inputs[0]}));
  }
};

}  // namespace rml::passes
