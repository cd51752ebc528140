// Reference scaled dot-product attention: scores, softmax and weighted sum
// per query row, in double.
#pragma once

#include <cmath>
#include <limits>

#include "rml/ops/attention.hpp"
#include "rml/ref/common.hpp"

namespace rml::ref {

inline void reference(const Sdpa& op, Inputs in, std::span<Tensor> out) {
  const Shape &q = in[0].shape(), &k = in[1].shape(), &v = in[2].shape(), &y = out[0].shape();
  const std::int64_t lq = q[q.size() - 2], d = q.back(), lk = k[k.size() - 2], dv = v.back();
  const Shape batch(y.begin(), y.end() - 2);
  auto batch_of = [](const Shape& s) { return Shape(s.begin(), s.end() - 2); };
  const auto q_off = broadcast_offsets(batch, batch_of(q));
  const auto k_off = broadcast_offsets(batch, batch_of(k));
  const auto v_off = broadcast_offsets(batch, batch_of(v));
  Shape scores_shape = batch;
  scores_shape.push_back(lq);
  scores_shape.push_back(lk);
  const std::vector<std::int64_t> mask_off =
      in.size() == 4 ? broadcast_offsets(scores_shape, in[3].shape()) : std::vector<std::int64_t>{};
  const double scale = op.scale ? *op.scale : 1.0 / std::sqrt(double(d));
  const float *qp = in[0].values<float>().data(), *kp = in[1].values<float>().data(),
              *vp = in[2].values<float>().data();
  const float* mask = in.size() == 4 ? in[3].values<float>().data() : nullptr;
  float* result = out[0].values<float>().data();
  std::vector<double> p(static_cast<std::size_t>(lk));
  for (std::size_t b = 0; b < q_off.size(); ++b)
    for (std::int64_t i = 0; i < lq; ++i) {
      const float* qi = qp + (q_off[b] * lq + i) * d;
      double max = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j < lk; ++j) {
        const float* kj = kp + (k_off[b] * lk + j) * d;
        double s = 0;
        for (std::int64_t c = 0; c < d; ++c) s += double(qi[c]) * kj[c];
        s *= scale;
        if (mask) s += mask[mask_off[(b * lq + i) * lk + j]];
        if (op.causal && j > i) s = -std::numeric_limits<double>::infinity();
        p[j] = s;
        max = std::max(max, s);
      }
      double sum = 0;
      for (std::int64_t j = 0; j < lk; ++j) sum += p[j] = std::exp(p[j] - max);
      if (lk == 0) sum = 1;  // no keys: a zero output, as PyTorch's reference gives
      for (std::int64_t c = 0; c < dv; ++c) {
        double acc = 0;
        for (std::int64_t j = 0; j < lk; ++j) acc += p[j] * vp[(v_off[b] * lk + j) * dv + c];
        *result++ = float(acc / sum);
      }
    }
}

}  // namespace rml::ref
