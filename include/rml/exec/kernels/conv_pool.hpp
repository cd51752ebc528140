// conv2d as im2col + packed GEMM (1x1 stride-1 convolutions skip im2col),
// with bias and a fused epilogue per output tile; pools as direct loops.
#pragma once

#include <limits>
#include <optional>

#include "rml/exec/arena.hpp"
#include "rml/exec/gemm.hpp"
#include "rml/exec/kernels/elementwise.hpp"

namespace rml::exec {

class Conv2dKernel final : public Kernel {
 public:
  static constexpr std::int64_t tile_rows = 96, tile_cols = 256;

  /// The epilogue group, if any, is over the output viewed as [N, O, H'*W'].
  /// `w_constant` is the weights' data when they are a constant: then they
  /// are packed here, once, for each group and row tile, instead of per run.
  Conv2dKernel(const Conv2d& op, ValueId x, ValueId w, std::optional<ValueId> bias, ValueId product,
               const Shape& x_shape, const Shape& w_shape, const Shape& y_shape, const Tensor* w_constant,
               std::optional<ElementwiseGroup> epilogue)
      : op_(op), x_(x), w_(w), bias_(bias), product_(product), epilogue_(std::move(epilogue)) {
    batch_ = x_shape[0];
    channels_ = x_shape[1];
    height_ = x_shape[2];
    width_ = x_shape[3];
    outputs_ = w_shape[0];
    kh_ = w_shape[2];
    kw_ = w_shape[3];
    out_h_ = y_shape[2];
    out_w_ = y_shape[3];
    group_channels_ = channels_ / op.groups;
    depth_ = group_channels_ * kh_ * kw_;
    pixels_ = out_h_ * out_w_;
    pointwise_ = kh_ == 1 && kw_ == 1 && op.strides == Ints{1, 1} && op.pads == Ints{0, 0, 0, 0};
    const std::size_t cols_bytes = pointwise_ ? 0 : align_up(static_cast<std::size_t>(depth_ * pixels_) * 4);
    shared_scratch_bytes = cols_bytes + align_up(PackedB::bytes(depth_, pixels_));
    thread_scratch_bytes = align_up(gemm_scratch_bytes(depth_)) + (epilogue_ ? epilogue_->scratch_bytes() : 0);
    if (w_constant) {
      const std::int64_t per_group = outputs_ / op.groups;
      for (std::int64_t g = 0; g < op.groups; ++g)
        for (std::int64_t o0 = 0; o0 < per_group; o0 += tile_rows)
          packed_weights_.emplace_back(w_constant->values<float>().data() + g * per_group * depth_, depth_, o0,
                                       std::min(o0 + tile_rows, per_group), depth_);
    }
  }

  ValueId target() const { return epilogue_ ? epilogue_->output() : product_; }

  void run(RunContext& ctx) const override {
    const float* x = ctx.value<const float>(x_);
    const float* w = ctx.value<const float>(w_);
    const float* bias = bias_ ? ctx.value<const float>(*bias_) : nullptr;
    float* y = ctx.value<float>(target());
    float* cols = reinterpret_cast<float*>(ctx.shared_scratch);
    float* packed = pointwise_ ? cols : cols + align_up(static_cast<std::size_t>(depth_ * pixels_) * 4) / 4;
    const std::int64_t outputs_per_group = outputs_ / op_.groups;
    for (std::int64_t n = 0; n < batch_; ++n)
      for (std::int64_t g = 0; g < op_.groups; ++g) {
        const float* image = x + (n * channels_ + g * group_channels_) * height_ * width_;
        const float* columns = pointwise_ ? image : cols;
        if (!pointwise_) im2col(ctx, image, cols);
        PackedB::pack_into(packed, columns, depth_, pixels_, pixels_);
        const PackedBView b{packed, depth_, pixels_};
        const float* weights = w + g * outputs_per_group * depth_;
        float* out = y + (n * outputs_ + g * outputs_per_group) * pixels_;
        const std::int64_t row_tiles = (outputs_per_group + tile_rows - 1) / tile_rows;
        const std::int64_t col_tiles = (pixels_ + tile_cols - 1) / tile_cols;
        ctx.pool->parallel_for(row_tiles * col_tiles, 1, [&](std::int64_t t0, std::int64_t t1, int thread) {
          for (std::int64_t tile = t0; tile < t1; ++tile) {
            const std::int64_t o0 = (tile / col_tiles) * tile_rows, p0 = (tile % col_tiles) * tile_cols;
            const std::int64_t o1 = std::min(o0 + tile_rows, outputs_per_group), p1 = std::min(p0 + tile_cols, pixels_);
            if (packed_weights_.empty())
              gemm(weights, depth_, b, out, pixels_, o0, o1, p0, p1, ctx.scratch_of<float>(thread));
            else
              gemm(packed_weights_[g * row_tiles + o0 / tile_rows], b, out, pixels_, p0, p1);
            if (bias)
              for (std::int64_t o = o0; o < o1; ++o)
                for (std::int64_t p = p0; p < p1; ++p) out[o * pixels_ + p] += bias[g * outputs_per_group + o];
            if (epilogue_) {
              const std::int64_t row = n * outputs_ + g * outputs_per_group;
              epilogue_->eval(ctx, row + o0, row + o1, p0, p1, thread);
            }
          }
        });
      }
  }

  std::string describe() const override {
    std::string text = detail::concat("conv2d ", pointwise_ ? "1x1 as GEMM" : "im2col + GEMM", " (", outputs_, "x", depth_,
                                      " @ ", depth_, "x", pixels_, " per image", op_.groups > 1 ? " and group" : "", ")");
    if (!packed_weights_.empty()) text += ", weights prepacked";
    if (bias_) text += " + bias";
    if (epilogue_) text += ", epilogue: " + epilogue_->describe();
    return text;
  }

 private:
  /// cols[(c*kh + i)*kw + j][oh*W' + ow] = the input under tap (i, j), 0 in padding.
  void im2col(RunContext& ctx, const float* image, float* cols) const {
    ctx.pool->parallel_for(depth_, 1, [&](std::int64_t r0, std::int64_t r1, int) {
      for (std::int64_t r = r0; r < r1; ++r) {
        const std::int64_t c = r / (kh_ * kw_), i = (r / kw_) % kh_, j = r % kw_;
        const float* plane = image + c * height_ * width_;
        float* row = cols + r * pixels_;
        for (std::int64_t oh = 0; oh < out_h_; ++oh) {
          const std::int64_t ih = oh * op_.strides[0] - op_.pads[0] + i * op_.dilations[0];
          for (std::int64_t ow = 0; ow < out_w_; ++ow) {
            const std::int64_t iw = ow * op_.strides[1] - op_.pads[1] + j * op_.dilations[1];
            row[oh * out_w_ + ow] = (ih >= 0 && ih < height_ && iw >= 0 && iw < width_) ? plane[ih * width_ + iw] : 0.0f;
          }
        }
      }
    });
  }

  Conv2d op_;
  ValueId x_, w_;
  std::optional<ValueId> bias_;
  ValueId product_;
  std::optional<ElementwiseGroup> epilogue_;
  std::vector<PackedA> packed_weights_;  // per group, per row tile; empty when the weights are not constant
  std::int64_t batch_ = 0, channels_ = 0, height_ = 0, width_ = 0, outputs_ = 0, kh_ = 0, kw_ = 0, out_h_ = 0,
               out_w_ = 0, group_channels_ = 0, depth_ = 0, pixels_ = 0;
  bool pointwise_ = false;
};

/// max_pool2d / avg_pool2d, one plane per task.
template <class Pool>
class PoolKernel final : public Kernel {
 public:
  PoolKernel(const Pool& op, ValueId x, ValueId y, const Shape& x_shape, const Shape& y_shape)
      : op_(op), x_(x), y_(y), x_shape_(x_shape), y_shape_(y_shape) {}
  void run(RunContext& ctx) const override {
    const float* x = ctx.value<const float>(x_);
    float* y = ctx.value<float>(y_);
    const std::int64_t height = x_shape_[2], width = x_shape_[3], out_h = y_shape_[2], out_w = y_shape_[3];
    ctx.pool->parallel_for(x_shape_[0] * x_shape_[1], 1, [&](std::int64_t p0, std::int64_t p1, int) {
      for (std::int64_t plane = p0; plane < p1; ++plane) {
        const float* in = x + plane * height * width;
        float* out = y + plane * out_h * out_w;
        for (std::int64_t oh = 0; oh < out_h; ++oh)
          for (std::int64_t ow = 0; ow < out_w; ++ow) {
            const std::int64_t ih0 = oh * op_.strides[0] - op_.pads[0], iw0 = ow * op_.strides[1] - op_.pads[1];
            if constexpr (std::is_same_v<Pool, MaxPool2d>)
              out[oh * out_w + ow] = window_max(in, ih0, iw0);
            else
              out[oh * out_w + ow] = window_mean(in, ih0, iw0);
          }
      }
    });
  }
  std::string describe() const override { return std::string(Pool::name) + " (direct, one plane per task)"; }

 private:
  /// The maximum of the window whose top-left tap is (ih0, iw0), padding
  /// ignored; NaN when any tap is NaN (-inf when no tap is inside). A flag
  /// carries the NaN instead of a branch per tap, and a window wholly inside
  /// the plane (the common case) skips the bounds checks.
  float window_max(const float* in, std::int64_t ih0, std::int64_t iw0) const {
    const std::int64_t height = x_shape_[2], width = x_shape_[3];
    const std::int64_t kh = op_.kernel[0], kw = op_.kernel[1], dh = op_.dilations[0], dw = op_.dilations[1];
    float acc = -std::numeric_limits<float>::infinity();
    bool nan = false;
    auto tap = [&](float v) {
      nan |= v != v;
      acc = std::max(acc, v);
    };
    if (ih0 >= 0 && iw0 >= 0 && ih0 + (kh - 1) * dh < height && iw0 + (kw - 1) * dw < width) {
      for (std::int64_t i = 0; i < kh; ++i)
        for (std::int64_t j = 0; j < kw; ++j) tap(in[(ih0 + i * dh) * width + iw0 + j * dw]);
    } else {
      for (std::int64_t i = 0; i < kh; ++i) {
        const std::int64_t ih = ih0 + i * dh;
        if (ih < 0 || ih >= height) continue;
        for (std::int64_t j = 0; j < kw; ++j) {
          const std::int64_t iw = iw0 + j * dw;
          if (iw >= 0 && iw < width) tap(in[ih * width + iw]);
        }
      }
    }
    return nan ? std::numeric_limits<float>::quiet_NaN() : acc;
  }

  /// The mean of the window's taps inside the plane (sum in double), over
  /// the whole window when count_include_pad.
  float window_mean(const float* in, std::int64_t ih0, std::int64_t iw0) const {
    const std::int64_t height = x_shape_[2], width = x_shape_[3];
    double sum = 0;
    std::int64_t taps = 0;
    for (std::int64_t i = 0; i < op_.kernel[0]; ++i) {
      const std::int64_t ih = ih0 + i * op_.dilations[0];
      if (ih < 0 || ih >= height) continue;
      for (std::int64_t j = 0; j < op_.kernel[1]; ++j) {
        const std::int64_t iw = iw0 + j * op_.dilations[1];
        if (iw < 0 || iw >= width) continue;
        sum += in[ih * width + iw];
        ++taps;
      }
    }
    const std::int64_t count = op_.count_include_pad ? op_.kernel[0] * op_.kernel[1] : taps;
    return float(sum / double(count));
  }

  Pool op_;
  ValueId x_, y_;
  Shape x_shape_, y_shape_;
};

/// conv2d, optionally with a fused epilogue group over the output viewed as
/// [N, O, H'*W'] (exec/fusion.hpp decides when).
template <>
struct KernelFor<Conv2d> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const Conv2d& op,
                                      std::optional<ElementwiseGroup> epilogue = std::nullopt) {
    std::optional<ValueId> bias;
    if (node.inputs.size() == 3) bias = node.inputs[2];
    return std::make_unique<Conv2dKernel>(op, node.inputs[0], node.inputs[1], bias, node.outputs[0],
                                          ctx.type(node.inputs[0]).shape, ctx.type(node.inputs[1]).shape,
                                          ctx.output_shape(node), ctx.constant(node.inputs[1]), std::move(epilogue));
  }
};

template <class Pool>
struct PoolKernelFor {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const Pool& op) {
    return std::make_unique<PoolKernel<Pool>>(op, node.inputs[0], node.outputs[0], ctx.type(node.inputs[0]).shape,
                                              ctx.output_shape(node));
  }
};
template <> struct KernelFor<MaxPool2d> : PoolKernelFor<MaxPool2d> {};
template <> struct KernelFor<AvgPool2d> : PoolKernelFor<AvgPool2d> {};

}  // namespace rml::exec
