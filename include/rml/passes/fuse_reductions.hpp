// fuse_reductions: reduce_sum(x) / N, N the number of elements summed, becomes
// reduce_mean; exp(x - max x) / sum exp(x - max x) over one axis becomes
// softmax (the max may be clamped below by -inf, as jax.nn.softmax writes it).
#pragma once

#include <limits>

#include "rml/passes/common.hpp"

namespace rml::passes {

struct FuseReductions {
  static constexpr std::string_view name = "fuse_reductions";

  static void run(Rewriter& rw) {
    const std::size_t count = rw.graph().nodes.size();
    for (std::size_t n = 0; n < count; ++n) {
      const Node node = rw.graph().nodes[n];
      if (!is_live(rw, node) || !holds<Div>(node.op)) continue;
      if (!fuse_mean(rw, node)) fuse_softmax(rw, node);
    }
  }

 private:
  static bool fuse_mean(Rewriter& rw, const Node& node) {
    ValueId x;
    float divisor = 0;
    const ReduceSum* sum = nullptr;
    if (!op<Div>(op<ReduceSum>(any(x)).bind(sum), scalar(divisor))(rw, node.outputs[0])) return false;
    if (rw.type(x).dtype != DType::f32) return false;
    double count = 1;
    for (std::int64_t a : sum->axes) count *= double(rw.shape(x)[normalize_axis(a, rw.shape(x).size())]);
    if (double(divisor) != count) return false;
    const ValueId mean = rw.add(ReduceMean{sum->axes, sum->keep_dims}, {x});
    if (rw.type(mean) != rw.type(node.outputs[0])) return false;  // the divisor broadcast the sum
    rw.replace_uses(node.outputs[0], mean);
    return true;
  }

  static void fuse_softmax(Rewriter& rw, const Node& node) {
    ValueId x, e, max_value;
    const ReduceSum* sum = nullptr;
    const auto shifted_exp = op<Exp>(op<Sub>(any(x), any(max_value)));
    if (!op<Div>(any(e), op<ReduceSum>(same(e)).bind(sum))(rw, node.outputs[0]) || !shifted_exp(rw, e)) return;
    const ReduceMax* max = nullptr;
    float floor = 0;
    const bool plain = op<ReduceMax>(same(x)).bind(max)(rw, max_value);
    const bool clamped = !plain && op<Maximum>(op<ReduceMax>(same(x)).bind(max), scalar(floor))(rw, max_value) &&
                         floor == -std::numeric_limits<float>::infinity();
    if (!plain && !clamped) return;
    const std::size_t rank = rw.shape(x).size();
    if (sum->axes.size() != 1 || max->axes.size() != 1 || !sum->keep_dims || !max->keep_dims) return;
    const std::int64_t axis = normalize_axis(sum->axes[0], rank);
    if (normalize_axis(max->axes[0], rank) != axis || rw.type(node.outputs[0]) != rw.type(x)) return;
    rw.replace_uses(node.outputs[0], rw.add(Softmax{axis}, {x}));
  }
};

}  // namespace rml::passes
