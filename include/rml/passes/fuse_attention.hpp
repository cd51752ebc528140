// fuse_attention: softmax(Q K^T * scale [+ mask]) V, written out as a product,
// a scaling, an optional constant mask (added, or applied as
// select(keep, scores, -inf)) and a softmax over the last axis, becomes one
// sdpa node. JAX and TensorFlow models spell attention out this way; sdpa runs
// it on the executor's fused attention kernel. A mask that is exactly the
// causal one becomes `causal`, any other constant mask sdpa's additive input.
#pragma once

#include <limits>

#include "rml/passes/common.hpp"

namespace rml::passes {

struct FuseAttention {
  static constexpr std::string_view name = "fuse_attention";

  static void run(Rewriter& rw) {
    const std::size_t count = rw.graph().nodes.size();
    for (std::size_t n = 0; n < count; ++n) {
      const Node node = rw.graph().nodes[n];
      if (!is_live(rw, node) || !holds<MatMul>(node.op)) continue;
      ValueId weights, v;
      const Softmax* softmax = nullptr;
      if (!op<MatMul>(single_use(op<Softmax>(any(weights)).bind(softmax)), any(v))(rw, node.outputs[0])) continue;
      const std::size_t rank = rw.shape(weights).size();
      if (rank < 2 || normalize_axis(softmax->axis, rank) != static_cast<std::int64_t>(rank) - 1) continue;
      fuse(rw, node.outputs[0], weights, v);
    }
  }

 private:
  static constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

  static void fuse(Rewriter& rw, ValueId out, ValueId scores, ValueId v) {
    // Peel the mask, then the scale, off the scores.
    std::optional<Tensor> mask;
    ValueId inner, mask_value, cond;
    float fill = 0;
    if (single_use(op<Add>(any(inner), constant(mask_value)))(rw, scores)) {
      mask = rw.data(mask_value);
      scores = inner;
    } else if (single_use(op<Select>(constant(cond), any(inner), scalar(fill)))(rw, scores) && fill == kMinusInf) {
      mask = additive(rw.data(cond));
      scores = inner;
    }
    float scale = 1;
    if (single_use(op<Mul>(any(inner), scalar(scale)))(rw, scores)) {
      scores = inner;
    } else if (float divisor = 0; single_use(op<Div>(any(inner), scalar(divisor)))(rw, scores)) {
      scale = 1.0f / divisor;
      if (scale * divisor != 1.0f) return;  // only an exactly invertible divisor keeps the numbers
      scores = inner;
    }
    ValueId q, kt;
    if (!single_use(op<MatMul>(any(q), any(kt)))(rw, scores)) return;
    const std::size_t rank = rw.shape(q).size();
    if (rank < 2 || rw.shape(kt).size() != rank || rw.shape(v).size() != rank) return;
    const ValueId k = untransposed(rw, kt);
    std::vector<ValueId> inputs{q, k, v};
    bool causal = false;
    if (mask) {
      if (is_causal(*mask)) causal = true;
      else inputs.push_back(rw.add_constant(*mask));
    }
    Sdpa op;
    op.causal = causal;
    op.scale = double(scale);
    ValueId fused;
    try {
      fused = rw.add(op, inputs);
    } catch (const Error&) {
      return;  // shapes sdpa does not take (its batch rule is stricter than matmul's)
    }
    if (rw.type(fused) == rw.type(out)) rw.replace_uses(out, fused);
  }

  /// K from K^T: undo a transpose that swapped the last two axes, else transpose back.
  static ValueId untransposed(Rewriter& rw, ValueId kt) {
    const std::size_t rank = rw.shape(kt).size();
    Ints swap(rank);
    for (std::size_t i = 0; i < rank; ++i) swap[i] = static_cast<std::int64_t>(i);
    std::swap(swap[rank - 1], swap[rank - 2]);
    return rw.add(Transpose{swap}, {kt});  // simplify_shape_ops composes it with kt's own transpose
  }

  /// select(keep, s, -inf) as s + mask: 0 where keep, -inf elsewhere.
  static Tensor additive(const Tensor& keep) {
    Tensor mask(TensorType{DType::f32, keep.shape()});
    auto out = mask.values<float>();
    if (keep.dtype() == DType::f32) {
      const auto k = keep.values<float>();
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = k[i] != 0 ? 0.0f : kMinusInf;
    } else {
      const auto k = keep.values<std::int32_t>();
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = k[i] != 0 ? 0.0f : kMinusInf;
    }
    return mask;
  }

  /// Every [Lq, Lk] slice is 0 on and below the diagonal and -inf above (Lq = Lk).
  static bool is_causal(const Tensor& mask) {
    const Shape& s = mask.shape();
    if (mask.dtype() != DType::f32 || s.size() < 2 || s[s.size() - 1] != s[s.size() - 2]) return false;
    const std::int64_t n = s.back();
    const auto values = mask.values<float>();
    for (std::size_t base = 0; base < values.size(); base += static_cast<std::size_t>(n * n))
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          const float want = j <= i ? 0.0f : kMinusInf;
          if (values[base + static_cast<std::size_t>(i * n + j)] != want) return false;
        }
    return true;
  }
};

}  // namespace rml::passes
