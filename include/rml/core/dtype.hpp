// The IR's two element types and the canonical mapping onto them.
#pragma once

#include <cstdint>
#include <string_view>

#include "rml/core/error.hpp"

namespace rml {

/// rml-graph has exactly two element types. Floats and booleans become f32,
/// integers become i32 (see `canonical_*` below).
enum class DType : std::uint8_t { f32, i32 };

constexpr std::string_view dtype_name(DType dtype) {
  return dtype == DType::f32 ? "f32" : "i32";
}

constexpr std::size_t dtype_size(DType) { return 4; }

inline DType parse_dtype(std::string_view name) {
  if (name == "f32") return DType::f32;
  if (name == "i32") return DType::i32;
  fail(ErrorCode::dtype_mismatch, "unknown dtype '", name, "' (rml-graph has f32 and i32)");
}

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() { return DType::f32; }
template <>
constexpr DType dtype_of<std::int32_t>() { return DType::i32; }

/// Canonical integer conversion: anything outside the i32 range is an error,
/// never a silent wrap.
inline std::int32_t canonical_i32(std::int64_t value, std::string_view what) {
  if (value < INT32_MIN || value > INT32_MAX)
    throw ExportError(ErrorCode::dtype_mismatch, detail::concat(what, ": integer ", value, " is outside the i32 range"));
  return static_cast<std::int32_t>(value);
}

/// Calls `fn(T{})` with T the C++ element type of `dtype`.
template <class Fn>
decltype(auto) visit_dtype(DType dtype, Fn&& fn) {
  if (dtype == DType::f32) return fn(float{});
  return fn(std::int32_t{});
}

}  // namespace rml
