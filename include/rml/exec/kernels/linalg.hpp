// matmul on the packed GEMM: constant right operands are packed once when
// the plan is made; others are packed per run. The output is computed in
// tiles split across threads, and a fused epilogue (bias, activation,
// residual: an elementwise group reading the product) runs on each tile
// while it is in cache.
#pragma once

#include <optional>

#include "rml/exec/arena.hpp"
#include "rml/exec/gemm.hpp"
#include "rml/exec/kernels/elementwise.hpp"

namespace rml::exec {

/// For each output batch position, the flat batch index of an operand
/// whose batch axes (right-aligned, size 1 broadcasting) are `batch`.
inline std::vector<std::int64_t> batch_offsets(const Shape& out_batch, const Shape& batch) {
  const Shape strides = contiguous_strides(batch);
  const std::size_t lead = out_batch.size() - batch.size();
  std::vector<std::int64_t> offsets;
  const std::int64_t count = element_count(out_batch);
  for (std::int64_t flat = 0; flat < count; ++flat) {
    std::int64_t rest = flat, offset = 0;
    for (std::size_t d = out_batch.size(); d-- > 0;) {
      const std::int64_t i = rest % out_batch[d];
      rest /= out_batch[d];
      if (d >= lead && batch[d - lead] != 1) offset += i * strides[d - lead];
    }
    offsets.push_back(offset);
  }
  return offsets;
}


class MatMulKernel final : public Kernel {
 public:
  /// a: [batch..., M, K], b: [batch..., K, N] (1-D operands already
  /// promoted); `b_constant` is b's data when b is a constant, packed once
  /// through `cache`.
  MatMulKernel(ValueId a, ValueId b, ValueId product, Shape a_shape, Shape b_shape, const Shape& out_batch,
               const Tensor* b_constant, PackedWeightCache& cache, std::optional<ElementwiseGroup> epilogue)
      : a_(a), b_(b), product_(product), epilogue_(std::move(epilogue)) {
    m_ = a_shape[a_shape.size() - 2];
    k_ = a_shape.back();
    n_ = ldc_ = b_shape.back();
    const Shape a_batch(a_shape.begin(), a_shape.end() - 2), b_batch(b_shape.begin(), b_shape.end() - 2);
    b_batches_ = element_count(b_batch);
    if (b_batches_ == 1 && a_batch == out_batch) {
      // One weight matrix for every batch of a: a is contiguous, so the
      // batches stack into one taller product (more rows per GEMM tile).
      m_ *= element_count(a_batch);
      a_offsets_ = b_offsets_ = {0};
    } else {
      a_offsets_ = batch_offsets(out_batch, a_batch);
      b_offsets_ = batch_offsets(out_batch, b_batch);
    }
    if (b_constant) {
      packed_ = cache.get(b, b_constant->values<float>().data(), b_batches_, k_, n_);
    } else {
      shared_scratch_bytes = static_cast<std::size_t>(b_batches_) * align_up(PackedB::bytes(k_, n_));
    }
    thread_scratch_bytes = align_up(gemm_scratch_bytes(k_)) + (epilogue_ ? epilogue_->scratch_bytes() : 0);
  }

  ValueId target() const { return epilogue_ ? epilogue_->output() : product_; }

  /// A product (after its epilogue) concatenated along its last axis with
  /// others is written straight into the concat's output.
  bool write_rows_apart(ValueId value, std::int64_t row_length, std::int64_t row_stride) override {
    if (value != target() || row_length != n_) return false;
    if (epilogue_ && !epilogue_->write_rows_apart(product_, row_stride)) return false;
    ldc_ = row_stride;
    return true;
  }

  void run(RunContext& ctx) const override {
    const float* a = ctx.value<const float>(a_);
    float* c = ctx.value<float>(target());
    // Right operands not packed at plan time are packed now, into scratch.
    const std::size_t packed_stride = align_up(PackedB::bytes(k_, n_)) / sizeof(float);
    float* runtime_packed = reinterpret_cast<float*>(ctx.shared_scratch);
    if (!packed_) {
      const float* b = ctx.value<const float>(b_);
      ctx.pool->parallel_for(b_batches_, 1, [&](std::int64_t i0, std::int64_t i1, int) {
        for (std::int64_t i = i0; i < i1; ++i)
          PackedB::pack_into(runtime_packed + i * packed_stride, b + i * k_ * n_, k_, n_, n_);
      });
    }
    auto packed_b = [&](std::int64_t batch_b) {
      return packed_ ? view((*packed_)[batch_b])
                     : PackedBView{runtime_packed + batch_b * packed_stride, k_, n_, &gemm_detail::kernels_for(n_)};
    };
    const std::int64_t batches = static_cast<std::int64_t>(a_offsets_.size());
    const GemmTiles tiles = gemm_tiles(m_, n_, k_, batches, ctx.pool->size(), gemm_detail::kernels_for(n_).nr);
    const std::int64_t tile_rows = tiles.rows, tile_cols = tiles.cols;
    const std::int64_t row_tiles = (m_ + tile_rows - 1) / tile_rows, col_tiles = (n_ + tile_cols - 1) / tile_cols;
    const std::int64_t per_batch = row_tiles * col_tiles;
    const std::int64_t tasks = batches * per_batch;
    ctx.pool->parallel_for(tasks, 1, [&](std::int64_t t0, std::int64_t t1, int thread) {
      float* scratch = ctx.scratch_of<float>(thread);
      for (std::int64_t task = t0; task < t1; ++task) {
        const std::int64_t batch = task / per_batch, tile = task % per_batch;
        const std::int64_t m0 = (tile / col_tiles) * tile_rows, n0 = (tile % col_tiles) * tile_cols;
        const std::int64_t m1 = std::min(m0 + tile_rows, m_), n1 = std::min(n0 + tile_cols, n_);
        float* c_batch = c + batch * m_ * ldc_;
        gemm(a + a_offsets_[batch] * m_ * k_, k_, packed_b(b_offsets_[batch]), c_batch, ldc_, m0, m1, n0, n1, scratch);
        if (epilogue_) epilogue_->eval(ctx, batch * m_ + m0, batch * m_ + m1, n0, n1, thread);
      }
    });
  }

  std::string describe() const override {
    std::string text = detail::concat("matmul ", a_offsets_.size() > 1 ? std::to_string(a_offsets_.size()) + " x " : "",
                                      m_, "x", k_, " @ ", k_, "x", n_, packed_ ? " (weights prepacked)" : " (packed per run)");
    if (epilogue_) text += ", epilogue: " + epilogue_->describe();
    if (ldc_ != n_) text += detail::concat(", rows ", ldc_, " apart (into a concat)");
    return text;
  }

 private:
  ValueId a_, b_, product_;
  std::optional<ElementwiseGroup> epilogue_;
  std::int64_t m_ = 0, k_ = 0, n_ = 0, b_batches_ = 1;
  std::int64_t ldc_ = 0;  // elements between output rows: n_, or more when written into a concat
  std::vector<std::int64_t> a_offsets_, b_offsets_;
  std::shared_ptr<const PackedWeightCache::Packed> packed_;  // null: b is packed per run
};

/// Integer matmul (rare, never hot): plain loops, wrapping like NumPy.
class IntMatMulKernel final : public Kernel {
 public:
  IntMatMulKernel(ValueId a, ValueId b, ValueId out, const Shape& a_shape, const Shape& b_shape, const Shape& out_batch)
      : a_(a), b_(b), out_(out), m_(a_shape[a_shape.size() - 2]), k_(a_shape.back()), n_(b_shape.back()),
        a_offsets_(batch_offsets(out_batch, Shape(a_shape.begin(), a_shape.end() - 2))),
        b_offsets_(batch_offsets(out_batch, Shape(b_shape.begin(), b_shape.end() - 2))) {}
  void run(RunContext& ctx) const override {
    const std::int32_t* a = ctx.value<const std::int32_t>(a_);
    const std::int32_t* b = ctx.value<const std::int32_t>(b_);
    std::int32_t* c = ctx.value<std::int32_t>(out_);
    for (std::size_t batch = 0; batch < a_offsets_.size(); ++batch)
      for (std::int64_t i = 0; i < m_; ++i)
        for (std::int64_t j = 0; j < n_; ++j) {
          std::uint32_t sum = 0;
          for (std::int64_t p = 0; p < k_; ++p)
            sum += std::uint32_t(a[(a_offsets_[batch] * m_ + i) * k_ + p]) * std::uint32_t(b[(b_offsets_[batch] * k_ + p) * n_ + j]);
          c[(batch * m_ + i) * n_ + j] = static_cast<std::int32_t>(sum);
        }
  }
  std::string describe() const override { return "matmul i32 (plain loops)"; }

 private:
  ValueId a_, b_, out_;
  std::int64_t m_, k_, n_;
  std::vector<std::int64_t> a_offsets_, b_offsets_;
};

/// matmul, optionally with a fused epilogue group (exec/fusion.hpp decides
/// when): f32 on the packed GEMM, i32 by a plain loop.
template <>
struct KernelFor<MatMul> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const MatMul&,
                                      std::optional<ElementwiseGroup> epilogue = std::nullopt) {
    Shape a = ctx.type(node.inputs[0]).shape, b = ctx.type(node.inputs[1]).shape;
    if (a.size() == 1) a.insert(a.begin(), 1);
    if (b.size() == 1) b.push_back(1);
    const Shape batch = broadcast_shapes(std::span(a).first(a.size() - 2), std::span(b).first(b.size() - 2), "matmul");
    if (ctx.type(node.inputs[0]).dtype == DType::i32)
      return std::make_unique<IntMatMulKernel>(node.inputs[0], node.inputs[1], node.outputs[0], a, b, batch);
    return std::make_unique<MatMulKernel>(node.inputs[0], node.inputs[1], node.outputs[0], a, b, batch,
                                          ctx.constant(node.inputs[1]), ctx.packed_weights, std::move(epilogue));
  }
};

}  // namespace rml::exec
