// Scaled dot-product attention as one op.
#pragma once

#include <optional>
#include <string_view>
#include <tuple>

#include "rml/ops/rules.hpp"

namespace rml {

/// softmax(q @ k^T * scale + mask) @ v. `scale` defaults to 1/sqrt(head dim);
/// `causal` hides key j from query i when j > i (top-left aligned, as in
/// PyTorch); `mask` is additive and broadcasts to [..., Lq, Lk].
struct Sdpa {
  static constexpr std::string_view name = "sdpa";
  static constexpr std::string_view summary =
      "softmax(q k^T * scale + mask [+ causal]) v; scale defaults to 1/sqrt(D)";
  static constexpr std::string_view inputs =
      "q: f32 [...,Lq,D], k: f32 [...,Lk,D], v: f32 [...,Lk,Dv], mask?: f32";
  static constexpr std::string_view shape_rule =
      "out = [broadcast(batch of q, k, v), Lq, Dv]; mask broadcasts to [..., Lq, Lk]";
  static constexpr Arity arity{3, 4};
  bool causal = false;
  std::optional<double> scale;
  static constexpr auto fields() {
    return std::tuple{optional("causal", &Sdpa::causal), optional("scale", &Sdpa::scale)};
  }
  Types infer(InputTypes in) const {
    for (std::size_t i = 0; i < in.size(); ++i) {
      require_f32(in[i], i);
      if (i < 3) require_min_rank(in[i], 2, i);
    }
    const Shape &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
    const std::int64_t lq = q[q.size() - 2], d = q.back(), lk = k[k.size() - 2];
    if (k.back() != d) fail(ErrorCode::invalid_shape, "key head dim ", k.back(), " differs from query head dim ", d);
    if (v[v.size() - 2] != lk)
      fail(ErrorCode::invalid_shape, "value length ", v[v.size() - 2], " differs from key length ", lk);
    auto batch = [](const Shape& s) { return std::span(s).first(s.size() - 2); };
    Shape out = broadcast_shapes(broadcast_shapes(batch(q), batch(k), "query and key batch"),
                                 batch(v), "value batch");
    out.push_back(lq);
    out.push_back(v.back());
    if (in.size() == 4) {
      Shape scores(out.begin(), out.end() - 2);
      scores.push_back(lq);
      scores.push_back(lk);
      if (broadcast_shapes(scores, in[3].shape, "mask") != scores)
        fail(ErrorCode::invalid_shape, "mask ", to_string(in[3].shape), " does not broadcast to the scores ",
             to_string(scores));
    }
    return {{DType::f32, out}};
  }
};

}  // namespace rml
