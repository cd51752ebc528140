// Pieces that op shape rules share: arity, dtype checks, rank checks.
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include "rml/core/tensor.hpp"
#include "rml/ops/fields.hpp"

namespace rml {

/// How many inputs an op takes: [min, max]; max may be `variadic`.
struct Arity {
  static constexpr std::size_t variadic = std::numeric_limits<std::size_t>::max();
  std::size_t min;
  std::size_t max;
};

using Types = std::vector<TensorType>;
using InputTypes = std::span<const TensorType>;

/// Which element types an op's data inputs accept.
enum class Accepts { f32, any };

inline void require_f32(const TensorType& type, std::size_t input) {
  if (type.dtype != DType::f32)
    fail(ErrorCode::dtype_mismatch, "input ", input, " must be f32, got ", dtype_name(type.dtype));
}

inline void require_accepted(Accepts accepts, const TensorType& type, std::size_t input) {
  if (accepts == Accepts::f32) require_f32(type, input);
}

inline void require_dtype(const TensorType& type, DType dtype, std::size_t input) {
  if (type.dtype != dtype)
    fail(ErrorCode::dtype_mismatch, "input ", input, " must be ", dtype_name(dtype), ", got ", dtype_name(type.dtype));
}

inline void require_same_dtype(InputTypes inputs) {
  for (std::size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i].dtype != inputs[0].dtype)
      fail(ErrorCode::dtype_mismatch, "input ", i, " is ", dtype_name(inputs[i].dtype), " but input 0 is ",
           dtype_name(inputs[0].dtype));
}

inline void require_rank(const TensorType& type, std::size_t rank, std::size_t input) {
  if (type.shape.size() != rank)
    fail(ErrorCode::invalid_shape, "input ", input, " must have rank ", rank, ", got shape ", to_string(type.shape));
}

inline void require_min_rank(const TensorType& type, std::size_t rank, std::size_t input) {
  if (type.shape.size() < rank)
    fail(ErrorCode::invalid_shape, "input ", input, " must have rank at least ", rank, ", got shape ",
         to_string(type.shape));
}

inline void require_length(const Ints& values, std::size_t length, std::string_view attribute) {
  if (values.size() != length)
    fail(ErrorCode::invalid_attribute, "attribute '", attribute, "' needs ", length, " values, got ", values.size());
}

inline void require_positive(const Ints& values, std::string_view attribute) {
  for (auto v : values)
    if (v < 1) fail(ErrorCode::invalid_attribute, "attribute '", attribute, "' must be positive, got ", to_string(values));
}

}  // namespace rml
