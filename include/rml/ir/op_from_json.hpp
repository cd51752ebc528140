// Op attributes from the JSON of a graph file, generated from each op's field
// table. Reading needs only the strict JSON reader (ir/json_strict.hpp);
// writing attributes is in ir/op_json.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "rml/ir/json_strict.hpp"
#include "rml/registry.hpp"

namespace rml {

namespace detail {

/// JSON has no infinity or NaN, so a float attribute that is not finite (a pad
/// value of -inf before a max) is written as one of these strings.
inline constexpr std::array<std::pair<std::string_view, double>, 3> non_finite_spellings{
    {{"inf", std::numeric_limits<double>::infinity()},
     {"-inf", -std::numeric_limits<double>::infinity()},
     {"nan", std::numeric_limits<double>::quiet_NaN()}}};

template <class T>
T attribute_from_json(const json::Value& j, std::string_view attribute) {
  auto bad = [&](std::string_view expected) {
    fail(ErrorCode::invalid_attribute, "attribute '", attribute, "' must be ", expected, ", got ", j.dump());
  };
  if constexpr (std::is_same_v<T, std::int64_t>) {
    if (!j.is_number_integer()) bad("an integer");
    if (j.is_number_unsigned() && j.as_uint64() > std::uint64_t(INT64_MAX)) bad("an int64");
    return j.as_int64();
  } else if constexpr (std::is_same_v<T, double>) {
    if (j.is_string())
      for (const auto& [spelling, value] : non_finite_spellings)
        if (j.as_string() == spelling) return value;
    if (!j.is_number()) bad("a number, \"inf\", \"-inf\" or \"nan\"");
    return j.as_double();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) bad("true or false");
    return j.as_bool();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string()) bad("a string");
    return j.as_string();
  } else if constexpr (std::is_same_v<T, Ints>) {
    if (!j.is_array()) bad("a list of integers");
    Ints out;
    for (const json::Value& e : j) out.push_back(attribute_from_json<std::int64_t>(e, attribute));
    return out;
  } else if constexpr (std::is_same_v<T, DType>) {
    if (!j.is_string()) bad("\"f32\" or \"i32\"");
    return parse_dtype(j.as_string());
  } else if constexpr (std::is_same_v<T, std::optional<double>>) {
    if (j.is_null()) return std::nullopt;
    return attribute_from_json<double>(j, attribute);
  }
}

/// `attrs` is an object or null (no attributes).
template <class Op>
Op parse_attributes(const json::Value& attrs) {
  Op op{};
  std::size_t known = 0;
  for_each_field<Op>([&](const auto& field) {
    using T = typename std::decay_t<decltype(field)>::value_type;
    const json::Value* value = attrs.find(field.name);
    if (!value) {
      if (field.required) fail(ErrorCode::invalid_attribute, "missing attribute '", field.name, "'");
      return;
    }
    ++known;
    op.*field.member = attribute_from_json<T>(*value, field.name);
  });
  if (known != attrs.size()) {
    for (const std::string& key : attrs.keys()) {
      bool declared = false;
      for_each_field<Op>([&](const auto& field) { declared = declared || field.name == key; });
      if (!declared) fail(ErrorCode::invalid_attribute, "unknown attribute '", key, "'");
    }
  }
  return op;
}

}  // namespace detail

/// The op named `name` with attributes from a JSON object (or null: none).
/// Unknown ops, unknown or missing attributes and ill-typed values are errors
/// naming them.
inline AnyOp op_from_json(std::string_view name, const json::Value& attrs) {
  AnyOp op = Registry::make(name);
  if (!attrs.is_null() && !attrs.is_object())
    fail(ErrorCode::invalid_attribute, "op '", name, "': attributes must be a JSON object");
  try {
    return visit_op(
        [&](const auto& o) -> AnyOp { return as_any_op(detail::parse_attributes<std::decay_t<decltype(o)>>(attrs)); },
        op);
  } catch (...) {
    rethrow_with_context("op '", name, "'");
  }
}

}  // namespace rml
