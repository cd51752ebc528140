// The fused nn ops: softmax and layer_norm per row (sums in double, exp
// vectorised), the GELU block functions, and scaled dot-product attention on
// the packed GEMM.
#pragma once

#include <array>
#include <cmath>
#include <limits>

#include "rml/exec/arena.hpp"
#include "rml/exec/gemm.hpp"
#include "rml/exec/kernels/elementwise.hpp"
#include "rml/exec/simd_math.hpp"

namespace rml::exec {

/// Softmax along one axis: rows of `dim` elements `inner` apart.
class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(ValueId in, ValueId out, std::int64_t outer, std::int64_t dim, std::int64_t inner)
      : in_(in), out_(out), outer_(outer), dim_(dim), inner_(inner) {}
  void run(RunContext& ctx) const override {
    const float* x = ctx.value<const float>(in_);
    float* y = ctx.value<float>(out_);
    const Isa isa = active_isa();
    ctx.pool->parallel_for(outer_ * inner_, std::max<std::int64_t>(1, 2048 / std::max<std::int64_t>(dim_, 1)),
                           [&](std::int64_t b, std::int64_t e, int) {
      for (std::int64_t r = b; r < e; ++r) {
        const std::int64_t o = r / inner_, i = r % inner_;
        const float* row = x + o * dim_ * inner_ + i;
        float* out = y + o * dim_ * inner_ + i;
        // Contiguous rows take the vector forms; strided ones the lane forms (the same bits).
        if (inner_ == 1) {
          simd::shift_row(isa, row, simd::row_max(isa, row, dim_), out, dim_);
          simd::exp_block(out, out, dim_);
          simd::scale_row(isa, out, float(1.0 / simd::sum_in_double(isa, out, dim_)), out, dim_);
          continue;
        }
        float max = -std::numeric_limits<float>::infinity();
        for (std::int64_t j = 0; j < dim_; ++j) max = std::max(max, row[j * inner_]);
        for (std::int64_t j = 0; j < dim_; ++j) out[j * inner_] = simd::exp(row[j * inner_] - max);
        double sum = 0;
        for (std::int64_t j = 0; j < dim_; ++j) sum += out[j * inner_];
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
    const Isa isa = active_isa();
    ctx.pool->parallel_for(rows_, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(dim_, 1)),
                           [&](std::int64_t b, std::int64_t e, int) {
      // Rows in pairs: each row's mean on its own (the pass that streams it
      // in), then both rows' squared deviations at once, their chains
      // overlapping (the same bits as one by one).
      for (std::int64_t r = b; r < e; r += 2) {
        const std::int64_t count = std::min<std::int64_t>(2, e - r);
        const float* rows[2] = {x + r * dim_, x + (r + count - 1) * dim_};
        double means[2], squares[2];
        for (int i = 0; i < 2; ++i) means[i] = simd::sum_in_double(isa, rows[i], dim_) / double(dim_);
        simd::squared_deviations_in_double_pair(isa, rows[0], rows[1], dim_, means, squares);
        for (std::int64_t i = 0; i < count; ++i) {
          const double variance = squares[i] / double(dim_);
          simd::normalize_row(isa, rows[i], dim_, means[i], 1.0 / std::sqrt(variance + eps_), scale, bias,
                              y + (r + i) * dim_);
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

template <>
struct KernelFor<Softmax> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const Softmax& op) {
    const Shape& x = ctx.type(node.inputs[0]).shape;
    const std::size_t axis = normalize_axis(op.axis, x.size(), "softmax");
    std::int64_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < axis; ++d) outer *= x[d];
    for (std::size_t d = axis + 1; d < x.size(); ++d) inner *= x[d];
    return std::make_unique<SoftmaxKernel>(node.inputs[0], node.outputs[0], outer, x[axis], inner);
  }
};

template <>
struct KernelFor<LayerNorm> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const LayerNorm& op) {
    const Shape& x = ctx.type(node.inputs[0]).shape;
    const std::int64_t dim = x.back();
    return std::make_unique<LayerNormKernel>(node.inputs, node.outputs[0], dim == 0 ? 0 : element_count(x) / dim, dim, op.eps);
  }
};

/// GELU is elementwise; both forms are vectorised (simd_math.hpp).
template <>
struct BlockFor<Gelu> {
  static constexpr int cost = kTranscendentalCost;
  static BlockFn function(const Gelu& op, const Types&) {
    return op.uses_tanh() ? &block::f32<simd::gelu_tanh_block> : &block::f32<simd::gelu_erf_block>;
  }
};

// sdpa on the packed GEMM: per batch matrix, K^T and V
// are packed once; then each block of query rows computes its scores
// S = Q K^T into thread scratch, scales, masks and softmaxes them row by row,
// and multiplies P V straight into the output. The full score matrix and a
// causal mask are never materialised. A row's result does not depend on how
// rows are split into blocks or threads, so any thread count is bit-identical.
class SdpaKernel final : public Kernel {
 public:
  /// `in`: q, k, v (and the mask) as read; types and out_shape: as the op
  /// sees them. Where heads_inner[i], operand i (3: the output) is in
  /// [B, L, H, D] memory (a gathered transpose's input, the output's
  /// transpose) as the [B, H, L, D] the op takes.
  SdpaKernel(const Sdpa& op, std::vector<ValueId> in, ValueId out, const Types& types, const Shape& out_shape,
             std::array<bool, 4> heads_inner = {})
      : in_(std::move(in)), out_(out), causal_(op.causal) {
    const Shape &q = types[0].shape, &k = types[1].shape, &v = types[2].shape;
    lq_ = q[q.size() - 2];
    d_ = q.back();
    lk_ = k[k.size() - 2];
    dv_ = v.back();
    scale_ = op.scale ? float(*op.scale) : float(1.0 / std::sqrt(double(d_)));
    batch_ = Shape(out_shape.begin(), out_shape.end() - 2);
    q_ = operand(q, heads_inner[0]);
    k_ = operand(k, heads_inner[1]);
    v_ = operand(v, heads_inner[2]);
    y_ = operand(out_shape, heads_inner[3]);
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
    k_packed_floats_ = align_up(PackedB::bytes(d_, lk_)) / sizeof(float);
    v_packed_floats_ = align_up(PackedB::bytes(lk_, dv_)) / sizeof(float);
    gemm_scratch_floats_ = align_up(gemm_scratch_bytes(std::max(d_, lk_))) / sizeof(float);
    // Each task packs the K and V of the batches it takes into its own scratch.
    thread_scratch_bytes =
        (gemm_scratch_floats_ + static_cast<std::size_t>(kRowBlock * lk_) + k_packed_floats_ + v_packed_floats_) *
        sizeof(float);
  }

  void run(RunContext& ctx) const override {
    const float* q = ctx.value<const float>(in_[0]);
    const float* k = ctx.value<const float>(in_[1]);
    const float* v = ctx.value<const float>(in_[2]);
    const float* mask = in_.size() == 4 ? ctx.value<const float>(in_[3]) : nullptr;
    float* y = ctx.value<float>(out_);
    const std::int64_t batches = static_cast<std::int64_t>(q_.offsets.size());
    const std::int64_t blocks = (lq_ + kRowBlock - 1) / kRowBlock;
    const Isa isa = active_isa();
    // Tasks of whole batches (a batch's K and V packed once, used while in
    // L1/L2) where there are enough for every thread; else of query blocks.
    const bool by_batch = batches >= 2 * ctx.pool->size();
    const std::int64_t per_task = by_batch ? blocks : 1;
    ctx.pool->parallel_for(batches * blocks / per_task, 1, [&](std::int64_t t0, std::int64_t t1, int thread) {
      float* gemm_scratch = ctx.scratch_of<float>(thread);
      float* scores = gemm_scratch + gemm_scratch_floats_;
      float* kt = scores + kRowBlock * lk_;
      std::int64_t packed_batch = -1;
      for (std::int64_t t = t0 * per_task; t < t1 * per_task; ++t) {
        const std::int64_t b = t / blocks, i0 = (t % blocks) * kRowBlock, rows = std::min(kRowBlock, lq_ - i0);
        if (b != packed_batch) {
          PackedB::pack_transposed_into(kt, k + k_.offsets[b], d_, lk_, k_.row_stride);
          PackedB::pack_into(kt + k_packed_floats_, v + v_.offsets[b], lk_, dv_, v_.row_stride);
          packed_batch = b;
        }
        gemm(q + q_.offsets[b] + i0 * q_.row_stride, q_.row_stride, PackedBView{kt, d_, lk_, &gemm_detail::kernels_for(lk_)}, scores, lk_, 0, rows, 0, lk_, gemm_scratch);
        for (std::int64_t r = 0; r < rows; ++r) softmax_row(isa, scores + r * lk_, b, i0 + r, mask);
        gemm(scores, lk_, PackedBView{kt + k_packed_floats_, lk_, dv_, &gemm_detail::kernels_for(dv_)}, y + y_.offsets[b] + i0 * y_.row_stride,
             y_.row_stride, 0, rows, 0, dv_, gemm_scratch);
      }
    });
  }
  std::string describe() const override {
    return detail::concat("sdpa on the packed GEMM, ", kRowBlock, "-row query blocks (", q_.offsets.size(), " x ", lq_, " queries, ", lk_, " keys, dim ", d_,
                          causal_ ? ", causal without a mask" : "", ")");
  }

 private:
  static constexpr std::int64_t kRowBlock = 48;  // query rows per task (a multiple of the GEMM's 6)

  /// Scores of query row i (dot products) in place -> its attention weights:
  /// scaled, masked, softmaxed over the visible keys, 0 past them.
  void softmax_row(Isa isa, float* s, std::int64_t b, std::int64_t i, const float* mask) const {
    const std::int64_t visible = causal_ ? std::min(i + 1, lk_) : lk_;
    simd::scale_row(isa, s, scale_, s, visible);
    if (mask)
      for (std::int64_t j = 0; j < visible; ++j) s[j] += mask[mask_off_[b] + i * mask_row_stride_ + j * mask_col_stride_];
    simd::shift_row(isa, s, simd::row_max(isa, s, visible), s, visible);
    simd::exp_block(s, s, visible);
    simd::divide_row(isa, s, simd::sum_in_double(isa, s, visible), s, visible);
    std::fill(s + visible, s + lk_, 0.0f);
  }

  /// Where each batch's matrix of an operand starts, and how far apart its rows are.
  struct Operand {
    std::vector<std::int64_t> offsets;
    std::int64_t row_stride = 0;
  };
  /// `s` as the op sees it; heads_inner: its memory is [B, L, H, D] (s is [B, H, L, D]).
  Operand operand(const Shape& s, bool heads_inner) const {
    const std::size_t rank = s.size();
    const Shape strides = heads_inner ? Shape{s[2] * s[1] * s[3], s[3], s[1] * s[3], 1} : contiguous_strides(s);
    Operand o{{}, strides[rank - 2]};
    const std::size_t lead = batch_.size() - (rank - 2);  // s's batch axes are batch_'s last ones
    for_each_batch([&](const Shape& index) {
      std::int64_t offset = 0;
      for (std::size_t d = 0; d + 2 < rank; ++d)
        if (s[d] != 1) offset += index[lead + d] * strides[d];  // broadcast along its unit axes
      o.offsets.push_back(offset);
    });
    return o;
  }

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
  Operand q_, k_, v_, y_;
  std::vector<std::int64_t> mask_off_;
  std::size_t k_packed_floats_ = 0, v_packed_floats_ = 0, gemm_scratch_floats_ = 0;
};

template <>
struct KernelFor<Sdpa> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const Sdpa& op) {
    std::vector<ValueId> reads = node.inputs;
    ValueId written = node.outputs[0];
    std::array<bool, 4> heads_inner{};
    if (const std::vector<ValueId>& operands = ctx.sdpa_operands_of(node); !operands.empty()) {
      for (std::size_t i = 0; i < 3; ++i)
        if (operands[i] != node.inputs[i]) reads[i] = operands[i], heads_inner[i] = true;
      if (operands[3] != written) written = operands[3], heads_inner[3] = true;
    }
    return std::make_unique<SdpaKernel>(op, std::move(reads), written, ctx.input_types(node), ctx.output_shape(node),
                                        heads_inner);
  }
};

}  // namespace rml::exec
