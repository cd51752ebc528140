// 2-D convolution and pooling over NCHW tensors.
#pragma once

#include <string_view>
#include <tuple>

#include "rml/ops/rules.hpp"

namespace rml {

/// Window geometry shared by conv2d and the pools: `strides`, four-sided
/// `pads` [top, left, bottom, right] and `dilations`, read off the op.
template <class Op>
void check_window(const Op& op) {
  require_length(op.strides, 2, "strides");
  require_positive(op.strides, "strides");
  require_length(op.pads, 4, "pads");
  for (auto p : op.pads)
    if (p < 0) fail(ErrorCode::invalid_attribute, "attribute 'pads' must be non-negative, got ", to_string(op.pads));
  require_length(op.dilations, 2, "dilations");
  require_positive(op.dilations, "dilations");
}

/// Output size along spatial axis `axis` (0 = H, 1 = W) for a kernel extent.
template <class Op>
std::int64_t window_output_size(const Op& op, std::int64_t input, std::int64_t kernel, int axis) {
  // A conv weight's spatial size is a shape, not an attribute: it may be 0, and kernel - 1 would
  // make the extent negative (fuzz_op finding).
  if (kernel < 1) fail(ErrorCode::invalid_shape, "window of size ", kernel, " on spatial axis ", axis, " is empty");
  const std::int64_t padded =
      checked_add(checked_add(input, op.pads[axis], "padded input"), op.pads[axis + 2], "padded input");
  const std::int64_t extent = checked_add(checked_mul(op.dilations[axis], kernel - 1, "window extent"), 1, "window extent");
  if (extent > padded)
    fail(ErrorCode::invalid_shape, "window of extent ", extent, " does not fit the padded input of size ", padded,
         " on spatial axis ", axis);
  return (padded - extent) / op.strides[axis] + 1;
}

/// x [N, C, H, W] * w [O, C/groups, kh, kw] (+ bias [O]) -> [N, O, H', W'].
struct Conv2d {
  static constexpr std::string_view name = "conv2d";
  static constexpr std::string_view summary =
      "2-D cross-correlation, NCHW input, OIHW weight, optional bias, groups";
  static constexpr std::string_view inputs = "x: f32 [N,C,H,W], w: f32 [O,C/groups,kh,kw], bias?: f32 [O]";
  static constexpr std::string_view shape_rule =
      "H' = (H + top + bottom - (dh*(kh-1)+1)) / sh + 1, likewise W'; O divisible by groups";
  static constexpr Arity arity{2, 3};
  Ints strides{1, 1};
  Ints pads{0, 0, 0, 0};
  Ints dilations{1, 1};
  std::int64_t groups = 1;
  static constexpr auto fields() {
    return std::tuple{optional("strides", &Conv2d::strides), optional("pads", &Conv2d::pads),
                      optional("dilations", &Conv2d::dilations), optional("groups", &Conv2d::groups)};
  }
  Types infer(InputTypes in) const {
    check_window(*this);
    for (std::size_t i = 0; i < in.size(); ++i) require_f32(in[i], i);
    require_rank(in[0], 4, 0);
    require_rank(in[1], 4, 1);
    const Shape &x = in[0].shape, &w = in[1].shape;
    if (groups < 1) fail(ErrorCode::invalid_attribute, "attribute 'groups' must be positive, got ", groups);
    if (x[1] % groups != 0 || w[0] % groups != 0)
      fail(ErrorCode::invalid_attribute, "groups = ", groups, " must divide the input channels ", x[1], " and output channels ", w[0]);
    const std::int64_t expected_channels = checked_mul(w[1], groups, "weight channels x groups");
    if (expected_channels != x[1])
      fail(ErrorCode::invalid_shape, "weight ", to_string(w), " expects ", expected_channels, " input channels, input ",
           to_string(x), " has ", x[1]);
    if (in.size() == 3 && in[2].shape != Shape{w[0]})
      fail(ErrorCode::invalid_shape, "bias must have shape [", w[0], "], got ", to_string(in[2].shape));
    return {{DType::f32,
             {x[0], w[0], window_output_size(*this, x[2], w[2], 0), window_output_size(*this, x[3], w[3], 1)}}};
  }
};

/// The shape rule both pools share.
template <class Pool>
Types pool_infer(const Pool& op, InputTypes in) {
  check_window(op);
  require_length(op.kernel, 2, "kernel");
  require_positive(op.kernel, "kernel");
  require_f32(in[0], 0);
  require_rank(in[0], 4, 0);
  // A window lying wholly in padding would have no input to pool.
  for (int axis = 0; axis < 2; ++axis) {
    const std::int64_t extent =
        checked_add(checked_mul(op.dilations[axis], op.kernel[axis] - 1, "window extent"), 1, "window extent");
    if (op.pads[axis] >= extent || op.pads[axis + 2] >= extent)
      fail(ErrorCode::invalid_attribute, "attribute 'pads' ", to_string(op.pads), " must be smaller than the window extent ", extent,
           " on spatial axis ", axis);
  }
  checked_mul(op.kernel[0], op.kernel[1], "window size");  // avg_pool2d's count_include_pad divisor
  const Shape& x = in[0].shape;
  return {{DType::f32,
           {x[0], x[1], window_output_size(op, x[2], op.kernel[0], 0), window_output_size(op, x[3], op.kernel[1], 1)}}};
}

/// The taps [first, last) of a window along one axis whose input positions
/// `start + i * dilation` lie inside [0, size): kernels loop over these, so a
/// window of 10^12 taps, nearly all padding, costs only its real taps. The
/// taps keep their order, so sums and maxima keep their bits.
struct TapRange {
  std::int64_t first, last;
};
inline TapRange taps_inside(std::int64_t start, std::int64_t size, std::int64_t taps, std::int64_t dilation) {
  const std::int64_t first = start >= 0 ? 0 : std::min(taps, (-start - 1) / dilation + 1);
  const std::int64_t last = start >= size ? 0 : std::min(taps, (size - 1 - start) / dilation + 1);
  return {first, std::max(first, last)};
}

inline constexpr std::string_view pool_shape_rule =
    "[N, C, H', W'], H' = (H + top + bottom - (dh*(kh-1)+1)) / sh + 1, likewise W'";

struct MaxPool2d {
  static constexpr std::string_view name = "max_pool2d";
  static constexpr std::string_view summary = "window maximum (padding ignored); NaN propagates";
  static constexpr std::string_view inputs = "x: f32 [N,C,H,W]";
  static constexpr std::string_view shape_rule = pool_shape_rule;
  static constexpr Arity arity{1, 1};
  Ints kernel;
  Ints strides;
  Ints pads{0, 0, 0, 0};
  Ints dilations{1, 1};
  static constexpr auto fields() {
    return std::tuple{required("kernel", &MaxPool2d::kernel), required("strides", &MaxPool2d::strides),
                      optional("pads", &MaxPool2d::pads), optional("dilations", &MaxPool2d::dilations)};
  }
  Types infer(InputTypes in) const { return pool_infer(*this, in); }
};

struct AvgPool2d {
  static constexpr std::string_view name = "avg_pool2d";
  static constexpr std::string_view summary = "window mean; padding counted only when count_include_pad";
  static constexpr std::string_view inputs = "x: f32 [N,C,H,W]";
  static constexpr std::string_view shape_rule = pool_shape_rule;
  static constexpr Arity arity{1, 1};
  Ints kernel;
  Ints strides;
  Ints pads{0, 0, 0, 0};
  Ints dilations{1, 1};
  bool count_include_pad = false;
  static constexpr auto fields() {
    return std::tuple{required("kernel", &AvgPool2d::kernel), required("strides", &AvgPool2d::strides),
                      optional("pads", &AvgPool2d::pads), optional("dilations", &AvgPool2d::dilations),
                      optional("count_include_pad", &AvgPool2d::count_include_pad)};
  }
  Types infer(InputTypes in) const { return pool_infer(*this, in); }
};

}  // namespace rml
