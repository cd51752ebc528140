// Reductions (sum, mean, max, min over any axes) and running sums. Each output is computed by
// one thread in a fixed order, so results never depend on the thread count:
// a contiguous run of terms in simd_math.hpp's sixteen chains, terms apart in
// one chain (sixteen outputs side by side in the vectors' lanes).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "rml/exec/kernel.hpp"
#include "rml/exec/kernels/elementwise.hpp"
#include "rml/exec/simd_math.hpp"

namespace rml::exec {

enum class ReduceKind { sum, mean, max, min };

/// Reduces the axes of `shape` marked in `reduced`, in row-major order of
/// the reduced axes. Sums of f32 accumulate in double.
///
/// With a prologue (an elementwise group only the reduction reads, fused by
/// exec/fusion.hpp: a weighted sum, a sum of squares), the input is never
/// written out: each slab of it, the terms of the outputs that share the axes
/// before the reduced ones, is computed into scratch and reduced at once.
class ReduceKernel final : public Kernel {
 public:
  /// The input elements one slab spans, when the (normalised, sorted)
  /// reduced axes are neighbours and a slab is worth it and fits in scratch; else 0.
  static std::int64_t prologue_slab(const Shape& shape, const Ints& axes) {
    if (axes.empty() || axes.back() - axes.front() + 1 != std::int64_t(axes.size())) return 0;
    const std::int64_t slab = element_count(Shape(shape.begin() + axes.front(), shape.end()));
    return slab >= kMinSlab && slab <= kMaxSlab ? slab : 0;
  }
  // Smaller slabs save an L1-resident write and read but cost a call and a
  // loop each (moe's gate, 16-float slabs: 52 -> 60 us fused).
  static constexpr std::int64_t kMinSlab = ElementwiseGroup::block;
  static constexpr std::int64_t kMaxSlab = 16384;  // floats: 64 KiB of scratch per thread

  ReduceKernel(ReduceKind kind, DType dtype, ValueId in, ValueId out, const Shape& shape, const Ints& reduced_axes,
               std::optional<ElementwiseGroup> prologue = std::nullopt)
      : kind_(kind), dtype_(dtype), in_(in), out_(out), prologue_(std::move(prologue)) {
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
    side_by_side_ = dtype == DType::f32 && (kind == ReduceKind::sum || kind == ReduceKind::mean) &&
                    inner_dims_.size() == 1 && !outer_strides_.empty() && outer_strides_.back() == 1;
    if (prologue_) {
      slab_ = prologue_slab(shape, reduced_axes);
      if (dtype != DType::f32 || slab_ == 0 || prologue_->output() != in)
        fail(ErrorCode::internal, "a reduction's prologue must compute its f32 input in slabs of neighbouring axes");
      thread_scratch_bytes = prologue_->scratch_bytes() + static_cast<std::size_t>(slab_) * 4;
    }
  }

  void run(RunContext& ctx) const override {
    if (prologue_) return run_with_prologue(ctx);
    visit_dtype(dtype_, [&](auto zero) {
      using T = decltype(zero);
      const T* x = ctx.value<const T>(in_);
      T* y = ctx.value<T>(out_);
      ctx.pool->parallel_for(outputs_, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(count_, 1)),
                             [&](std::int64_t b, std::int64_t e, int) {
        if constexpr (std::is_same_v<T, float>)
          if (side_by_side_) return sum_side_by_side(x, 0, y, b, e);
        for (std::int64_t o = b; o < e; ++o) y[o] = reduce_one<T>(x + base(o));
      });
    });
  }
  std::string describe() const override {
    static constexpr const char* names[] = {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"};
    std::string text = detail::concat(names[int(kind_)], " over ", count_, " elements per output");
    if (prologue_) text += detail::concat(", of ", prologue_->describe(), " computed ", slab_, " at a time");
    return text;
  }

 private:
  void run_with_prologue(RunContext& ctx) const {
    float* y = ctx.value<float>(out_);
    const std::int64_t slabs = outputs_ == 0 ? 0 : prologue_->elements() / slab_;
    const std::int64_t per_slab = slabs == 0 ? 0 : outputs_ / slabs;
    ctx.pool->parallel_for(slabs, std::max<std::int64_t>(1, ElementwiseGroup::kMinTaskWork / slab_),
                           [&](std::int64_t b, std::int64_t e, int thread) {
      float* terms = ctx.scratch_of<float>(thread) + prologue_->scratch_bytes() / 4;  // after the group's own
      for (std::int64_t s = b; s < e; ++s) {
        prologue_->eval_flat(ctx, s * slab_, (s + 1) * slab_, terms, thread);
        const std::int64_t o0 = s * per_slab, o1 = o0 + per_slab;
        if (side_by_side_) {
          sum_side_by_side(terms, s * slab_, y, o0, o1);
        } else {
          for (std::int64_t o = o0; o < o1; ++o) y[o] = reduce_one<float>(terms + (base(o) - s * slab_));
        }
      }
    });
  }

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
  /// Sums over one strided axis whose outputs sit side by side in the input
  /// (the innermost axis is kept): sixteen at a time, each output's terms
  /// still one chain in order, as reduce_one adds them. `x` holds the input
  /// from element `x_first` on.
  void sum_side_by_side(const float* x, std::int64_t x_first, float* y, std::int64_t b, std::int64_t e) const {
    const std::int64_t row = outer_dims_.back();
    const Isa isa = active_isa();
    double sums[16];
    for (std::int64_t o = b; o < e;) {
      const std::int64_t lanes = std::min({e - o, row - o % row, std::int64_t{16}});
      simd::sum_columns(isa, x + (base(o) - x_first), inner_strides_[0], count_, lanes, sums);
      for (std::int64_t l = 0; l < lanes; ++l) y[o + l] = finish(sums[l]);
      o += lanes;
    }
  }
  float finish(double sum) const { return kind_ == ReduceKind::mean ? float(sum / double(count_)) : float(sum); }

  template <class T>
  T reduce_one(const T* x) const {
    if (kind_ == ReduceKind::sum || kind_ == ReduceKind::mean) {
      if constexpr (std::is_same_v<T, float>) {
        const double sum = inner_dims_.size() == 1 && inner_strides_[0] == 1 ? simd::sum_in_double(x, inner_dims_[0]) : [&] {
          double total = 0;
          for_each_reduced(x, [&](float v) { total += v; });
          return total;
        }();
        return finish(sum);
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
  bool side_by_side_ = false;  // sum_side_by_side applies
  std::optional<ElementwiseGroup> prologue_;  // computes the input, slab_ elements at a time
  std::int64_t slab_ = 0;
};

/// The kernel's name for each reduction kind of ops/reduce.hpp.
template <class Kind>
struct ReduceKindOf;
template <> struct ReduceKindOf<SumKind> { static constexpr ReduceKind value = ReduceKind::sum; };
template <> struct ReduceKindOf<MeanKind> { static constexpr ReduceKind value = ReduceKind::mean; };
template <> struct ReduceKindOf<MaxKind> { static constexpr ReduceKind value = ReduceKind::max; };
template <> struct ReduceKindOf<MinKind> { static constexpr ReduceKind value = ReduceKind::min; };

template <class Kind>
struct KernelFor<Reduce<Kind>> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const Reduce<Kind>& op,
                                      std::optional<ElementwiseGroup> prologue = std::nullopt) {
    const TensorType& x = ctx.type(node.inputs[0]);
    return std::make_unique<ReduceKernel>(ReduceKindOf<Kind>::value, x.dtype, node.inputs[0], node.outputs[0], x.shape,
                                          normalize_axes(op.axes, x.shape.size(), "reduce"), std::move(prologue));
  }
};

/// Running sums along one axis. The work splits over the outer index; within it the
/// `inner` lines advance together, one accumulator each (double for f32, so every output
/// is the reference's: the same additions in the same order, rounded once).
class CumSumKernel final : public Kernel {
 public:
  CumSumKernel(const CumSum& op, DType dtype, ValueId in, ValueId out, const Shape& shape)
      : dtype_(dtype), in_(in), out_(out), exclusive_(op.exclusive), reverse_(op.reverse) {
    const std::size_t axis = normalize_axis(op.axis, shape.size(), "cumsum");
    outer_ = element_count(Shape(shape.begin(), shape.begin() + std::ptrdiff_t(axis)));
    dim_ = shape[axis];
    inner_ = element_count(Shape(shape.begin() + std::ptrdiff_t(axis) + 1, shape.end()));
    thread_scratch_bytes = static_cast<std::size_t>(inner_) * 8;  // one accumulator per line (double or u32)
  }

  void run(RunContext& ctx) const override {
    visit_dtype(dtype_, [&](auto zero) {
      using T = decltype(zero);
      using Acc = std::conditional_t<std::is_same_v<T, float>, double, std::uint32_t>;  // i32 wraps
      const T* x = ctx.value<const T>(in_);
      T* y = ctx.value<T>(out_);
      const std::int64_t work = std::max<std::int64_t>(dim_ * inner_, 1);
      ctx.pool->parallel_for(outer_, std::max<std::int64_t>(1, 16384 / work),
                             [&](std::int64_t b, std::int64_t e, int thread) {
        Acc* sums = ctx.scratch_of<Acc>(thread);  // the plan's scratch: no allocation per run
        for (std::int64_t o = b; o < e; ++o) {
          std::fill(sums, sums + inner_, Acc(0));
          for (std::int64_t step = 0; step < dim_; ++step) {
            const std::int64_t row = (o * dim_ + (reverse_ ? dim_ - 1 - step : step)) * inner_;
            const T* in = x + row;
            T* result = y + row;
            for (std::int64_t i = 0; i < inner_; ++i) {
              const Acc before = sums[i];
              const Acc sum = sums[i] = Acc(before + Acc(in[i]));
              result[i] = static_cast<T>(exclusive_ ? before : sum);
            }
          }
        }
      });
    });
  }
  std::string describe() const override { return detail::concat("cumsum along ", dim_, " elements, ", inner_, " lines"); }

 private:
  DType dtype_;
  ValueId in_, out_;
  bool exclusive_, reverse_;
  std::int64_t outer_ = 1, dim_ = 1, inner_ = 1;
};

template <>
struct KernelFor<CumSum> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const CumSum& op) {
    const TensorType& x = ctx.type(node.inputs[0]);
    return std::make_unique<CumSumKernel>(op, x.dtype, node.inputs[0], node.outputs[0], x.shape);
  }
};

}  // namespace rml::exec
