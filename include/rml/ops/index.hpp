// Ops that read by index: gather and top_k.
#pragma once

#include <string_view>
#include <tuple>

#include "rml/ops/rules.hpp"

namespace rml {

/// NumPy take(data, indices, axis): indices are i32, negative ones count from
/// the end, anything outside [-dim, dim) is an error at evaluation.
struct Gather {
  static constexpr std::string_view name = "gather";
  static constexpr std::string_view summary = "take(data, indices, axis); indices in [-dim, dim)";
  static constexpr std::string_view inputs = "data: f32|i32, indices: i32";
  static constexpr std::string_view shape_rule =
      "out = data[:axis] + indices + data[axis+1:]";
  static constexpr Arity arity{2, 2};
  static constexpr bool checks_input_values = true;  // every index, even for an empty output (NumPy's take)
  std::int64_t axis = 0;
  static constexpr auto fields() { return std::tuple{required("axis", &Gather::axis)}; }
  Types infer(InputTypes in) const {
    require_dtype(in[1], DType::i32, 1);
    const Shape& data = in[0].shape;
    const std::int64_t a = normalize_axis(axis, data.size(), "attribute 'axis'");
    if (data[a] == 0 && element_count(in[1].shape) > 0)
      fail(ErrorCode::invalid_shape, "cannot gather from the empty axis ", axis, " of ", to_string(data));
    Shape out(data.begin(), data.begin() + a);
    out.insert(out.end(), in[1].shape.begin(), in[1].shape.end());
    out.insert(out.end(), data.begin() + a + 1, data.end());
    return {{in[0].dtype, out}};
  }
};

/// The k largest entries along the last axis, in descending order, and their
/// i32 indices. Ties go to the lowest index; NaN counts as the largest value.
struct TopK {
  static constexpr std::string_view name = "top_k";
  static constexpr std::string_view summary =
      "k largest along the last axis, descending; ties to the lowest index; NaN largest";
  static constexpr std::string_view inputs = "x: f32|i32";
  static constexpr std::string_view shape_rule =
      "values: T and indices: i32, both x with the last axis = k (0 <= k <= last dim)";
  static constexpr Arity arity{1, 1};
  std::int64_t k = 1;
  static constexpr auto fields() { return std::tuple{required("k", &TopK::k)}; }
  Types infer(InputTypes in) const {
    require_min_rank(in[0], 1, 0);
    Shape out = in[0].shape;
    if (k < 0 || k > out.back())
      fail(ErrorCode::index_out_of_range, "attribute 'k' = ", k, " is outside [0, ", out.back(), "] for shape ",
           to_string(out));
    out.back() = k;
    return {{in[0].dtype, out}, {DType::i32, out}};
  }
};

}  // namespace rml
