// Scaled dot-product attention, fused: for each query row, the scores, their
// softmax and the weighted sum of values, without materialising the score
// matrix or a causal mask. Rows are independent, so threads split them.
#pragma once

#include <cmath>
#include <limits>

#include "rml/exec/kernel.hpp"

namespace rml::exec {

/// Per-axis element strides of `shape` read as broadcast into `target`
/// (right-aligned; 0 along axes where `shape` is 1 or missing).
inline Shape broadcast_strides(const Shape& target, const Shape& shape) {
  Shape strides(target.size(), 0);
  const Shape own = contiguous_strides(shape);
  const std::size_t lead = target.size() - shape.size();
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1) strides[lead + d] = own[d];
  return strides;
}

class SdpaKernel final : public Kernel {
 public:
  SdpaKernel(const Sdpa& op, std::vector<ValueId> in, ValueId out, const Types& types, const Shape& out_shape)
      : in_(std::move(in)), out_(out), causal_(op.causal) {
    const Shape &q = types[0].shape, &k = types[1].shape, &v = types[2].shape;
    lq_ = q[q.size() - 2];
    d_ = q.back();
    lk_ = k[k.size() - 2];
    dv_ = v.back();
    scale_ = op.scale ? float(*op.scale) : float(1.0 / std::sqrt(double(d_)));
    batch_ = Shape(out_shape.begin(), out_shape.end() - 2);
    auto offsets = [&](const Shape& s) {  // element offset of each batch's matrix
      const Shape strides = broadcast_strides(batch_, Shape(s.begin(), s.end() - 2));
      std::vector<std::int64_t> out;
      for_each_batch([&](const Shape& index) {
        std::int64_t o = 0;
        for (std::size_t d = 0; d < index.size(); ++d) o += index[d] * strides[d];
        out.push_back(o * s[s.size() - 2] * s.back());
      });
      return out;
    };
    q_off_ = offsets(q);
    k_off_ = offsets(k);
    v_off_ = offsets(v);
    if (in_.size() == 4) {
      Shape scores = batch_;
      scores.push_back(lq_);
      scores.push_back(lk_);
      const Shape strides = broadcast_strides(scores, types[3].shape);
      mask_row_stride_ = strides[strides.size() - 2];
      mask_col_stride_ = strides.back();
      for_each_batch([&](const Shape& index) {
        std::int64_t o = 0;
        for (std::size_t d = 0; d < index.size(); ++d) o += index[d] * strides[d];
        mask_off_.push_back(o);
      });
    }
    thread_scratch_bytes = static_cast<std::size_t>(std::max<std::int64_t>(lk_, 1)) * 4 + 8 +
                           static_cast<std::size_t>(std::max<std::int64_t>(dv_, 1)) * 8;
  }

  void run(RunContext& ctx) const override {
    const float* q = ctx.value<const float>(in_[0]);
    const float* k = ctx.value<const float>(in_[1]);
    const float* v = ctx.value<const float>(in_[2]);
    const float* mask = in_.size() == 4 ? ctx.value<const float>(in_[3]) : nullptr;
    float* y = ctx.value<float>(out_);
    const std::int64_t rows = static_cast<std::int64_t>(q_off_.size()) * lq_;
    ctx.pool->parallel_for(rows, 4, [&](std::int64_t r0, std::int64_t r1, int thread) {
      float* p = ctx.scratch_of<float>(thread);
      double* acc = reinterpret_cast<double*>(p + std::max<std::int64_t>(lk_, 1) + (std::max<std::int64_t>(lk_, 1) & 1));
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t b = r / lq_, i = r % lq_;
        const float* qi = q + q_off_[b] + i * d_;
        const std::int64_t visible = causal_ ? std::min(i + 1, lk_) : lk_;
        float max = -std::numeric_limits<float>::infinity();
        for (std::int64_t j = 0; j < visible; ++j) {
          const float* kj = k + k_off_[b] + j * d_;
          float dot = 0;
          for (std::int64_t c = 0; c < d_; ++c) dot += qi[c] * kj[c];
          float s = dot * scale_;
          if (mask) s += mask[mask_off_[b] + i * mask_row_stride_ + j * mask_col_stride_];
          p[j] = s;
          max = std::max(max, s);
        }
        double sum = 0;
        for (std::int64_t j = 0; j < visible; ++j) sum += p[j] = std::exp(p[j] - max);
        std::fill(acc, acc + dv_, 0.0);
        for (std::int64_t j = 0; j < visible; ++j) {
          const float* vj = v + v_off_[b] + j * dv_;
          for (std::int64_t c = 0; c < dv_; ++c) acc[c] += double(p[j]) * vj[c];
        }
        if (lk_ == 0) sum = 1;
        float* out = y + r * dv_;
        for (std::int64_t c = 0; c < dv_; ++c) out[c] = float(acc[c] / sum);
      }
    });
  }
  std::string describe() const override {
    return detail::concat("sdpa fused per query row (", q_off_.size(), " x ", lq_, " queries, ", lk_, " keys, dim ", d_,
                          causal_ ? ", causal without a mask" : "", ")");
  }

 private:
  template <class Fn>
  void for_each_batch(Fn&& fn) const {
    Shape index(batch_.size(), 0);
    const std::int64_t count = element_count(batch_);
    for (std::int64_t n = 0; n < count; ++n) {
      fn(index);
      for (std::size_t d = index.size(); d-- > 0;) {
        if (++index[d] < batch_[d]) break;
        index[d] = 0;
      }
    }
  }

  std::vector<ValueId> in_;
  ValueId out_;
  bool causal_;
  std::int64_t lq_ = 0, d_ = 0, lk_ = 0, dv_ = 0, mask_row_stride_ = 0, mask_col_stride_ = 0;
  float scale_ = 1;
  Shape batch_;
  std::vector<std::int64_t> q_off_, k_off_, v_off_, mask_off_;
};

}  // namespace rml::exec
