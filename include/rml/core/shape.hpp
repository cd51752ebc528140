// Static shapes and the arithmetic every shape rule shares.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "rml/core/error.hpp"

namespace rml {

using Shape = std::vector<std::int64_t>;

inline std::string to_string(std::span<const std::int64_t> dims) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < dims.size(); ++i) out << (i ? ", " : "") << dims[i];
  out << ']';
  return out.str();
}

/// a * b for element counts and byte sizes, or an error instead of overflow.
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) fail(ErrorCode::size_overflow, what, ": size overflows 64 bits");
  return product;
}

/// a + b for dimensions and offsets, or an error instead of overflow.
inline std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) fail(ErrorCode::size_overflow, what, ": size overflows 64 bits");
  return sum;
}

/// The most elements a tensor may have: its byte size (8 bytes an element at
/// most) and every offset into it, aligned, then fit in 63 bits with room.
inline constexpr std::int64_t max_elements = std::int64_t(1) << 58;

/// Element count of a shape; rejects negative dimensions, overflow, and
/// counts above max_elements (whose byte sizes would not fit).
inline std::int64_t element_count(std::span<const std::int64_t> dims,
                                  std::string_view what = "shape") {
  bool empty = false;
  for (std::int64_t d : dims) {
    if (d < 0) fail(ErrorCode::invalid_shape, what, ": negative dimension in ", to_string(dims));
    empty |= d == 0;
  }
  if (empty) return 0;  // [2^40, 2^40, 0] is empty, whatever its other dimensions multiply to
  std::int64_t count = 1;
  for (std::int64_t d : dims) count = checked_mul(count, d, what);
  if (count > max_elements)
    fail(ErrorCode::size_overflow, what, ": ", to_string(dims), " has ", count, " elements, more than the 2^58 any tensor may have");
  return count;
}

/// Maps a possibly negative axis onto [0, rank), NumPy style.
inline std::int64_t normalize_axis(std::int64_t axis, std::size_t rank, std::string_view what) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) fail(ErrorCode::invalid_axis, what, ": axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + r : axis;
}

/// Normalised, sorted, duplicate-free axes.
inline std::vector<std::int64_t> normalize_axes(std::span<const std::int64_t> axes,
                                                std::size_t rank, std::string_view what) {
  std::vector<bool> seen(rank, false);
  std::vector<std::int64_t> out;
  for (std::int64_t axis : axes) {
    const std::int64_t a = normalize_axis(axis, rank, what);
    if (seen[a]) fail(ErrorCode::invalid_axis, what, ": axis ", axis, " is repeated");
    seen[a] = true;
  }
  for (std::size_t a = 0; a < rank; ++a)
    if (seen[a]) out.push_back(static_cast<std::int64_t>(a));
  return out;
}

/// NumPy broadcasting of two shapes (right-aligned; 1 stretches).
inline Shape broadcast_shapes(std::span<const std::int64_t> a, std::span<const std::int64_t> b,
                              std::string_view what) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(ErrorCode::invalid_shape, what, ": shapes ", to_string(a), " and ", to_string(b), " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// Row-major strides of a shape, in elements. Only an empty shape ([0, 2^40,
/// 2^40]) has strides beyond 64 bits; nothing is addressed through them, so
/// those are 0 rather than a signed overflow.
inline Shape contiguous_strides(std::span<const std::int64_t> dims) {
  Shape strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;)
    if (__builtin_mul_overflow(strides[i], dims[i], &strides[i - 1])) strides[i - 1] = 0;
  return strides;
}

/// Per-axis element strides of `shape` read as broadcast into `target`
/// (right-aligned; 0 along axes where `shape` is 1 or missing).
inline Shape broadcast_strides(const Shape& target, const Shape& shape) {
  Shape strides(target.size(), 0);
  const Shape own = contiguous_strides(shape);
  const std::size_t lead = target.size() - std::min(target.size(), shape.size());
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1) strides[lead + d] = own[d];
  return strides;
}

}  // namespace rml
