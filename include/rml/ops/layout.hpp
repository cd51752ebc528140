// Ops that move or copy elements without arithmetic: reshape, transpose,
// broadcast_to, slice, concat, pad.
#pragma once

#include <algorithm>
#include <cmath>
#include <string_view>
#include <tuple>

#include "rml/ops/rules.hpp"

namespace rml {

/// Same elements in row-major order, new shape. One entry may be -1
/// (inferred from the element count), as in NumPy.
struct Reshape {
  static constexpr std::string_view name = "reshape";
  static constexpr std::string_view summary = "same elements, new shape (one dimension may be -1)";
  static constexpr std::string_view inputs = "x: f32|i32";
  static constexpr std::string_view shape_rule = "out = shape with -1 resolved; element counts equal";
  static constexpr Arity arity{1, 1};
  Ints shape;
  static constexpr auto fields() { return std::tuple{required("shape", &Reshape::shape)}; }

  Shape resolve(const Shape& input) const {
    const std::int64_t count = element_count(input);
    Shape out = shape, given;
    int inferred = -1;
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (out[i] == -1) {
        if (inferred >= 0) fail(ErrorCode::invalid_attribute, "attribute 'shape' ", to_string(shape), " has more than one -1");
        inferred = static_cast<int>(i);
      } else if (out[i] < 0) {
        fail(ErrorCode::invalid_attribute, "attribute 'shape' ", to_string(shape), " has a negative dimension");
      } else {
        given.push_back(out[i]);
      }
    }
    const std::int64_t known = element_count(given, "attribute 'shape'");
    if (inferred >= 0) {
      if (known == 0 || count % known != 0)
        fail(ErrorCode::invalid_shape, "cannot reshape ", to_string(input), " to ", to_string(shape));
      out[inferred] = count / known;
    } else if (known != count) {
      fail(ErrorCode::invalid_shape, "cannot reshape ", to_string(input), " (", count, " elements) to ", to_string(shape),
           " (", known, " elements)");
    }
    return out;
  }
  Types infer(InputTypes in) const { return {{in[0].dtype, resolve(in[0].shape)}}; }
};

/// out.shape[i] = x.shape[perm[i]].
struct Transpose {
  static constexpr std::string_view name = "transpose";
  static constexpr std::string_view summary = "permute axes: out axis i is input axis perm[i]";
  static constexpr std::string_view inputs = "x: f32|i32";
  static constexpr std::string_view shape_rule = "out[i] = x[perm[i]]; perm a permutation of 0..rank-1";
  static constexpr Arity arity{1, 1};
  Ints perm;
  static constexpr auto fields() { return std::tuple{required("perm", &Transpose::perm)}; }
  Types infer(InputTypes in) const {
    const Shape& x = in[0].shape;
    if (perm.size() != x.size())
      fail(ErrorCode::invalid_attribute, "attribute 'perm' ", to_string(perm), " does not match rank ", x.size());
    std::vector<bool> seen(x.size(), false);
    Shape out(x.size());
    for (std::size_t i = 0; i < perm.size(); ++i) {
      if (perm[i] < 0 || perm[i] >= std::int64_t(x.size()) || seen[perm[i]])
        fail(ErrorCode::invalid_attribute, "attribute 'perm' ", to_string(perm), " is not a permutation of 0..", x.size() - 1);
      seen[perm[i]] = true;
      out[i] = x[perm[i]];
    }
    return {{in[0].dtype, out}};
  }
};

/// NumPy broadcast_to: x is right-aligned against `shape`; its dimensions
/// must equal the target's or be 1.
struct BroadcastTo {
  static constexpr std::string_view name = "broadcast_to";
  static constexpr std::string_view summary = "repeat size-1 (and missing leading) axes up to `shape`";
  static constexpr std::string_view inputs = "x: f32|i32";
  static constexpr std::string_view shape_rule = "out = shape; each x dim (right-aligned) equals it or is 1";
  static constexpr Arity arity{1, 1};
  Ints shape;
  static constexpr auto fields() { return std::tuple{required("shape", &BroadcastTo::shape)}; }
  Types infer(InputTypes in) const {
    const Shape& x = in[0].shape;
    element_count(shape, "attribute 'shape'");
    if (x.size() > shape.size())
      fail(ErrorCode::invalid_shape, "cannot broadcast ", to_string(x), " to the lower-rank ", to_string(shape));
    const std::size_t lead = shape.size() - x.size();
    for (std::size_t i = 0; i < x.size(); ++i)
      if (x[i] != 1 && x[i] != shape[lead + i])
        fail(ErrorCode::invalid_shape, "cannot broadcast ", to_string(x), " to ", to_string(shape));
    return {{in[0].dtype, shape}};
  }
};

/// NumPy basic slicing per listed axis: x[start:end:step], indices negative
/// from the end and clamped; steps may be negative but not zero.
struct Slice {
  static constexpr std::string_view name = "slice";
  static constexpr std::string_view summary =
      "x[start:end:step] on each listed axis (NumPy clamping, negative indices and steps)";
  static constexpr std::string_view inputs = "x: f32|i32";
  static constexpr std::string_view shape_rule =
      "out[axis] = max(0, ceil((end' - start') / step)) after clamping; other axes unchanged";
  static constexpr Arity arity{1, 1};
  Ints axes, starts, ends, steps;
  static constexpr auto fields() {
    return std::tuple{required("axes", &Slice::axes), required("starts", &Slice::starts),
                      required("ends", &Slice::ends), optional("steps", &Slice::steps)};
  }

  struct Range {
    std::int64_t start, step, count;
  };
  /// Start, step and length of the slice along each axis of `x`.
  std::vector<Range> ranges(const Shape& x) const {
    require_length(starts, axes.size(), "starts");
    require_length(ends, axes.size(), "ends");
    if (!steps.empty()) require_length(steps, axes.size(), "steps");
    std::vector<Range> out(x.size());
    for (std::size_t a = 0; a < x.size(); ++a) out[a] = {0, 1, x[a]};
    std::vector<bool> seen(x.size(), false);
    for (std::size_t i = 0; i < axes.size(); ++i) {
      const std::int64_t axis = normalize_axis(axes[i], x.size(), "attribute 'axes'");
      if (seen[axis]) fail(ErrorCode::invalid_axis, "attribute 'axes' repeats axis ", axes[i]);
      seen[axis] = true;
      // NumPy clamps steps to +-INT64_MAX; that also keeps -step from overflowing.
      const std::int64_t step = std::max(steps.empty() ? 1 : steps[i], -INT64_MAX);
      if (step == 0) fail(ErrorCode::invalid_attribute, "attribute 'steps' has a zero step");
      const std::int64_t dim = x[axis];
      auto clamp = [&](std::int64_t index, std::int64_t lo, std::int64_t hi) {
        if (index < 0) index = index < -dim ? lo : index + dim;  // saturating, no overflow
        return std::clamp(index, lo, hi);
      };
      // NumPy: positive steps clamp to [0, dim], negative ones to [-1, dim-1].
      const std::int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? dim : dim - 1;
      const std::int64_t start = clamp(starts[i], lo, hi), end = clamp(ends[i], lo, hi);
      const std::int64_t span = step > 0 ? end - start : start - end;
      const std::int64_t magnitude = step > 0 ? step : -step;
      out[axis] = {start, step, span <= 0 ? 0 : 1 + (span - 1) / magnitude};
    }
    return out;
  }
  Types infer(InputTypes in) const {
    Shape out;
    for (const Range& r : ranges(in[0].shape)) out.push_back(r.count);
    return {{in[0].dtype, out}};
  }
};

/// Joins inputs along `axis`; all other dimensions must agree.
struct Concat {
  static constexpr std::string_view name = "concat";
  static constexpr std::string_view summary = "join inputs along `axis`";
  static constexpr std::string_view inputs = "x0, x1, ...: T (one or more)";
  static constexpr std::string_view shape_rule = "out[axis] = sum of inputs' axis; other dims equal";
  static constexpr Arity arity{1, Arity::variadic};
  std::int64_t axis = 0;
  static constexpr auto fields() { return std::tuple{required("axis", &Concat::axis)}; }
  Types infer(InputTypes in) const {
    require_same_dtype(in);
    const std::size_t rank = in[0].shape.size();
    const std::int64_t a = normalize_axis(axis, rank, "attribute 'axis'");
    Shape out = in[0].shape;
    for (std::size_t i = 1; i < in.size(); ++i) {
      const Shape& s = in[i].shape;
      bool compatible = s.size() == rank;
      for (std::size_t d = 0; compatible && d < rank; ++d)
        compatible = d == std::size_t(a) || s[d] == out[d];
      if (!compatible)
        fail(ErrorCode::invalid_shape, "input ", i, " has shape ", to_string(s), ", incompatible with ",
             to_string(in[0].shape), " for concatenation on axis ", axis);
      out[a] = checked_add(out[a], s[a], "concatenated axis");
    }
    return {{in[0].dtype, out}};
  }
};

/// Constant padding. `pads` = [begin_0, ..., begin_{r-1}, end_0, ..., end_{r-1}]
/// (ONNX order), all non-negative.
struct Pad {
  static constexpr std::string_view name = "pad";
  static constexpr std::string_view summary = "surround x with `value`; pads = begins then ends per axis";
  static constexpr std::string_view inputs = "x: f32|i32";
  static constexpr std::string_view shape_rule = "out[i] = x[i] + pads[i] + pads[rank + i]";
  static constexpr Arity arity{1, 1};
  Ints pads;
  double value = 0.0;
  static constexpr auto fields() {
    return std::tuple{required("pads", &Pad::pads), optional("value", &Pad::value)};
  }
  Types infer(InputTypes in) const {
    const Shape& x = in[0].shape;
    require_length(pads, 2 * x.size(), "pads");
    Shape out = x;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (pads[i] < 0 || pads[x.size() + i] < 0)
        fail(ErrorCode::invalid_attribute, "attribute 'pads' ", to_string(pads), " is negative (cropping is a slice)");
      out[i] = checked_add(checked_add(out[i], pads[i], "padded shape"), pads[x.size() + i], "padded shape");
    }
    const bool fits_i32 = value >= -2147483648.0 && value <= 2147483647.0 && value == std::trunc(value);
    if (in[0].dtype == DType::i32 && !fits_i32)
      fail(ErrorCode::invalid_attribute, "attribute 'value' ", value, " is not an i32, as the i32 input needs");
    return {{in[0].dtype, out}};
  }
};

}  // namespace rml
