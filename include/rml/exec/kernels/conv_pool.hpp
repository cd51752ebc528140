// conv2d as a GEMM over columns packed per pixel tile, with bias and a fused
// epilogue per output tile; pools as direct loops.
#pragma once

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>

#include "rml/exec/arena.hpp"
#include "rml/exec/gemm.hpp"
#include "rml/exec/kernels/conv_depthwise.hpp"
#include "rml/exec/kernels/conv_direct.hpp"
#include "rml/exec/kernels/conv_sizes.hpp"
#include "rml/exec/kernels/elementwise.hpp"
#include "rml/exec/simd_math.hpp"

namespace rml::exec {

/// conv2d as a GEMM per image and group: weights [O/g x C/g*kh*kw] times the
/// image's columns [C/g*kh*kw x H'*W'] (im2col). The columns are never built
/// whole: each task takes a tile of output pixels, writes that tile's columns
/// straight into the GEMM's packed panel layout in its own scratch (small
/// enough to stay in L2), multiplies every row tile of the weights with it,
/// then adds the bias and runs the epilogue on the finished tile. Each output
/// element is still one fma chain over (c, i, j) in order, then + bias.
class Conv2dKernel final : public Kernel {
 public:
  static constexpr std::int64_t tile_rows = 96;
  /// Floats of packed columns per task (256 KiB): the tile stays in L2.
  static constexpr std::int64_t tile_floats = 64 * 1024;

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
    nr_ = gemm_detail::kernels().nr;
    // Pixels per task: a whole number of panels, as many as fit in tile_floats (at most 256).
    tile_cols_ = std::clamp<std::int64_t>(tile_floats / std::max<std::int64_t>(depth_, 1) / nr_, 1, 256 / nr_) * nr_;
    tile_offset_ = align_up(std::max(gemm_scratch_bytes(depth_), epilogue_ ? epilogue_->scratch_bytes() : 0));
    thread_scratch_bytes = tile_offset_ + align_up(PackedB::bytes(depth_, tile_cols_));
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
    const std::int64_t per_group = outputs_ / op_.groups;
    const std::int64_t row_tiles = (per_group + tile_rows - 1) / tile_rows;
    const std::int64_t col_tiles = (pixels_ + tile_cols_ - 1) / tile_cols_;
    const std::int64_t tasks = batch_ * op_.groups * col_tiles;
    ctx.pool->parallel_for(tasks, 1, [&](std::int64_t t0, std::int64_t t1, int thread) {
      float* scratch = ctx.scratch_of<float>(thread);
      float* columns = scratch + tile_offset_ / sizeof(float);
      for (std::int64_t task = t0; task < t1; ++task) {
        const std::int64_t image = task / (op_.groups * col_tiles), g = task / col_tiles % op_.groups;
        const std::int64_t p0 = task % col_tiles * tile_cols_, p1 = std::min(p0 + tile_cols_, pixels_);
        const float* input = x + (image * channels_ + g * group_channels_) * height_ * width_;
        const PackedBView b{columns, depth_, p1 - p0, &gemm_detail::kernels()};
        pack_columns(input, p0, p1, columns);
        const std::int64_t first_row = image * outputs_ + g * per_group;  // of y viewed as [N*O, H'*W']
        float* out = y + first_row * pixels_ + p0;
        for (std::int64_t r = 0; r < row_tiles; ++r) {
          const std::int64_t o0 = r * tile_rows, o1 = std::min(o0 + tile_rows, per_group);
          if (packed_weights_.empty())
            gemm(w + g * per_group * depth_, depth_, b, out, pixels_, o0, o1, 0, p1 - p0, scratch);
          else
            gemm(packed_weights_[g * row_tiles + r], b, out, pixels_, 0, p1 - p0);
          if (bias)
            for (std::int64_t o = o0; o < o1; ++o)
              for (std::int64_t p = 0; p < p1 - p0; ++p) out[o * pixels_ + p] += bias[g * per_group + o];
          if (epilogue_) epilogue_->eval(ctx, first_row + o0, first_row + o1, p0, p1, thread);
        }
      }
    });
  }

  std::string describe() const override {
    std::string text = detail::concat("conv2d as GEMM (", outputs_ / op_.groups, "x", depth_, " @ ", depth_, "x",
                                      pixels_, " per image", op_.groups > 1 ? " and group" : "",
                                      ", columns packed per tile of ", tile_cols_, " pixels)");
    if (!packed_weights_.empty()) text += ", weights prepacked";
    if (bias_) text += " + bias";
    if (epilogue_) text += ", epilogue: " + epilogue_->describe();
    return text;
  }

 private:
  /// The columns of output pixels [p0, p1) in packed B layout: row
  /// (c*kh + i)*kw + j holds, per pixel, the input under tap (i, j) of channel
  /// c (0 in the padding); lanes past p1 in the last panel are 0. p0 is a
  /// multiple of the panel width. Copied in runs that stay in one output row
  /// and one panel, with no division inside the loops (they dominated).
  void pack_columns(const float* input, std::int64_t p0, std::int64_t p1, float* dst) const {
    const std::int64_t sh = op_.strides[0], sw = op_.strides[1];
    const std::int64_t first_oh = p0 / out_w_, first_ow = p0 % out_w_;
    std::int64_t c = 0, i = 0, j = 0;  // the tap of row k
    for (std::int64_t k = 0; k < depth_; ++k) {
      const float* plane = input + c * height_ * width_;
      const std::int64_t column_offset = j * op_.dilations[1] - op_.pads[1];  // iw = ow * sw + column_offset
      // Output columns ow with 0 <= ow * sw + column_offset < width: [ow_lo, ow_hi).
      const std::int64_t ow_lo = std::clamp<std::int64_t>(ceil_div(-column_offset, sw), 0, out_w_);
      const std::int64_t ow_hi = std::clamp<std::int64_t>(ceil_div(width_ - column_offset, sw), ow_lo, out_w_);
      std::int64_t oh = first_oh, ow = first_ow, lane = 0;
      float* panel = dst + k * nr_;
      for (std::int64_t p = p0; p < p1;) {
        const std::int64_t run = std::min({out_w_ - ow, nr_ - lane, p1 - p});
        float* out = panel + lane;
        const std::int64_t ih = oh * sh - op_.pads[0] + i * op_.dilations[0];
        if (ih < 0 || ih >= height_) {
          zero_floats(out, run);
        } else {
          const float* row = plane + ih * width_;
          const std::int64_t lo = std::clamp(ow_lo - ow, std::int64_t{0}, run);
          const std::int64_t hi = std::clamp(ow_hi - ow, lo, run);
          zero_floats(out, lo);
          // Indices, not a pointer moved by column_offset first: with a huge
          // left padding that pointer would leave the address space (fuzz
          // finding); (ow + t) * sw + column_offset lies in the row for t in [lo, hi).
          if (sw == 1 && hi > lo)
            copy_floats(out + lo, row + (ow + lo + column_offset), hi - lo);
          else
            for (std::int64_t t = lo; t < hi; ++t) out[t] = row[(ow + t) * sw + column_offset];
          zero_floats(out + hi, run - hi);
        }
        p += run;
        ow += run;
        if (ow == out_w_) ow = 0, ++oh;
        lane += run;
        if (lane == nr_) lane = 0, panel += depth_ * nr_;
      }
      for (std::int64_t t = lane; lane && t < nr_; ++t) panel[t] = 0.0f;  // the last panel's lanes past p1
      if (++j == kw_) j = 0, ++i;
      if (i == kh_) i = 0, ++c;
    }
  }

  // Short copies in fixed 32-byte steps, which compilers emit as vector moves
  // (a loop or a memcpy of variable length was a scalar loop or a call per run).
  static void copy_floats(float* dst, const float* src, std::int64_t n) {
    std::int64_t t = 0;
    for (; t + 8 <= n; t += 8) std::memcpy(dst + t, src + t, 8 * sizeof(float));
    for (; t < n; ++t) dst[t] = src[t];
  }
  static void zero_floats(float* dst, std::int64_t n) {
    std::int64_t t = 0;
    for (; t + 8 <= n; t += 8) std::memset(dst + t, 0, 8 * sizeof(float));
    for (; t < n; ++t) dst[t] = 0.0f;
  }

  Conv2d op_;
  ValueId x_, w_;
  std::optional<ValueId> bias_;
  ValueId product_;
  std::optional<ElementwiseGroup> epilogue_;
  std::vector<PackedA> packed_weights_;  // per group, per row tile; empty when the weights are not constant
  std::int64_t batch_ = 0, channels_ = 0, height_ = 0, width_ = 0, outputs_ = 0, kh_ = 0, kw_ = 0, out_h_ = 0,
               out_w_ = 0, group_channels_ = 0, depth_ = 0, pixels_ = 0;
  std::int64_t nr_ = 0, tile_cols_ = 0;
  std::size_t tile_offset_ = 0;  // bytes into a thread's scratch where its packed columns go
};

/// max_pool2d / avg_pool2d, whole planes per task.
template <class Pool>
class PoolKernel final : public Kernel {
 public:
  PoolKernel(const Pool& op, ValueId x, ValueId y, const Shape& x_shape, const Shape& y_shape)
      : op_(op), x_(x), y_(y), x_shape_(x_shape), y_shape_(y_shape) {}
  void run(RunContext& ctx) const override {
    const float* x = ctx.value<const float>(x_);
    float* y = ctx.value<float>(y_);
    const std::int64_t height = x_shape_[2], width = x_shape_[3], out_h = y_shape_[2], out_w = y_shape_[3];
    // Max pool: the windows wholly inside the plane, rows [row_lo, row_hi) x
    // columns [col_lo, col_hi), skip the bounds checks; the border ones don't.
    // (Plain variables, not structured bindings: clang 14 cannot capture those.)
    std::int64_t row_lo, row_hi, col_lo, col_hi;
    std::tie(row_lo, row_hi) = inside(0, height, out_h);
    std::tie(col_lo, col_hi) = inside(1, width, out_w);
    const Isa isa = active_isa();
    // Tasks of at least kMinTaskFloats input floats: a small pool stays on one worker.
    const std::int64_t grain = std::max<std::int64_t>(1, kMinTaskFloats / std::max<std::int64_t>(height * width, 1));
    const bool stacked = std::is_same_v<Pool, MaxPool2d> && planes_stack(row_lo, row_hi, col_lo, col_hi);
    ctx.pool->parallel_for(x_shape_[0] * x_shape_[1], grain, [&](std::int64_t p0, std::int64_t p1, int) {
      if (stacked)  // one call for all the task's planes
        return simd::max_2x2_stride2(isa, x + p0 * height * width, width, 2 * width, y + p0 * out_h * out_w, out_w,
                                     (p1 - p0) * out_h, out_w);
      for (std::int64_t plane = p0; plane < p1; ++plane) {
        const float* in = x + plane * height * width;
        float* out = y + plane * out_h * out_w;
        if constexpr (std::is_same_v<Pool, MaxPool2d>) max_inside(isa, in, out, row_lo, row_hi, col_lo, col_hi);
        for (std::int64_t oh = 0; oh < out_h; ++oh) {
          const std::int64_t ih0 = oh * op_.strides[0] - op_.pads[0];
          const bool inside_row = std::is_same_v<Pool, MaxPool2d> && oh >= row_lo && oh < row_hi;
          const std::int64_t skip_lo = inside_row ? col_lo : out_w, skip_hi = inside_row ? col_hi : out_w;
          for (std::int64_t ow = 0; ow < out_w; ++ow) {
            if (ow == skip_lo) ow = skip_hi;
            if (ow == out_w) break;
            const std::int64_t iw0 = ow * op_.strides[1] - op_.pads[1];
            if constexpr (std::is_same_v<Pool, MaxPool2d>)
              out[oh * out_w + ow] = window_max(in, ih0, iw0);
            else
              out[oh * out_w + ow] = window_mean(in, ih0, iw0);
          }
        }
      }
    });
  }
  std::string describe() const override { return std::string(Pool::name) + " (direct, planes per task)"; }

 private:
  /// Input floats a task reads at least (a few microseconds of work).
  static constexpr std::int64_t kMinTaskFloats = 8 * 1024;

  /// The outputs along spatial axis `axis` (0: rows, 1: columns) whose
  /// windows lie wholly inside an input of `extent`: [lo, hi).
  std::pair<std::int64_t, std::int64_t> inside(int axis, std::int64_t extent, std::int64_t out_extent) const {
    const std::int64_t stride = op_.strides[axis], pad = op_.pads[axis];
    const std::int64_t span = (op_.kernel[axis] - 1) * op_.dilations[axis];
    const std::int64_t lo = std::min(ceil_div(pad, stride), out_extent);  // first o with o*stride - pad >= 0
    const std::int64_t last = extent - 1 - span + pad;                     // o*stride <= last
    const std::int64_t hi = last < 0 ? lo : std::clamp(last / stride + 1, lo, out_extent);
    return {lo, hi};
  }

  /// Whether every window is a 2x2 one inside the plane, stride 2 both ways,
  /// and the planes are exactly their window rows high: then the window rows
  /// of consecutive planes follow each other at the same step, and the planes
  /// of a task are one run of rows for simd::max_2x2_stride2 (a call per
  /// plane cost a third of the bench cnn's second pool, 7x7 windows a plane).
  bool planes_stack(std::int64_t row_lo, std::int64_t row_hi, std::int64_t col_lo, std::int64_t col_hi) const {
    const std::int64_t out_h = y_shape_[2], out_w = y_shape_[3];
    // (Element by element: an Ints{...} to compare with would allocate on every run.)
    const auto all = [](const Ints& v, std::int64_t x) { return std::all_of(v.begin(), v.end(), [x](auto e) { return e == x; }); };
    return all(op_.kernel, 2) && all(op_.strides, 2) && all(op_.dilations, 1) && row_lo == 0 &&
           row_hi == out_h && col_lo == 0 && col_hi == out_w && op_.pads[0] == 0 && op_.pads[1] == 0 &&
           x_shape_[2] == 2 * out_h;
  }

  /// The max pool's inside windows of one plane: a 2x2 window with
  /// horizontal stride 2 and no horizontal dilation a vector at a time over
  /// all those rows, any other row by row.
  void max_inside(Isa isa, const float* in, float* out, std::int64_t row_lo, std::int64_t row_hi, std::int64_t col_lo,
                  std::int64_t col_hi) const {
    if (row_lo >= row_hi || col_lo >= col_hi) return;
    const std::int64_t width = x_shape_[3], out_w = y_shape_[3];
    if (op_.kernel[0] == 2 && op_.kernel[1] == 2 && op_.strides[1] == 2 && op_.dilations[1] == 1) {
      const float* top = in + (row_lo * op_.strides[0] - op_.pads[0]) * width + col_lo * 2 - op_.pads[1];
      // Inside rows lie within the plane, so a step between two of them fits; with
      // one row there is no step, and a huge stride must not be multiplied out
      // (fuzz finding: a stride of 2^62 over a one-row output overflowed here).
      const std::int64_t rows = row_hi - row_lo, row_step = rows > 1 ? op_.strides[0] * width : 0;
      return simd::max_2x2_stride2(isa, top, op_.dilations[0] * width, row_step, out + row_lo * out_w + col_lo, out_w, rows,
                                   col_hi - col_lo);
    }
    for (std::int64_t oh = row_lo; oh < row_hi; ++oh)
      max_row(in, oh * op_.strides[0] - op_.pads[0], col_lo, col_hi, out + oh * out_w);
  }

  /// out[lo, hi) of one output row whose windows (top row ih0) lie inside the
  /// plane: tap by tap over the whole row (the same tap order per window as
  /// window_max, so the same result, -0 and +0 included), a NaN tap kept by
  /// the compare, made the canonical NaN at the end.
  void max_row(const float* in, std::int64_t ih0, std::int64_t lo, std::int64_t hi, float* out) const {
    const std::int64_t width = x_shape_[3], sw = op_.strides[1];
    if (op_.kernel[0] == 2 && op_.kernel[1] == 2) return max_row_2x2(in, ih0, lo, hi, out);
    std::fill(out + lo, out + hi, -std::numeric_limits<float>::infinity());
    for (std::int64_t i = 0; i < op_.kernel[0]; ++i)
      for (std::int64_t j = 0; j < op_.kernel[1]; ++j) {
        const float* tap = in + (ih0 + i * op_.dilations[0]) * width + j * op_.dilations[1] - op_.pads[1];
        for (std::int64_t ow = lo; ow < hi; ++ow) {
          out[ow] = simd::max_step(out[ow], tap[ow * sw]);
        }
      }
    for (std::int64_t ow = lo; ow < hi; ++ow)
      if (out[ow] != out[ow]) out[ow] = std::numeric_limits<float>::quiet_NaN();
  }

  /// max_row for a 2x2 window: its four taps held in registers, in the same
  /// order (top-left, top-right, bottom-left, bottom-right).
  void max_row_2x2(const float* in, std::int64_t ih0, std::int64_t lo, std::int64_t hi, float* out) const {
    const std::int64_t width = x_shape_[3], sw = op_.strides[1];
    const float* top = in + ih0 * width - op_.pads[1];
    const float* bottom = top + op_.dilations[0] * width;
    const std::int64_t right = op_.dilations[1];
    for (std::int64_t ow = lo; ow < hi; ++ow) {
      const std::int64_t iw = ow * sw;
      out[ow] = simd::max_2x2(top[iw], top[iw + right], bottom[iw], bottom[iw + right]);
    }
  }

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
      const TapRange rows = taps_inside(ih0, height, kh, dh), columns = taps_inside(iw0, width, kw, dw);
      for (std::int64_t i = rows.first; i < rows.last; ++i)
        for (std::int64_t j = columns.first; j < columns.last; ++j) tap(in[(ih0 + i * dh) * width + iw0 + j * dw]);
    }
    return nan ? std::numeric_limits<float>::quiet_NaN() : acc;
  }

  /// The mean of the window's taps inside the plane (sum in double), over
  /// the whole window when count_include_pad.
  float window_mean(const float* in, std::int64_t ih0, std::int64_t iw0) const {
    const std::int64_t height = x_shape_[2], width = x_shape_[3];
    const std::int64_t dh = op_.dilations[0], dw = op_.dilations[1];
    const TapRange rows = taps_inside(ih0, height, op_.kernel[0], dh);
    const TapRange columns = taps_inside(iw0, width, op_.kernel[1], dw);
    double sum = 0;
    for (std::int64_t i = rows.first; i < rows.last; ++i)
      for (std::int64_t j = columns.first; j < columns.last; ++j) sum += in[(ih0 + i * dh) * width + iw0 + j * dw];
    const std::int64_t taps = (rows.last - rows.first) * (columns.last - columns.first);
    const std::int64_t count = op_.count_include_pad ? op_.kernel[0] * op_.kernel[1] : taps;
    return float(sum / double(count));
  }

  Pool op_;
  ValueId x_, y_;
  Shape x_shape_, y_shape_;
};

/// conv2d (depthwise: row fmas per plane; direct when the stride is 1 and the
/// weights constant; else over packed columns), optionally with a fused epilogue group over the output viewed as
/// [N, O, H'*W'] (exec/fusion.hpp decides when).
template <>
struct KernelFor<Conv2d> {
  static std::unique_ptr<Kernel> make(const PlanContext& ctx, const Node& node, const Conv2d& op,
                                      std::optional<ElementwiseGroup> epilogue = std::nullopt) {
    std::optional<ValueId> bias;
    if (node.inputs.size() == 3) bias = node.inputs[2];
    const Tensor* w_constant = ctx.constant(node.inputs[1]);
    if (DepthwiseConv2dKernel::applies(op, ctx.type(node.inputs[0]).shape, ctx.type(node.inputs[1]).shape,
                                       ctx.output_shape(node)))
      return std::make_unique<DepthwiseConv2dKernel>(op, node.inputs[0], node.inputs[1], bias, node.outputs[0],
                                                     ctx.type(node.inputs[0]).shape, ctx.type(node.inputs[1]).shape,
                                                     ctx.output_shape(node), std::move(epilogue));
    if (DirectConv2dKernel::applies(op, w_constant, ctx.type(node.inputs[0]).shape, ctx.output_shape(node)))
      return std::make_unique<DirectConv2dKernel>(op, node.inputs[0], bias, node.outputs[0], ctx.type(node.inputs[0]).shape,
                                                  ctx.type(node.inputs[1]).shape, ctx.output_shape(node), *w_constant,
                                                  std::move(epilogue), ctx.pieces_of(node));
    return std::make_unique<Conv2dKernel>(op, node.inputs[0], node.inputs[1], bias, node.outputs[0],
                                          ctx.type(node.inputs[0]).shape, ctx.type(node.inputs[1]).shape,
                                          ctx.output_shape(node), w_constant, std::move(epilogue));
  }
};

/// Whether KernelFor<Conv2d> runs this f32 conv2d on DirectConv2dKernel (the
/// same tests, in the same order): exec/fusion.hpp may then hand it its input
/// as channel pieces.
inline bool runs_direct_conv(const Graph& graph, const Node& node) {
  const Conv2d* op = get_if<Conv2d>(&node.op);
  if (!op || graph.type(node.inputs[0]).dtype != DType::f32) return false;
  const Value& w = graph.values[node.inputs[1]];
  const Shape &x = graph.type(node.inputs[0]).shape, &y = graph.type(node.outputs[0]).shape;
  return !DepthwiseConv2dKernel::applies(*op, x, w.type.shape, y) &&
         DirectConv2dKernel::applies(*op, w.kind == ValueKind::constant ? &*w.data : nullptr, x, y);
}

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
