// Stride-1 conv2d with constant weights, without im2col.
//
// The input is copied once per run into a zero-padded image [C/g, Hp, Wp].
// On it, output pixel (oh, ow) under tap (c, i, j) reads element
// (c*Hp + oh + i*dh)*Wp + ow + j*dw: for a fixed tap, consecutive "virtual
// pixels" v = oh*Wp + ow read consecutive floats, across output rows too. So
// the GEMM micro-kernel reads its B rows straight from the image at per-tap
// offsets (gemm_detail::Kernels::micro_gathered): no column matrix is built or
// packed. But the virtual pixels with ow >= W', where a window runs off the
// row, are computed and dropped: (kw-1)*dw of every Wp (7 % of a 3x3 conv over
// 28 columns, 12.5 % over 14). So where they are small (kShiftedCopiesFloats),
// the image is instead copied kw times, copy j holding padded columns j*dw ..
// j*dw + W' - 1 ([kw, C/g, Hp, W']), tap (c, i, j) reads copy j, and every
// virtual pixel is an output pixel. Larger copies would leave L2, and the
// copying would cost more than the waste (bench unet's 96-channel 32x32 conv).
// There, when W' is a multiple of the panel width, each panel is instead nr
// output pixels of one row, read at that row's virtual pixels: no waste, no copy.
//
// Each panel of micro tiles, once its last k-block is in, goes from L1 to the
// output's real pixels, plus the bias and through a relu epilogue in the same
// vectors (simd::store_conv_tile); any other epilogue group runs over the
// task's output pixels after its tiles are stored.
//
// With few taps (C/g*kh*kw <= kMaxTaps: a 3x3 conv over up to 16 channels, a
// 1x1 over up to 144) a micro tile does few fma steps for its stores; there each
// run of output pixels loads its tap vectors once and computes every output
// channel from them (simd::conv_taps), no tile, from column-shifted copies
// (copying so few channels costs little, and runs then span whole rows).
// A 3-wide window whose output rows are as wide as the input's (a "same"
// conv) needs no copies with AVX-512: one image padded above and below
// only, rows W wide, and each tap's loads masked where its window hangs off
// a row (simd::ConvColumns): a third of the writes, and no wasted columns.
//
// Each output element is the same fma chain over (c, i, j) in order, then
// + bias, as the im2col path computes: the two give the same bits.
#pragma once

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "rml/exec/arena.hpp"
#include "rml/exec/kernels/conv_sizes.hpp"
#include "rml/exec/gemm.hpp"
#include "rml/exec/kernels/elementwise.hpp"

namespace rml::exec {

class DirectConv2dKernel final : public Kernel {
 public:
  /// Floats of a task's output tile (rows x virtual pixels, 128 KiB): it stays in L2.
  static constexpr std::int64_t tile_floats = 32 * 1024;
  /// Taps per k-block: deeper than the GEMM's (256), so the output tile makes
  /// fewer trips through L2 (one for up to 1024 taps). Measured on the bench
  /// unet (864 and 288 taps, AMD Zen 4): 432 or 1024 taps 3-4 % faster than
  /// 256, 128 taps 3 % slower.
  static constexpr std::int64_t kKC = 1024;

  /// Floats of an image's kw shifted copies at most (256 KiB): more would leave L2.
  static constexpr std::int64_t kShiftedCopiesFloats = 64 * 1024;
  /// The most taps (C/g * kh * kw) taken by simd::conv_taps rather than micro
  /// tiles. Measured, one thread, against micro tiles: 27 taps 1.6x faster,
  /// 72 taps 1.17x; at 144 (3x3 over 16 channels) 1.07-1.16x for 32 to 128
  /// outputs over 14x14 to 28x28 (the bench clip's conv at batch 16: 1.16x),
  /// but 0.95x for the bench cnn's 32 outputs over 14x14; at 288 and 864
  /// taps within 5 % either way.
  static constexpr std::int64_t kMaxTaps = 144;
  /// The widest rows read with masked edges: their masks take 24 bytes a
  /// column (plan time), and wider rows waste little in a padded image.
  static constexpr std::int64_t kMaxMaskedWidth = 1024;
  /// Multiply-adds below which a conv's images are not split between workers.
  static constexpr std::int64_t kMinSplitMacs = std::int64_t{2} << 20;
  /// Multiply-adds one more copied float must save: a vector fma does 16 or
  /// 32 a cycle, copying short rows takes about a cycle a float (measured:
  /// the bench cnn's 32-output conv over 14 columns was slower with copies).
  static constexpr std::int64_t kFmasPerCopiedFloat = 32;

  /// Stride 1 and constant weights, and a padded image not much larger than the
  /// input and output planes: padding far wider than the window is valid (most of
  /// the image is then zeros), and the im2col path never materialises it.
  static bool applies(const Conv2d& op, const Tensor* w_constant, const Shape& x_shape, const Shape& y_shape) {
    if (!w_constant || op.strides != Ints{1, 1}) return false;
    const std::int64_t padded_h = saturating_add(saturating_add(x_shape[2], op.pads[0]), op.pads[2]);
    const std::int64_t padded_w = saturating_add(saturating_add(x_shape[3], op.pads[1]), op.pads[3]);
    return padded_plane_fits(padded_h, padded_w, x_shape, y_shape);
  }

  /// The epilogue group, if any, is over the output viewed as [N, O, H'*W'].
  /// `pieces`, if any, are where the input's channels come from (in order):
  /// x itself is then never written.
  DirectConv2dKernel(const Conv2d& op, ValueId x, std::optional<ValueId> bias, ValueId product, const Shape& x_shape,
                     const Shape& w_shape, const Shape& y_shape, const Tensor& w,
                     std::optional<ElementwiseGroup> epilogue, const std::vector<ChannelPiece>& pieces = {})
      : op_(op), bias_(bias), product_(product), epilogue_(std::move(epilogue)) {
    pieces_ = pieces.empty() ? std::vector<ChannelPiece>{{x, x_shape[1], 1, 1}} : pieces;
    for (std::size_t s = 0; s < pieces_.size(); ++s)
      for (std::int64_t c = 0; c < pieces_[s].channels; ++c) channel_source_.push_back({s, c});
    if (static_cast<std::int64_t>(channel_source_.size()) != x_shape[1])
      fail(ErrorCode::internal, "conv2d: its input's channel pieces hold ", channel_source_.size(), " channels, not ",
           x_shape[1]);
    batch_ = x_shape[0];
    channels_ = x_shape[1] / op.groups;
    height_ = x_shape[2];
    width_ = x_shape[3];
    outputs_ = w_shape[0] / op.groups;
    out_h_ = y_shape[2];
    out_w_ = y_shape[3];
    padded_h_ = height_ + op.pads[0] + op.pads[2];
    const std::int64_t kh = w_shape[2], kw = w_shape[3], dw = op.dilations[1];
    const std::int64_t padded_w = width_ + op.pads[1] + op.pads[3];
    depth_ = channels_ * kh * kw;
    masked_edges_ = depth_ <= kMaxTaps && kw == 3 && out_w_ == width_ && out_w_ <= kMaxMaskedWidth &&
                    outputs_ > 4 && simd::masked_row_edges(active_isa());
    copies_ = !masked_edges_ && shifted_copies_pay(kw, kh, padded_w) ? kw : 1;
    row_w_ = copies_ > 1 || masked_edges_ ? out_w_ : padded_w;
    // Floats before the planes: where a masked tap's row would start left of the first.
    lead_ = masked_edges_ ? op.pads[1] : 0;
    virtual_pixels_ = out_h_ * row_w_;
    const std::int64_t mr = gemm_detail::kernels().mr;
    nr_ = gemm_detail::kernels().nr;
    // Zeros after the image for what the last row's virtual pixels read past it: in one
    // image the wasted columns reach (kw-1)*dw beyond the row; the last panel up to nr more.
    image_floats_ = lead_ + copies_ * channels_ * padded_h_ * row_w_ + (copies_ > 1 || masked_edges_ ? 0 : (kw - 1) * dw) + nr_;
    shared_scratch_bytes = align_up(static_cast<std::size_t>(batch_ * op.groups * image_floats_) * sizeof(float));
    for (std::int64_t c = 0; c < channels_; ++c)
      for (std::int64_t i = 0; i < kh; ++i)
        for (std::int64_t j = 0; j < kw; ++j) {
          const std::int64_t copy = copies_ > 1 ? j : 0;
          const std::int64_t column = masked_edges_ ? j * dw - op.pads[1] : copies_ > 1 ? 0 : j * dw;
          offsets_.push_back(lead_ + ((copy * channels_ + c) * padded_h_ + i * op.dilations[0]) * row_w_ + column);
        }
    if (masked_edges_) column_bits_ = simd::conv_column_bits(out_w_, {-op.pads[1], dw - op.pads[1], 2 * dw - op.pads[1]});
    relu_in_store_ = epilogue_ && epilogue_->activation() == Relu::name;
    tile_offset_ = align_up(epilogue_ ? epilogue_->scratch_bytes() : 0);
    few_taps_ = depth_ <= kMaxTaps;
    // Few taps, no padding, one image as it is: conv_taps reads it in place (its
    // masked loads stay inside the runs of real pixels), nothing is copied.
    in_place_ = few_taps_ && copies_ == 1 && op.pads == Ints{0, 0, 0, 0} && pieces_.size() == 1 &&
                pieces_[0].scale_h == 1 && pieces_[0].scale_w == 1;
    if (in_place_) shared_scratch_bytes = 0;
    // Runs whose last vector is mostly idle share it with other images' (AVX-512):
    // each image's run is then its whole plane, and nothing but bias and relu follows.
    // (A tail over half a vector would be one image a vector: nothing to share.)
    const std::int64_t plane = out_h_ * out_w_, tail = plane % simd::kTailLanes;
    const bool shares = few_taps_ && row_w_ == out_w_ && op.groups == 1 && batch_ > 1 && outputs_ > 4 &&
                        plane > simd::kTailLanes && tail <= simd::kTailLanes / 2 && (!epilogue_ || relu_in_store_) &&
                        simd::packs_image_tails(active_isa());
    tail_ = shares ? tail : 0;
    if (few_taps_) {  // no tile
      for (std::int64_t g = 0; g < op.groups; ++g) {
        const std::vector<float> packed =
            simd::pack_conv_taps(w.values<float>().data() + g * outputs_ * depth_, outputs_, depth_);
        tap_weights_.insert(tap_weights_.end(), packed.begin(), packed.end());
      }
      tile_cols_ = std::clamp<std::int64_t>(tile_floats / std::max<std::int64_t>(outputs_, 1) / nr_, 1, 1024 / nr_) * nr_;
      thread_scratch_bytes = tile_offset_;
      return;
    }
    // Weights: per group, per k-block, mr-row micro-panels (rows past O/g zero).
    padded_rows_ = (outputs_ + mr - 1) / mr * mr;
    packed_weights_.resize(static_cast<std::size_t>(op.groups * padded_rows_ * depth_));
    float* dst = packed_weights_.data();
    for (std::int64_t g = 0; g < op.groups; ++g)
      for (std::int64_t k0 = 0; k0 < depth_; k0 += kKC) {
        const std::int64_t kc = std::min(kKC, depth_ - k0);
        gemm_detail::pack_a(w.values<float>().data() + g * outputs_ * depth_ + k0, depth_, outputs_, kc, dst, mr);
        dst += padded_rows_ * kc;
      }
    tile_cols_ = std::clamp<std::int64_t>(tile_floats / std::max(padded_rows_, mr) / nr_, 1, 1024 / nr_) * nr_;
    whole_panel_rows_ = copies_ == 1 && row_w_ != out_w_ && out_w_ % nr_ == 0;
    thread_scratch_bytes = tile_offset_ + align_up(static_cast<std::size_t>(padded_rows_ * tile_cols_) * sizeof(float));
  }

  ValueId target() const { return epilogue_ ? epilogue_->output() : product_; }

  void run(RunContext& ctx) const override {
    const float* bias = bias_ ? ctx.value<const float>(*bias_) : nullptr;
    float* images = reinterpret_cast<float*>(ctx.shared_scratch);
    const std::int64_t groups = op_.groups;
    if (batch_ == 0 || virtual_pixels_ == 0 || outputs_ == 0) return;  // an empty output
    auto pad_planes = [&](std::int64_t p0, std::int64_t p1) {  // planes p: image p / channels_, channel p % channels_
      for (std::int64_t p = p0; p < p1; ++p) {
        const std::int64_t image = p / channels_, c = p % channels_;
        // Image n * groups + g's channel c is the input's channel g * channels_ + c.
        const auto [s, local] = channel_source_[static_cast<std::size_t>(image % groups * channels_ + c)];
        const ChannelPiece& piece = pieces_[s];
        const std::int64_t plane = height_ / piece.scale_h * (width_ / piece.scale_w);
        const float* input = ctx.value<const float>(piece.value) + (image / groups * piece.channels + local) * plane;
        pad_channel(input, piece.scale_h, piece.scale_w, images + image * image_floats_, c);
      }
    };
    // Tiles of up to tile_cols_ pixels, narrower when that leaves a worker
    // without one (more, smaller tiles re-read more rows of the image: the
    // bench unet's 96->32 conv took 310 us on two threads with four tiles a
    // worker, 290 with two, 257 with one; 398 on one thread).
    // A conv under kMinSplitMacs stays one task an image: a second worker
    // would pull the image across cores for less work than that costs.
    const std::int64_t images_count = batch_ * groups;
    const std::int64_t wanted = images_count * outputs_ * depth_ * virtual_pixels_ >= kMinSplitMacs ? ctx.pool->size() : 1;
    // A task's pixels: virtual ones, or output ones where panels are whole rows;
    // not the tails that images share (run_tails).
    const std::int64_t pixels = (whole_panel_rows_ ? out_h_ * out_w_ : virtual_pixels_) - tail_;
    const std::int64_t per_image = std::max((pixels + tile_cols_ - 1) / tile_cols_, (wanted + images_count - 1) / images_count);
    const std::int64_t share = (pixels + per_image - 1) / per_image;
    const std::int64_t width = std::min(tile_cols_, (share + nr_ - 1) / nr_ * nr_);
    const std::int64_t tiles = (pixels + width - 1) / width;
    // What the taps read: the padded images, or the input itself.
    const float* source = in_place_ ? ctx.value<const float>(pieces_[0].value) : images;
    const std::int64_t image_floats = in_place_ ? channels_ * height_ * width_ : image_floats_;
    auto multiply_tile = [&](std::int64_t task, int thread) {  // task: image * tiles + tile
      const std::int64_t image = task / tiles, v0 = task % tiles * width;  // image: n * groups + g
      const std::int64_t v1 = std::min(v0 + width, pixels), g = image % groups;
      // Output rows of y viewed as [N*O, H'*W']: image (n*groups + g) has rows image * O/g on.
      float* out = ctx.value<float>(target()) + image * outputs_ * out_h_ * out_w_;
      const float* group_bias = bias ? bias + g * outputs_ : nullptr;
      if (few_taps_)
        multiply_taps(source + image * image_floats, g, v0, v1, group_bias, out);
      else
        multiply(source + image * image_floats, g, v0, v1, ctx.scratch_of<float>(thread) + tile_offset_ / sizeof(float),
                 group_bias, out);
      if (epilogue_ && !relu_in_store_) {
        const auto [p0, p1] = whole_panel_rows_ ? std::pair{v0, v1} : output_pixels(v0, v1);
        if (p0 < p1) epilogue_->eval(ctx, image * outputs_, (image + 1) * outputs_, p0, p1, thread);
      }
    };
    if (images_count >= 2 * ctx.pool->size()) {
      // Enough images for every worker: each pads an image and multiplies it
      // at once, while its planes are in that core's L2 (padding all images
      // first left them in L3, or in the other core's cache).
      ctx.pool->parallel_for(images_count, 1, [&](std::int64_t i0, std::int64_t i1, int thread) {
        for (std::int64_t image = i0; image < i1; ++image) {
          if (!in_place_) pad_planes(image * channels_, (image + 1) * channels_);
          for (std::int64_t task = image * tiles; task < (image + 1) * tiles; ++task) multiply_tile(task, thread);
        }
      });
      run_tails(ctx, source, image_floats, bias);
      return;
    }
    // Otherwise padded planes a channel at a time on every worker (with one
    // image, the padding would otherwise run on one thread while the others
    // wait), then the tiles.
    if (!in_place_)
      ctx.pool->parallel_for(images_count * channels_,
                             std::max<std::int64_t>(1, 8192 / std::max<std::int64_t>(padded_h_ * row_w_, 1)),
                             [&](std::int64_t p0, std::int64_t p1, int) { pad_planes(p0, p1); });
    ctx.pool->parallel_for(images_count * tiles, 1, [&](std::int64_t t0, std::int64_t t1, int thread) {
      for (std::int64_t task = t0; task < t1; ++task) multiply_tile(task, thread);
    });
    run_tails(ctx, source, image_floats, bias);
  }

  std::string describe() const override { return describe_product() + describe_input(); }

 private:
  /// Where the input comes from, when not one value as it is.
  std::string describe_input() const {
    const auto upsampled = std::count_if(pieces_.begin(), pieces_.end(),
                                         [](const ChannelPiece& p) { return p.scale_h * p.scale_w > 1; });
    if (pieces_.size() == 1 && upsampled == 0) return "";
    return detail::concat(", input padded from ", pieces_.size(), pieces_.size() == 1 ? " value" : " values",
                          upsampled ? detail::concat(" (", upsampled, " upsampled)") : "", ", not written out");
  }

  std::string describe_product() const {
    if (few_taps_)
      return detail::concat("conv2d direct, few taps (", outputs_, outputs_ == 1 ? " output" : " outputs", " from ",
                            depth_, " taps over ", virtual_pixels_, " pixels of ",
                            copies_ > 1 ? detail::concat(copies_, " column-shifted copies of ") : "",
                            in_place_        ? "the input, read in place"
                            : masked_edges_ ? "the image padded above and below, rows' edges masked"
                                            : "the padded image",
                            op_.groups > 1 ? ", per group" : "",
                            tail_ ? detail::concat("; each image's last ", tail_, " in a vector with ", simd::kTailLanes / tail_ - 1,
                                                   " other images'")
                                  : "",
                            ")", bias_ ? " + bias" : "", relu_in_store_ ? ", relu as it stores" : "",
                            epilogue_ && !relu_in_store_ ? ", epilogue: " + epilogue_->describe() : "");
    std::string text = detail::concat("conv2d direct (", outputs_, "x", depth_, " @ ", depth_, "x",
                                      whole_panel_rows_ ? out_h_ * out_w_ : virtual_pixels_, " read in place from ",
                                      copies_ > 1 ? detail::concat(copies_, " column-shifted copies of ") : "",
                                      "the padded image", op_.groups > 1 ? ", per group" : "",
                                      whole_panel_rows_ ? ", whole panels a row" : "", "), weights prepacked");
    if (bias_) text += " + bias";
    if (relu_in_store_) text += ", relu as it stores";
    else if (epilogue_) text += ", epilogue: " + epilogue_->describe();
    return text;
  }

  /// Whether kw shifted copies pay: they fit in L2, and the wasted columns'
  /// multiply-adds they save outweigh writing kw - 1 more copies.
  bool shifted_copies_pay(std::int64_t kw, std::int64_t kh, std::int64_t padded_w) const {
    const std::int64_t plane = saturating_mul(padded_h_, out_w_);
    if (kw < 2 || saturating_mul(saturating_mul(kw, channels_), plane) > kShiftedCopiesFloats) return false;
    if (depth_ <= kMaxTaps) return true;  // few channels to copy, and whole rows of vectors
    // Both sides saturate: a graph may declare shapes whose products overflow.
    const std::int64_t saved = saturating_mul(saturating_mul((padded_w - out_w_) * out_h_, outputs_),
                                              saturating_mul(channels_ * kh, kw));
    return saved >= kFmasPerCopiedFloat * (kw - 1) * channels_ * plane;
  }

  /// Writes channel c of one image (its plane `input`, which is upsampled
  /// scale_h x scale_w) into the image's padded planes (or its kw shifted
  /// copies), padding zeroed; the last channel also zeroes the slack after
  /// the planes. Each float is written once (simd::pad_plane: a vector of a
  /// row at a time, measured 3x faster than a fill, copy and fill per row on
  /// the bench cnn's 14-float rows).
  void pad_channel(const float* input, std::int64_t scale_h, std::int64_t scale_w, float* image, std::int64_t c) const {
    const std::int64_t top = op_.pads[0], plane = padded_h_ * row_w_;
    const Isa isa = active_isa();
    for (std::int64_t j = 0; j < copies_; ++j) {
      // Copy j's column w is padded column w + j*dw: input column w + shift, where inside [first, last).
      // Rows with masked edges are the input's.
      const std::int64_t shift = masked_edges_ ? 0 : j * op_.dilations[1] - op_.pads[1];
      const std::int64_t first = std::clamp<std::int64_t>(-shift, 0, row_w_);
      const std::int64_t last = std::clamp<std::int64_t>(width_ - shift, first, row_w_);
      float* dst = image + lead_ + (j * channels_ + c) * plane;
      if (scale_h == 1 && scale_w == 1)
        simd::pad_plane(isa, input + shift, width_, height_, top, first, last, dst, row_w_, padded_h_);
      else
        pad_upsampled_plane(input, scale_h, scale_w, shift, first, last, dst);
    }
    if (c + 1 == channels_) {
      const std::int64_t planes_end = lead_ + copies_ * channels_ * plane;
      std::fill(image, image + lead_, 0.0f);
      std::fill(image + planes_end, image + image_floats_, 0.0f);
    }
  }

  /// pad_plane's work for a plane upsampled scale_h x scale_w (nearest) on
  /// the way: padded row h is input row (h - top) / scale_h, its column w
  /// (first <= w < last) input column (w + shift) / scale_w. A row is built
  /// once and copied to the rows repeating it.
  void pad_upsampled_plane(const float* input, std::int64_t scale_h, std::int64_t scale_w, std::int64_t shift,
                           std::int64_t first, std::int64_t last, float* dst) const {
    const std::int64_t top = op_.pads[0], source_w = width_ / scale_w;
    const Isa isa = active_isa();
    for (std::int64_t h = 0; h < padded_h_; ++h) {
      float* row = dst + h * row_w_;
      const std::int64_t r = h - top;
      if (r < 0 || r >= height_) {
        std::fill_n(row, row_w_, 0.0f);
      } else if (r % scale_h != 0 && h > 0) {
        std::copy_n(row - row_w_, row_w_, row);  // the row above reads the same input row
      } else {
        const float* source = input + r / scale_h * source_w;
        std::fill(row, row + first, 0.0f);
        std::int64_t w = first, u = (first + shift) / scale_w, phase = (first + shift) % scale_w;
        if (scale_w == 2) {  // the common case: vectors of pairs, from an even input column on
          if (phase == 1 && w < last) row[w++] = source[u++];
          simd::repeat_pairs(isa, source + u, row + w, last - w);
        } else {
          for (; w < last; ++w) {
            row[w] = source[u];
            if (++phase == scale_w) phase = 0, ++u;
          }
        }
        std::fill(row + last, row + row_w_, 0.0f);
      }
    }
  }

  /// f(v, n, p) for each run of virtual pixels [v, v + n) in [v0, v1) that
  /// are output pixels [p, p + n): up to W' of each output row's row_w_, at
  /// oh * W' + ow; one run for the whole range when rows have no waste.
  template <class F>
  void for_each_output_run(std::int64_t v0, std::int64_t v1, F f) const {
    if (row_w_ == out_w_) return v0 < v1 ? f(v0, v1 - v0, v0) : void();
    for (std::int64_t v = v0; v < v1;) {
      const std::int64_t oh = v / row_w_, ow = v % row_w_;
      const std::int64_t row_end = std::min(v1, (oh + 1) * row_w_);
      const std::int64_t n = std::min(row_end - v, std::max<std::int64_t>(out_w_ - ow, 0));
      if (n > 0) f(v, n, oh * out_w_ + ow);
      v = row_end;
    }
  }

  /// The output pixels of virtual pixels [v0, v1) as segments of a tile
  /// starting at v0. Returns how many it wrote.
  int segments_of(std::int64_t v0, std::int64_t v1, simd::ConvSegment* segments) const {
    int count = 0;
    for_each_output_run(v0, v1, [&](std::int64_t v, std::int64_t n, std::int64_t p) {
      segments[count++] = {v - v0, n, p};
    });
    return count;
  }

  /// The output pixels [p0, p1) that virtual pixels [v0, v1) cover (empty if none).
  std::pair<std::int64_t, std::int64_t> output_pixels(std::int64_t v0, std::int64_t v1) const {
    const auto to_pixel = [&](std::int64_t v) {  // the first output pixel at or after v
      const std::int64_t oh = v / row_w_, ow = v % row_w_;
      return ow < out_w_ ? oh * out_w_ + ow : (oh + 1) * out_w_;
    };
    return {to_pixel(v0), to_pixel(v1)};
  }

  /// Output channels x virtual pixels [v0, v1) of one image: sum over k of
  /// w[g][o][k] * image[offsets[k] + v], k-block by k-block into the tile's
  /// micro tiles; after the last k-block each panel's real pixels are stored
  /// (plus bias, relu if fused) to `out`. With whole_panel_rows_, [v0, v1)
  /// are output pixels and each panel nr of them within one row.
  void multiply(const float* image, std::int64_t g, std::int64_t v0, std::int64_t v1, float* tile, const float* bias,
                float* out) const {
    const gemm_detail::Kernels& kernels = gemm_detail::kernels();
    const Isa isa = active_isa();
    const std::int64_t panels = (v1 - v0 + nr_ - 1) / nr_;
    const float* a = packed_weights_.data() + g * padded_rows_ * depth_;
    if (depth_ == 0) std::fill_n(tile, padded_rows_ * tile_cols_, 0.0f);  // no input channels: sums of nothing
    simd::ConvSegment segments[gemm_detail::kMaxNR + 1];                   // a panel spans at most nr rows
    const std::int64_t k_blocks = std::max<std::int64_t>((depth_ + kKC - 1) / kKC, 1);  // one even when empty
    for (std::int64_t block = 0; block < k_blocks; ++block) {
      const std::int64_t k0 = block * kKC, kc = std::min(kKC, depth_ - k0);
      for (std::int64_t q = 0; q < panels; ++q) {
        const std::int64_t first = v0 + q * nr_;  // the panel's first pixel
        const std::int64_t virtual_first = whole_panel_rows_ ? first / out_w_ * row_w_ + first % out_w_ : first;
        for (std::int64_t r = 0; r < padded_rows_ && kc > 0; r += kernels.mr)
          kernels.micro_gathered(kc, a + r * kc, image + virtual_first, offsets_.data() + k0,
                                 tile + r * tile_cols_ + q * nr_, tile_cols_, k0 == 0);
        // The panel's micro tiles, all rows at once: read back straight after
        // its stores, a micro tile's unaligned lanes would stall on them.
        if (block + 1 == k_blocks) {
          const std::int64_t last = std::min(first + nr_, v1);
          const int count =
              whole_panel_rows_ ? (segments[0] = {0, last - first, first}, 1) : segments_of(first, last, segments);
          simd::store_conv_tile(isa, tile + q * nr_, tile_cols_, outputs_, segments, count, bias, relu_in_store_, out,
                                out_h_ * out_w_);
        }
      }
      a += padded_rows_ * kc;
    }
  }

  /// With tail_: each image's last tail_ pixels, kTailLanes / tail_ images a vector
  /// (simd::conv_taps_tails), once every image is padded.
  void run_tails(RunContext& ctx, const float* source, std::int64_t image_floats, const float* bias) const {
    if (tail_ == 0) return;
    const std::int64_t plane = out_h_ * out_w_, first = plane - tail_, per_vector = simd::kTailLanes / tail_;
    const std::uint64_t* bits = masked_edges_ ? column_bits_.data() + first % out_w_ * 3 : nullptr;
    const float* weights = tap_weights_.data();
    float* out = ctx.value<float>(target());
    ctx.pool->parallel_for((batch_ + per_vector - 1) / per_vector, 1, [&](std::int64_t v0, std::int64_t v1, int) {
      for (std::int64_t v = v0; v < v1; ++v) {
        const float* images[simd::kTailLanes];
        float* outs[simd::kTailLanes];
        const int count = static_cast<int>(std::min(per_vector, batch_ - v * per_vector));
        for (int s = 0; s < count; ++s) {
          const std::int64_t image = v * per_vector + s;
          images[s] = source + image * image_floats + first;
          outs[s] = out + image * outputs_ * plane + first;
        }
        simd::conv_taps_tails(active_isa(), images, count, offsets_.data(), depth_, weights, bias, relu_in_store_,
                              bits, outputs_, outs, plane, tail_);
      }
    });
  }

  /// multiply() with few taps: every output channel of each run of output
  /// pixels from its taps' vectors, straight to `out` (simd::conv_taps).
  void multiply_taps(const float* image, std::int64_t g, std::int64_t v0, std::int64_t v1, const float* bias,
                     float* out) const {
    const float* weights = tap_weights_.data() + g * (tap_weights_.size() / op_.groups);
    const Isa isa = active_isa();
    for_each_output_run(v0, v1, [&](std::int64_t v, std::int64_t n, std::int64_t p) {
      const simd::ConvColumns columns{column_bits_.data(), out_w_, v % std::max<std::int64_t>(out_w_, 1)};
      simd::conv_taps(isa, image + v, offsets_.data(), depth_, weights, bias, relu_in_store_,
                      masked_edges_ ? &columns : nullptr, outputs_, out + p, out_h_ * out_w_, n);
    });
  }

  Conv2d op_;
  std::vector<ChannelPiece> pieces_;  // where the input's channels come from, in order
  std::vector<std::pair<std::size_t, std::int64_t>> channel_source_;  // per input channel: (piece, its channel there)
  std::optional<ValueId> bias_;
  ValueId product_;
  std::optional<ElementwiseGroup> epilogue_;
  std::vector<float> packed_weights_;    // per group, per k-block, mr-row panels
  std::vector<float> tap_weights_;       // with few taps instead: per group, simd::pack_conv_taps' layout
  std::vector<std::int64_t> offsets_;    // per tap (c, i, j): where its row starts in the image (or copies)
  std::int64_t batch_ = 0, channels_ = 0, height_ = 0, width_ = 0, outputs_ = 0, out_h_ = 0, out_w_ = 0;
  std::int64_t padded_h_ = 0, depth_ = 0, virtual_pixels_ = 0, padded_rows_ = 0;
  std::int64_t copies_ = 1, row_w_ = 0;  // kw shifted copies W' wide, or one padded image Wp wide
  std::int64_t lead_ = 0;                // floats before the planes (masked_edges_)
  std::int64_t nr_ = 0, tile_cols_ = 0, image_floats_ = 0;
  std::size_t tile_offset_ = 0;  // bytes into a thread's scratch where its output tile goes
  bool relu_in_store_ = false;   // the epilogue is one relu, applied as tiles are stored
  bool few_taps_ = false;        // depth_ <= kMaxTaps: simd::conv_taps, no micro tiles
  bool in_place_ = false;        // few taps and no padding: the input read as it is, no padded copy
  std::int64_t tail_ = 0;        // few taps: each plane's last pixels, shared with other images' in a vector (run_tails)
  // Few taps, a 3-wide window, W' = W: one image W wide padded above and
  // below, its taps' loads masked at the rows' edges (column_bits_).
  bool masked_edges_ = false;
  std::vector<std::uint64_t> column_bits_;  // simd::ConvColumns::bits
  // Micro tiles over output rows of whole panels (W' a multiple of nr, no
  // copies): a panel is nr pixels of one row, never the wasted columns.
  bool whole_panel_rows_ = false;
};

}  // namespace rml::exec
