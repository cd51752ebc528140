// Depthwise conv2d (one input and one output channel per group), any stride
// and dilation, weights constant or not.
//
// The GEMM paths give a depthwise conv one weight row per group, so five of
// the micro-tile's six rows (seven of eight with AVX-512) multiply padding.
// Here each task takes one (image, channel) plane and copies it once into a
// zero-padded plane split by stride phase: padded element (r, c) goes to
// sub-plane (r % sh, c % sw) at (r / sh, c / sw), each sub-plane Hq x Wq. The
// input under tap (i, j) for output pixel (oh, ow) is then sub-plane
// ((i*dh) % sh, (j*dw) % sw) at (oh + (i*dh) / sh, ow + (j*dw) / sw): for a
// fixed tap, consecutive "virtual pixels" v = oh*Wq + ow read consecutive
// floats, across output rows too. So each tap is one run of vector fmas
// (simd::fma_row) over every virtual pixel of a chunk; virtual pixels with
// ow >= W' read past their row and are dropped when the chunk is copied out.
// For stride 1 this is the direct kernel's padded image (conv_direct.hpp).
//
// Each output element is the fma chain over the taps (i, j) in order from +0,
// padding taps included as fma(w, 0, sum), then + bias: the chain the GEMM
// paths compute for one channel, so every path gives the same bits.
#pragma once

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "rml/exec/arena.hpp"
#include "rml/exec/kernels/conv_sizes.hpp"
#include "rml/exec/kernels/elementwise.hpp"
#include "rml/exec/simd_math.hpp"

namespace rml::exec {

class DepthwiseConv2dKernel final : public Kernel {
 public:
  /// Floats of virtual pixels per chunk (8 KiB of sums): they stay in L1.
  static constexpr std::int64_t chunk_floats = 2048;

  /// One input and one output channel per group, and phase-split planes not
  /// much larger than the input and output planes (padding far wider than
  /// the window, or strides far wider than the plane, are valid; the im2col
  /// path never materialises either).
  static bool applies(const Conv2d& op, const Shape& x_shape, const Shape& w_shape, const Shape& y_shape) {
    if (op.groups < 2 || x_shape[1] != op.groups || w_shape[0] != op.groups || w_shape[1] != 1) return false;
    const std::int64_t padded_h = saturating_add(saturating_add(x_shape[2], op.pads[0]), op.pads[2]);
    const std::int64_t padded_w = saturating_add(saturating_add(x_shape[3], op.pads[1]), op.pads[3]);
    const std::int64_t split_h = saturating_mul(op.strides[0], ceil_div(padded_h, op.strides[0]));
    const std::int64_t split_w = saturating_mul(op.strides[1], ceil_div(padded_w, op.strides[1]));
    return padded_plane_fits(split_h, split_w, x_shape, y_shape);
  }

  /// The epilogue group, if any, is over the output viewed as [N, C, H'*W'].
  DepthwiseConv2dKernel(const Conv2d& op, ValueId x, ValueId w, std::optional<ValueId> bias, ValueId product,
                        const Shape& x_shape, const Shape& w_shape, const Shape& y_shape,
                        std::optional<ElementwiseGroup> epilogue)
      : op_(op), x_(x), w_(w), bias_(bias), product_(product), epilogue_(std::move(epilogue)) {
    batch_ = x_shape[0];
    channels_ = x_shape[1];
    height_ = x_shape[2];
    width_ = x_shape[3];
    kh_ = w_shape[2];
    kw_ = w_shape[3];
    out_h_ = y_shape[2];
    out_w_ = y_shape[3];
    const std::int64_t sh = op.strides[0], sw = op.strides[1];
    padded_h_ = height_ + op.pads[0] + op.pads[2];
    padded_w_ = width_ + op.pads[1] + op.pads[3];
    sub_h_ = ceil_div(padded_h_, sh);
    sub_w_ = ceil_div(padded_w_, sw);
    for (std::int64_t i = 0; i < kh_; ++i)
      for (std::int64_t j = 0; j < kw_; ++j) {
        const std::int64_t r = i * op.dilations[0], c = j * op.dilations[1];
        tap_offset_.push_back(((r % sh * sw + c % sw) * sub_h_ + r / sh) * sub_w_ + c / sw);
      }
    virtual_pixels_ = out_h_ * sub_w_;
    // Zeros after the sub-planes for what the last virtual pixels read past them:
    // the dropped columns reach one sub-plane row beyond the last tap's.
    plane_floats_ = sh * sw * sub_h_ * sub_w_ + sub_w_;
    plane_offset_ = align_up(epilogue_ ? epilogue_->scratch_bytes() : 0);
    sums_offset_ = plane_offset_ + align_up(static_cast<std::size_t>(plane_floats_) * sizeof(float));
    thread_scratch_bytes = sums_offset_ + align_up(static_cast<std::size_t>(chunk_floats) * sizeof(float));
  }

  ValueId target() const { return epilogue_ ? epilogue_->output() : product_; }

  void run(RunContext& ctx) const override {
    const float* x = ctx.value<const float>(x_);
    const float* w = ctx.value<const float>(w_);
    const float* bias = bias_ ? ctx.value<const float>(*bias_) : nullptr;
    float* y = ctx.value<float>(target());
    const std::int64_t pixels = out_h_ * out_w_;
    if (pixels == 0) return;  // an empty output
    const Isa isa = active_isa();
    ctx.pool->parallel_for(batch_ * channels_, 1, [&](std::int64_t t0, std::int64_t t1, int thread) {
      std::byte* scratch = ctx.scratch_of<std::byte>(thread);
      float* plane = reinterpret_cast<float*>(scratch + plane_offset_);
      float* sums = reinterpret_cast<float*>(scratch + sums_offset_);
      for (std::int64_t task = t0; task < t1; ++task) {  // task: n * C + c
        const std::int64_t c = task % channels_;
        split_plane(x + task * height_ * width_, plane);
        const float* taps = w + c * kh_ * kw_;
        float* out = y + task * pixels;
        const float b = bias ? bias[c] : 0.0f;
        for (std::int64_t v0 = 0; v0 < virtual_pixels_; v0 += chunk_floats) {
          const std::int64_t n = std::min(chunk_floats, virtual_pixels_ - v0);
          std::fill_n(sums, n, 0.0f);
          for (std::size_t t = 0; t < tap_offset_.size(); ++t) simd::fma_row(isa, taps[t], plane + tap_offset_[t] + v0, sums, n);
          // The chunk's real pixels (ow < W'), + bias.
          for (std::int64_t v = v0; v < v0 + n;) {
            const std::int64_t oh = v / sub_w_, ow = v % sub_w_;
            const std::int64_t run_end = std::min(v0 + n, (oh + 1) * sub_w_);
            const std::int64_t count = std::min(run_end - v, std::max<std::int64_t>(out_w_ - ow, 0));
            const float* src = sums + (v - v0);
            float* dst = out + oh * out_w_ + ow;
            if (bias)
              for (std::int64_t k = 0; k < count; ++k) dst[k] = src[k] + b;
            else if (count > 0)
              std::memcpy(dst, src, static_cast<std::size_t>(count) * sizeof(float));
            v = run_end;
          }
        }
        if (epilogue_) epilogue_->eval(ctx, task, task + 1, 0, pixels, thread);
      }
    });
  }

  std::string describe() const override {
    std::string text = detail::concat("conv2d depthwise (", channels_, " planes, ", kh_, "x", kw_,
                                      " taps as vector fmas over the padded plane split by stride phase)");
    if (bias_) text += " + bias";
    if (epilogue_) text += ", epilogue: " + epilogue_->describe();
    return text;
  }

 private:
  /// Copies one input plane into the zero-padded sub-planes (and zeroes the slack).
  void split_plane(const float* input, float* split) const {
    const std::int64_t top = op_.pads[0], left = op_.pads[1], sh = op_.strides[0], sw = op_.strides[1];
    std::fill_n(split, plane_floats_, 0.0f);
    for (std::int64_t h = 0; h < height_; ++h) {
      const std::int64_t r = top + h;
      float* rows = split + (r % sh * sw * sub_h_ + r / sh) * sub_w_;  // row r / sh of sub-plane (r % sh, 0)
      const float* src = input + h * width_;
      if (sw == 1) {
        std::memcpy(rows + left, src, static_cast<std::size_t>(width_) * sizeof(float));
        continue;
      }
      // Padded column c = left + col goes to phase c % sw at c / sw, both stepped (no division per element).
      std::int64_t phase = left % sw, at = left / sw;
      for (std::int64_t col = 0; col < width_; ++col) {
        rows[phase * sub_h_ * sub_w_ + at] = src[col];
        if (++phase == sw) phase = 0, ++at;
      }
    }
  }

  Conv2d op_;
  ValueId x_, w_;
  std::optional<ValueId> bias_;
  ValueId product_;
  std::optional<ElementwiseGroup> epilogue_;
  std::vector<std::int64_t> tap_offset_;  // per tap (i, j): where virtual pixel 0 reads it
  std::int64_t batch_ = 0, channels_ = 0, height_ = 0, width_ = 0, kh_ = 0, kw_ = 0, out_h_ = 0, out_w_ = 0;
  std::int64_t padded_h_ = 0, padded_w_ = 0, sub_h_ = 0, sub_w_ = 0, virtual_pixels_ = 0, plane_floats_ = 0;
  std::size_t plane_offset_ = 0, sums_offset_ = 0;  // bytes into a thread's scratch
};

}  // namespace rml::exec
