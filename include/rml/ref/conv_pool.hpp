// Reference conv2d and pools: direct loops over NCHW, double accumulation.
#pragma once

#include <limits>

#include "rml/ops/conv_pool.hpp"
#include "rml/ref/common.hpp"

namespace rml::ref {

namespace detail {

/// Calls fn(i, j, ih, iw) for every kernel tap (i, j) of output position
/// (oh, ow) whose input position (ih, iw) is inside the (unpadded) input.
template <class Window, class Fn>
void for_each_tap(const Window& window, std::int64_t height, std::int64_t width, std::int64_t kh,
                  std::int64_t kw, std::int64_t oh, std::int64_t ow, Fn&& fn) {
  const std::int64_t ih0 = oh * window.strides[0] - window.pads[0], iw0 = ow * window.strides[1] - window.pads[1];
  const TapRange rows = taps_inside(ih0, height, kh, window.dilations[0]);
  const TapRange columns = taps_inside(iw0, width, kw, window.dilations[1]);
  for (std::int64_t i = rows.first; i < rows.last; ++i)
    for (std::int64_t j = columns.first; j < columns.last; ++j)
      fn(i, j, ih0 + i * window.dilations[0], iw0 + j * window.dilations[1]);
}

}  // namespace detail

inline void reference(const Conv2d& op, Inputs in, std::span<Tensor> out) {
  const Shape &x = in[0].shape(), &w = in[1].shape(), &y = out[0].shape();
  const std::int64_t channels_per_group = w[1], outputs_per_group = w[0] / op.groups;
  const float* input = in[0].values<float>().data();
  const float* weight = in[1].values<float>().data();
  const float* bias = in.size() == 3 ? in[2].values<float>().data() : nullptr;
  float* result = out[0].values<float>().data();
  for (std::int64_t n = 0; n < y[0]; ++n)
    for (std::int64_t o = 0; o < y[1]; ++o) {
      const std::int64_t group = o / outputs_per_group;
      for (std::int64_t oh = 0; oh < y[2]; ++oh)
        for (std::int64_t ow = 0; ow < y[3]; ++ow) {
          double sum = bias ? bias[o] : 0.0;
          for (std::int64_t c = 0; c < channels_per_group; ++c) {
            const std::int64_t ic = group * channels_per_group + c;
            const float* plane = input + (n * x[1] + ic) * x[2] * x[3];
            const float* kernel = weight + (o * w[1] + c) * w[2] * w[3];
            detail::for_each_tap(op, x[2], x[3], w[2], w[3], oh, ow,
                                 [&](auto i, auto j, auto ih, auto iw) {
                                   sum += double(plane[ih * x[3] + iw]) * kernel[i * w[3] + j];
                                 });
          }
          *result++ = float(sum);
        }
    }
}

template <class Op>
  requires std::same_as<Op, MaxPool2d> || std::same_as<Op, AvgPool2d>
void reference(const Op& op, Inputs in, std::span<Tensor> out) {
  const Shape &x = in[0].shape(), &y = out[0].shape();
  const float* input = in[0].values<float>().data();
  float* result = out[0].values<float>().data();
  for (std::int64_t plane = 0; plane < y[0] * y[1]; ++plane, input += x[2] * x[3])
    for (std::int64_t oh = 0; oh < y[2]; ++oh)
      for (std::int64_t ow = 0; ow < y[3]; ++ow) {
        double acc = std::is_same_v<Op, MaxPool2d> ? -std::numeric_limits<double>::infinity() : 0.0;
        std::int64_t taps = 0;
        detail::for_each_tap(op, x[2], x[3], op.kernel[0], op.kernel[1], oh, ow,
                             [&](auto, auto, auto ih, auto iw) {
                               const double v = input[ih * x[3] + iw];
                               if constexpr (std::is_same_v<Op, MaxPool2d>)
                                 acc = (acc != acc || v != v) ? std::numeric_limits<double>::quiet_NaN()
                                                             : std::max(acc, v);
                               else
                                 acc += v;
                               ++taps;
                             });
        if constexpr (std::is_same_v<Op, AvgPool2d>) {
          const std::int64_t count = op.count_include_pad ? op.kernel[0] * op.kernel[1] : taps;
          acc = acc / double(count);
        }
        *result++ = float(acc);
      }
}

}  // namespace rml::ref
