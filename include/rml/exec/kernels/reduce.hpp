// Reductions, softmax and layer_norm. Each output (or row) is computed by
// one thread in a fixed order, so results never depend on the thread count.
#pragma once

#include <cmath>
#include <limits>

#include "rml/exec/kernel.hpp"

namespace rml::exec {

enum class ReduceKind { sum, mean, max, min };

/// Reduces the axes of `shape` marked in `reduced`, in row-major order of
/// the reduced axes. Sums of f32 accumulate in double.
class ReduceKernel final : public Kernel {
 public:
  ReduceKernel(ReduceKind kind, DType dtype, ValueId in, ValueId out, const Shape& shape, const Ints& reduced_axes)
      : kind_(kind), dtype_(dtype), in_(in), out_(out) {
    const Shape strides = contiguous_strides(shape);
    for (std::size_t d = 0; d < shape.size(); ++d) {
      const bool r = std::find(reduced_axes.begin(), reduced_axes.end(), std::int64_t(d)) != reduced_axes.end();
      (r ? inner_dims_ : outer_dims_).push_back(shape[d]);
      (r ? inner_strides_ : outer_strides_).push_back(strides[d]);
    }
    merge(inner_dims_, inner_strides_);
    count_ = 1;
    for (auto d : inner_dims_) count_ *= d;
    outputs_ = 1;
    for (auto d : outer_dims_) outputs_ *= d;
  }

  void run(RunContext& ctx) const override {
    visit_dtype(dtype_, [&](auto zero) {
      using T = decltype(zero);
      const T* x = ctx.value<const T>(in_);
      T* y = ctx.value<T>(out_);
      ctx.pool->parallel_for(outputs_, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(count_, 1)),
                             [&](std::int64_t b, std::int64_t e, int) {
        for (std::int64_t o = b; o < e; ++o) y[o] = reduce_one<T>(x + base(o));
      });
    });
  }
  std::string describe() const override {
    static constexpr const char* names[] = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"};
    return detail::concat(names[int(kind_)], " over ", count_, " elements per output");
  }

 private:
  static void merge(Shape& dims, Shape& strides) {
    for (std::size_t d = dims.size(); d-- > 1;)
      if (strides[d - 1] == strides[d] * dims[d]) {
        dims[d - 1] *= dims[d];
        strides[d - 1] = strides[d];
        dims.erase(dims.begin() + d);
        strides.erase(strides.begin() + d);
      }
  }
  std::int64_t base(std::int64_t o) const {
    std::int64_t offset = 0;
    for (std::size_t d = outer_dims_.size(); d-- > 0;) {
      offset += (o % outer_dims_[d]) * outer_strides_[d];
      o /= outer_dims_[d];
    }
    return offset;
  }
  template <class T, class Fn>
  void for_each_reduced(const T* x, Fn&& fn) const {
    if (count_ == 0) return;
    if (inner_dims_.size() == 1) {
      const std::int64_t n = inner_dims_[0], s = inner_strides_[0];
      for (std::int64_t i = 0; i < n; ++i) fn(x[i * s]);
      return;
    }
    for (std::int64_t k = 0; k < count_; ++k) {  // row-major over the reduced axes; allocates nothing
      std::int64_t offset = 0, rest = k;
      for (std::size_t d = inner_dims_.size(); d-- > 0;) {
        offset += (rest % inner_dims_[d]) * inner_strides_[d];
        rest /= inner_dims_[d];
      }
      fn(x[offset]);
    }
  }
  template <class T>
  T reduce_one(const T* x) const {
    if (kind_ == ReduceKind::sum || kind_ == ReduceKind::mean) {
      if constexpr (std::is_same_v<T, float>) {
        double sum = 0;
        for_each_reduced(x, [&](float v) { sum += v; });
        return kind_ == ReduceKind::mean ? float(sum / double(count_)) : float(sum);
      } else {
        std::uint32_t sum = 0;  // wraps like NumPy's int32
        for_each_reduced(x, [&](std::int32_t v) { sum += std::uint32_t(v); });
        return static_cast<std::int32_t>(sum);
      }
    }
    const bool larger = kind_ == ReduceKind::max;
    using L = std::numeric_limits<T>;
    T acc = larger ? (L::has_infinity ? -L::infinity() : L::lowest()) : (L::has_infinity ? L::infinity() : L::max());
    for_each_reduced(x, [&](T v) {
      if (acc != acc) return;
      if (v != v || (larger ? v > acc : v < acc)) acc = v;
    });
    return acc;
  }

  ReduceKind kind_;
  DType dtype_;
  ValueId in_, out_;
  Shape outer_dims_, outer_strides_, inner_dims_, inner_strides_;
  std::int64_t count_ = 1, outputs_ = 1;
};

/// Softmax along one axis: rows of `dim` elements `inner` apart.
class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(ValueId in, ValueId out, std::int64_t outer, std::int64_t dim, std::int64_t inner)
      : in_(in), out_(out), outer_(outer), dim_(dim), inner_(inner) {}
  void run(RunContext& ctx) const override {
    const float* x = ctx.value<const float>(in_);
    float* y = ctx.value<float>(out_);
    ctx.pool->parallel_for(outer_ * inner_, std::max<std::int64_t>(1, 2048 / std::max<std::int64_t>(dim_, 1)),
                           [&](std::int64_t b, std::int64_t e, int) {
      for (std::int64_t r = b; r < e; ++r) {
        const std::int64_t o = r / inner_, i = r % inner_;
        const float* row = x + o * dim_ * inner_ + i;
        float* out = y + o * dim_ * inner_ + i;
        float max = -std::numeric_limits<float>::infinity();
        for (std::int64_t j = 0; j < dim_; ++j) max = std::max(max, row[j * inner_]);
        double sum = 0;
        for (std::int64_t j = 0; j < dim_; ++j) {
          const float v = std::exp(row[j * inner_] - max);
          out[j * inner_] = v;
          sum += v;
        }
        const float scale = float(1.0 / sum);
        for (std::int64_t j = 0; j < dim_; ++j) out[j * inner_] *= scale;
      }
    });
  }
  std::string describe() const override {
    return detail::concat("softmax over ", dim_, inner_ == 1 ? " contiguous" : " strided", " elements");
  }

 private:
  ValueId in_, out_;
  std::int64_t outer_, dim_, inner_;
};

/// Layer norm over rows of the last axis; mean and variance in double.
class LayerNormKernel final : public Kernel {
 public:
  LayerNormKernel(std::vector<ValueId> in, ValueId out, std::int64_t rows, std::int64_t dim, double eps)
      : in_(std::move(in)), out_(out), rows_(rows), dim_(dim), eps_(eps) {}
  void run(RunContext& ctx) const override {
    const float* x = ctx.value<const float>(in_[0]);
    const float* scale = in_.size() > 1 ? ctx.value<const float>(in_[1]) : nullptr;
    const float* bias = in_.size() > 2 ? ctx.value<const float>(in_[2]) : nullptr;
    float* y = ctx.value<float>(out_);
    ctx.pool->parallel_for(rows_, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(dim_, 1)),
                           [&](std::int64_t b, std::int64_t e, int) {
      for (std::int64_t r = b; r < e; ++r) {
        const float* row = x + r * dim_;
        float* out = y + r * dim_;
        double mean = 0, variance = 0;
        for (std::int64_t j = 0; j < dim_; ++j) mean += row[j];
        mean /= double(dim_);
        for (std::int64_t j = 0; j < dim_; ++j) variance += (row[j] - mean) * (row[j] - mean);
        variance /= double(dim_);
        const double inv = 1.0 / std::sqrt(variance + eps_);
        for (std::int64_t j = 0; j < dim_; ++j) {
          double v = (row[j] - mean) * inv;
          if (scale) v *= scale[j];
          if (bias) v += bias[j];
          out[j] = float(v);
        }
      }
    });
  }
  std::string describe() const override { return detail::concat("layer_norm over rows of ", dim_); }

 private:
  std::vector<ValueId> in_;
  ValueId out_;
  std::int64_t rows_, dim_;
  double eps_;
};

}  // namespace rml::exec
