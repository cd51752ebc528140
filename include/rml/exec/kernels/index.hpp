// Indexing kernels: gather as block copies, top_k as a partial sort per row.
#pragma once

#include <algorithm>
#include <cstring>
#include <numeric>

#include "rml/exec/kernel.hpp"

namespace rml::exec {

/// take(data, indices, axis) as block copies; indices checked first.
class GatherKernel final : public Kernel {
 public:
  GatherKernel(ValueId data, ValueId indices, ValueId out, const Shape& data_shape, const Shape& out_shape,
               std::int64_t axis, std::int64_t index_count)
      : data_(data), indices_(indices), out_(out), count_(index_count), axis_(axis) {
    dim_ = data_shape[axis];
    // An empty output copies nothing (its leading dimensions alone may exceed
    // 64 bits); a non-empty one bounds every product below.
    empty_ = element_count(out_shape) == 0;
    outer_ = empty_ ? 0 : element_count(std::span(data_shape).first(static_cast<std::size_t>(axis)));
    block_ = empty_ ? 0 : 4 * element_count(std::span(data_shape).subspan(static_cast<std::size_t>(axis) + 1));
  }
  void run(RunContext& ctx) const override {
    const std::int32_t* idx = ctx.value<const std::int32_t>(indices_);
    for (std::int64_t i = 0; i < count_; ++i)
      if (idx[i] < -dim_ || idx[i] >= dim_)
        fail(ErrorCode::index_out_of_range, "gather: index ", idx[i], " at position ", i, " is out of range for axis ", axis_, " of size ", dim_);
    if (empty_) return;
    const std::byte* data = ctx.slots[data_];
    std::byte* out = ctx.slots[out_];
    ctx.pool->parallel_for(outer_ * count_, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(block_, 1)),
                           [&](std::int64_t b, std::int64_t e, int) {
      for (std::int64_t task = b; task < e; ++task) {
        const std::int64_t o = task / count_, i = task % count_;
        const std::int64_t index = idx[i] < 0 ? idx[i] + dim_ : idx[i];
        if (block_) std::memcpy(out + task * block_, data + (o * dim_ + index) * block_, block_);
      }
    });
  }
  std::string describe() const override { return "gather (block copy)"; }

 private:
  ValueId data_, indices_, out_;
  std::int64_t count_, axis_, outer_, dim_, block_;
  bool empty_;
};

/// The k largest per row of the last axis; ties to the lowest index.
class TopKKernel final : public Kernel {
 public:
  TopKKernel(ValueId in, ValueId values, ValueId indices, DType dtype, std::int64_t rows, std::int64_t dim, std::int64_t k)
      : in_(in), values_(values), indices_(indices), dtype_(dtype), rows_(rows), dim_(dim), k_(k) {
    thread_scratch_bytes = static_cast<std::size_t>(dim) * 4;
  }
  void run(RunContext& ctx) const override {
    visit_dtype(dtype_, [&](auto zero) {
      using T = decltype(zero);
      const T* x = ctx.value<const T>(in_);
      T* values = ctx.value<T>(values_);
      std::int32_t* indices = ctx.value<std::int32_t>(indices_);
      ctx.pool->parallel_for(rows_, 1, [&](std::int64_t r0, std::int64_t r1, int t) {
        std::int32_t* order = ctx.scratch_of<std::int32_t>(t);
        for (std::int64_t r = r0; r < r1; ++r) {
          const T* row = x + r * dim_;
          std::iota(order, order + dim_, 0);
          // A total order: larger first, NaN largest, then lower index.
          auto before = [&](std::int32_t a, std::int32_t b) {
            const T va = row[a], vb = row[b];
            const bool na = va != va, nb = vb != vb;
            if (na != nb) return na;
            if (!na && va != vb) return va > vb;
            return a < b;
          };
          std::partial_sort(order, order + k_, order + dim_, before);
          for (std::int64_t j = 0; j < k_; ++j) {
            values[r * k_ + j] = row[order[j]];
            indices[r * k_ + j] = order[j];
          }
        }
      });
    });
  }
  std::string describe() const override { return "top_k (partial sort per row)"; }

 private:
  ValueId in_, values_, indices_;
  DType dtype_;
  std::int64_t rows_, dim_, k_;
};

template <>
struct KernelFor<Gather> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const Gather& op) {
    const Shape& data = ctx.type(node.inputs[0]).shape;
    const std::int64_t axis = normalize_axis(op.axis, data.size(), "gather");
    return std::make_unique<GatherKernel>(node.inputs[0], node.inputs[1], node.outputs[0], data, ctx.output_shape(node),
                                          axis, element_count(ctx.type(node.inputs[1]).shape));
  }
};

template <>
struct KernelFor<TopK> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const TopK& op) {
    const TensorType& x = ctx.type(node.inputs[0]);
    const std::int64_t dim = x.shape.back();
    const std::int64_t rows = dim == 0 ? 0 : element_count(x.shape) / dim;
    return std::make_unique<TopKKernel>(node.inputs[0], node.outputs[0], node.outputs[1], x.dtype, rows, dim, op.k);
  }
};

}  // namespace rml::exec
