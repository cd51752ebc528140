// hoist_step_projections: an unrolled loop's per-step products
// reshape(slice(X, axis, [t, t+1])) @ W, sharing X, the axis and a constant
// 2-D W, become one X @ W inserted before them; each step reads its slice.
#pragma once

#include <map>

#include "rml/passes/common.hpp"

namespace rml::passes {

struct HoistStepProjections {
  static constexpr std::string_view name = "hoist_step_projections";

  static void run(Rewriter& rw) {
    // (X, axis, W) -> the steps: (node index, step t)
    std::map<std::tuple<ValueId, std::int64_t, ValueId>, std::vector<std::pair<std::size_t, std::int64_t>>> groups;
    const std::size_t count = rw.graph().nodes.size();
    for (std::size_t n = 0; n < count; ++n) {
      const Node& node = rw.graph().nodes[n];
      if (!is_live(rw, node) || !holds<MatMul>(node.op)) continue;
      const ValueId w = node.inputs[1];
      if (!rw.is_constant(w) || rw.shape(w).size() != 2) continue;
      if (auto step = step_of(rw, node.inputs[0])) groups[{step->x, step->axis, w}].push_back({n, step->t});
    }
    for (const auto& [key, steps] : groups) {
      if (steps.size() < 2) continue;
      const auto& [x, axis, w] = key;
      const ValueId all = rw.add(MatMul{}, {x, w});  // [.., T, .., N]: every step's product at once
      for (const auto& [n, t] : steps) {
        const ValueId out = rw.graph().nodes[n].outputs[0];
        const ValueId piece = rw.add(Slice{{axis}, {t}, {t + 1}, {}}, {all});
        rw.replace_uses(out, rw.add(Reshape{rw.shape(out)}, {piece}));
      }
    }
  }

 private:
  struct Step {
    ValueId x;
    std::int64_t axis, t;
  };

  /// reshape(slice(X, axis, [t, t + 1])) dropping that axis, where the slice
  /// may also name axes it keeps whole (TensorFlow's strided slices do) and
  /// the axis is not X's last (the product contracts the last).
  static std::optional<Step> step_of(const Rewriter& rw, ValueId a) {
    const Node* reshape = rw.producer(a);
    if (!reshape || !holds<Reshape>(reshape->op)) return std::nullopt;
    const Node* slice = rw.producer(reshape->inputs[0]);
    if (!slice || !holds<Slice>(slice->op)) return std::nullopt;
    const Slice& op = get<Slice>(slice->op);
    const ValueId x = slice->inputs[0];
    const Shape& shape = rw.shape(x);
    std::optional<Step> step;
    for (std::size_t i = 0; i < op.axes.size(); ++i) {
      const std::int64_t axis = normalize_axis(op.axes[i], shape.size());
      const std::int64_t start = normalize_axis(op.starts[i], static_cast<std::size_t>(shape[axis]));
      const std::int64_t stride = op.steps.empty() ? 1 : op.steps[i];
      if (stride != 1) return std::nullopt;
      if (start == 0 && op.ends[i] >= shape[axis]) continue;  // kept whole
      if (step || op.ends[i] != start + 1 || start < 0 || start >= shape[axis]) return std::nullopt;
      step = Step{x, axis, start};
    }
    if (!step || step->axis + 1 == static_cast<std::int64_t>(shape.size())) return std::nullopt;
    Shape dropped = shape;
    dropped.erase(dropped.begin() + step->axis);
    if (rw.shape(a) != dropped) return std::nullopt;
    return step;
  }
};

}  // namespace rml::passes
