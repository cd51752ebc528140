// The canonical mapping of host element types onto rml's two dtypes:
// floats and booleans become f32, integers become i32.
#pragma once

#include <span>
#include <type_traits>

#include "rml/core/tensor.hpp"

namespace rml {

template <class T>
constexpr DType canonical_dtype() {
  static_assert(std::is_arithmetic_v<T>, "only arithmetic element types map onto rml dtypes");
  return std::is_integral_v<T> && !std::is_same_v<T, bool> ? DType::i32 : DType::f32;
}

/// A tensor of the canonical dtype holding `values`. An integer outside the
/// i32 range is an ExportError naming `what` and the element's position.
template <class T>
Tensor canonical_tensor(Shape shape, std::span<const T> values, std::string_view what = "constant") {
  constexpr DType dtype = canonical_dtype<T>();
  Tensor out(dtype, std::move(shape));
  if (out.elements() != static_cast<std::int64_t>(values.size()))
    throw ExportError(ErrorCode::invalid_shape, detail::concat(what, ": shape ", to_string(out.shape()), " needs ",
                                     out.elements(), " values, got ", values.size()));
  if constexpr (dtype == DType::f32) {
    auto y = out.values<float>();
    for (std::size_t i = 0; i < values.size(); ++i) y[i] = static_cast<float>(values[i]);
  } else {
    auto y = out.values<std::int32_t>();
    for (std::size_t i = 0; i < values.size(); ++i) {
      if constexpr (std::is_unsigned_v<T>) {
        if (values[i] > static_cast<std::make_unsigned_t<std::int32_t>>(INT32_MAX))
          throw ExportError(ErrorCode::dtype_mismatch, detail::concat(what, ": element ", i, " = ", values[i],
                                           " is outside the i32 range"));
        y[i] = static_cast<std::int32_t>(values[i]);
      } else {
        y[i] = canonical_i32(static_cast<std::int64_t>(values[i]),
                             detail::concat(what, ": element ", i));
      }
    }
  }
  return out;
}

}  // namespace rml
