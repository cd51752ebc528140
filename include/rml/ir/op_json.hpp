// Op attributes to and from JSON, generated from each op's field table.
#pragma once

#include <array>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "rml/registry.hpp"

namespace rml {

using Json = nlohmann::json;

namespace detail {

/// JSON has no infinity or NaN, so a float attribute that is not finite (a pad
/// value of -inf before a max) is written as one of these strings.
inline constexpr std::array<std::pair<std::string_view, double>, 3> non_finite_spellings{
    {{"inf", std::numeric_limits<double>::infinity()},
     {"-inf", -std::numeric_limits<double>::infinity()},
     {"nan", std::numeric_limits<double>::quiet_NaN()}}};

inline Json float_attribute_json(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

template <class T>
T attribute_from_json(const Json& j, std::string_view attribute) {
  auto bad = [&](std::string_view expected) {
    fail(ErrorCode::invalid_attribute, "attribute '", attribute, "' must be ", expected, ", got ", j.dump());
  };
  if constexpr (std::is_same_v<T, std::int64_t>) {
    if (!j.is_number_integer()) bad("an integer");
    if (j.is_number_unsigned() && j.get<std::uint64_t>() > std::uint64_t(INT64_MAX)) bad("an int64");
    return j.get<std::int64_t>();
  } else if constexpr (std::is_same_v<T, double>) {
    if (j.is_string())
      for (const auto& [spelling, value] : non_finite_spellings)
        if (j.get<std::string>() == spelling) return value;
    if (!j.is_number()) bad("a number, \"inf\", \"-inf\" or \"nan\"");
    return j.get<double>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!j.is_boolean()) bad("true or false");
    return j.get<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!j.is_string()) bad("a string");
    return j.get<std::string>();
  } else if constexpr (std::is_same_v<T, Ints>) {
    if (!j.is_array()) bad("a list of integers");
    Ints out;
    for (const Json& e : j) out.push_back(attribute_from_json<std::int64_t>(e, attribute));
    return out;
  } else if constexpr (std::is_same_v<T, DType>) {
    if (!j.is_string()) bad("\"f32\" or \"i32\"");
    return parse_dtype(j.get<std::string>());
  } else if constexpr (std::is_same_v<T, std::optional<double>>) {
    if (j.is_null()) return std::nullopt;
    return attribute_from_json<double>(j, attribute);
  }
}

template <class T>
Json attribute_to_json(const T& value) {
  if constexpr (std::is_same_v<T, DType>) return std::string(dtype_name(value));
  else if constexpr (std::is_same_v<T, double>) return float_attribute_json(value);
  else if constexpr (std::is_same_v<T, std::optional<double>>) return value ? float_attribute_json(*value) : Json(nullptr);
  else return Json(value);
}

template <class Op>
Op parse_attributes(const Json& attrs) {
  Op op{};
  std::size_t known = 0;
  for_each_field<Op>([&](const auto& field) {
    using T = typename std::decay_t<decltype(field)>::value_type;
    const auto it = attrs.find(std::string(field.name));
    if (it == attrs.end()) {
      if (field.required) fail(ErrorCode::invalid_attribute, "missing attribute '", field.name, "'");
      return;
    }
    ++known;
    op.*field.member = attribute_from_json<T>(*it, field.name);
  });
  if (known != attrs.size()) {
    for (const auto& item : attrs.items()) {
      const std::string& key = item.key();  // not a structured binding: clang 14 cannot capture one
      bool declared = false;
      for_each_field<Op>([&](const auto& field) { declared = declared || field.name == key; });
      if (!declared) fail(ErrorCode::invalid_attribute, "unknown attribute '", key, "'");
    }
  }
  return op;
}

}  // namespace detail

/// The op named `name` with attributes from a JSON object. Unknown ops,
/// unknown or missing attributes and ill-typed values are errors naming them.
inline AnyOp op_from_json(std::string_view name, const Json& attrs) {
  AnyOp op = Registry::make(name);
  if (!attrs.is_null() && !attrs.is_object())
    fail(ErrorCode::invalid_attribute, "op '", name, "': attributes must be a JSON object");
  const Json& object = attrs.is_null() ? Json::object() : attrs;
  try {
    return visit_op(
        [&](const auto& o) -> AnyOp { return as_any_op(detail::parse_attributes<std::decay_t<decltype(o)>>(object)); },
        op);
  } catch (...) {
    rethrow_with_context("op '", name, "'");
  }
}

/// Every attribute, defaults included, so a file says exactly what ran.
inline Json op_attributes_json(const AnyOp& op) {
  return visit_op(
      [](const auto& o) {
        Json out = Json::object();
        for_each_field<std::decay_t<decltype(o)>>(
            [&](const auto& field) { out[std::string(field.name)] = detail::attribute_to_json(o.*field.member); });
        return out;
      },
      op);
}

}  // namespace rml
