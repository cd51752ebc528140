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
    if (!slice) return std::nullopt;
    const auto unit = unit_step(rw, *slice);
    const Shape& shape = rw.shape(slice->inputs[0]);
    if (!unit || unit->axis + 1 == static_cast<std::int64_t>(shape.size())) return std::nullopt;
    const Step step{slice->inputs[0], unit->axis, unit->index};
    Shape dropped = shape;
    dropped.erase(dropped.begin() + step.axis);
    if (rw.shape(a) != dropped) return std::nullopt;
    return step;
  }
};

}  // namespace rml::passes
