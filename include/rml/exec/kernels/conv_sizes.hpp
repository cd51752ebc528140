// Size arithmetic the convolution kernels share. Attributes may make a padded
// copy of a plane astronomically larger than the tensors while the conv stays
// valid (padding 2^62, a stride past the plane), so sizes saturate instead of
// wrapping, and a kernel that builds such a copy checks that it is small.
#pragma once

#include <cstdint>
#include <limits>

#include "rml/core/shape.hpp"

namespace rml::exec {

/// ceil(a / b) for b > 0, without forming a + b - 1: a stride may be near INT64_MAX.
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b > 0 ? 1 : 0); }

inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<std::int64_t>::max() : sum;
}
inline std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  std::int64_t product;
  return __builtin_mul_overflow(a, b, &product) ? std::numeric_limits<std::int64_t>::max() : product;
}

/// True when a padded plane of `rows` x `columns` floats is not much larger
/// than the conv's input and output planes (x and y are NCHW).
inline bool padded_plane_fits(std::int64_t rows, std::int64_t columns, const Shape& x_shape, const Shape& y_shape) {
  const std::int64_t planes = saturating_add(saturating_mul(x_shape[2], x_shape[3]), saturating_mul(y_shape[2], y_shape[3]));
  return saturating_mul(rows, columns) <= saturating_add(saturating_mul(4, planes), 4096);
}

}  // namespace rml::exec
