// Shared helpers of the op suites: run one op through its shape rule and
// reference kernel, build small tensors, and compare results element by
// element against hand-computed literals.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "rml/ir/op_json.hpp"
#include "rml/ref/evaluate.hpp"

namespace op_test {

using rml::DType;
using rml::Shape;
using rml::Tensor;

inline constexpr float inf = std::numeric_limits<float>::infinity();
inline constexpr float qnan = std::numeric_limits<float>::quiet_NaN();
inline constexpr std::int32_t i32_max = std::numeric_limits<std::int32_t>::max();
inline constexpr std::int32_t i32_min = std::numeric_limits<std::int32_t>::min();
inline constexpr std::int64_t i64_max = std::numeric_limits<std::int64_t>::max();
inline constexpr std::int64_t i64_min = std::numeric_limits<std::int64_t>::min();

inline Tensor f32(Shape shape, std::vector<float> values) {
  return Tensor::from<float>(std::move(shape), values);
}
inline Tensor i32(Shape shape, std::vector<std::int32_t> values) {
  return Tensor::from<std::int32_t>(std::move(shape), values);
}

/// All outputs of `op` applied to `inputs` (shape rule, then reference kernel).
inline std::vector<Tensor> run_all(const rml::AnyOp& op, const std::vector<Tensor>& inputs) {
  std::vector<const Tensor*> pointers;
  for (const Tensor& t : inputs) pointers.push_back(&t);
  return rml::evaluate_op(op, pointers);
}

/// The single output of `op` applied to `inputs`.
inline Tensor run(const rml::AnyOp& op, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outputs = run_all(op, inputs);
  REQUIRE(outputs.size() == 1);
  return std::move(outputs[0]);
}

/// An op by name with JSON attributes, as a file would spell it.
inline rml::AnyOp op(std::string_view name, const rml::Json& attributes = nullptr) {
  return rml::op_from_json(name, attributes);
}

/// Checks dtype, shape and element count; false (after reporting) if any differ,
/// so one bad result does not abort the rest of the test case.
inline bool check_type(const Tensor& t, DType dtype, const Shape& shape, std::size_t count) {
  CHECK(std::string(rml::dtype_name(t.dtype())) == std::string(rml::dtype_name(dtype)));
  CHECK(rml::to_string(t.shape()) == rml::to_string(shape));
  CHECK(static_cast<std::size_t>(t.elements()) == count);
  return t.dtype() == dtype && t.shape() == shape &&
         static_cast<std::size_t>(t.elements()) == count;
}

/// Shape and dtype f32, and every element equal to `expected` (NaN matches NaN).
inline void check_f32(const Tensor& t, const Shape& shape, const std::vector<float>& expected) {
  if (!check_type(t, DType::f32, shape, expected.size())) return;
  const auto got = t.values<float>();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("element ", i, ": got ", got[i], ", expected ", expected[i]);
    if (std::isnan(expected[i]))
      CHECK(std::isnan(got[i]));
    else
      CHECK(got[i] == expected[i]);
  }
}

/// Shape and dtype i32, and every element equal to `expected`.
inline void check_i32(const Tensor& t, const Shape& shape,
                      const std::vector<std::int32_t>& expected) {
  if (!check_type(t, DType::i32, shape, expected.size())) return;
  const auto got = t.values<std::int32_t>();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("element ", i, ": got ", got[i], ", expected ", expected[i]);
    CHECK(got[i] == expected[i]);
  }
}

/// Shape and dtype f32, and every element within relative 1e-6 of `expected`;
/// infinities and NaN must match exactly.
inline void check_near(const Tensor& t, const Shape& shape, const std::vector<float>& expected) {
  if (!check_type(t, DType::f32, shape, expected.size())) return;
  const auto got = t.values<float>();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("element ", i, ": got ", got[i], ", expected ", expected[i]);
    if (std::isnan(expected[i]))
      CHECK(std::isnan(got[i]));
    else if (std::isinf(expected[i]))
      CHECK(got[i] == expected[i]);
    else
      CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-6));
  }
}

/// The sign bits of a tensor's elements (to tell -0.0 from +0.0).
inline std::vector<bool> sign_bits(const Tensor& t) {
  std::vector<bool> out;
  for (float v : t.values<float>()) out.push_back(std::signbit(v));
  return out;
}

}  // namespace op_test
