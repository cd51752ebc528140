// Op attributes as nlohmann_json values, for programs that build graphs and
// for the writers: every attribute out (op_attributes_json), and attributes
// given as JSON in (op_from_json, as a graph file's are read).
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "rml/ir/op_from_json.hpp"

namespace rml {

using Json = nlohmann::json;

namespace detail {

inline Json float_attribute_json(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

template <class T>
Json attribute_to_json(const T& value) {
  if constexpr (std::is_same_v<T, DType>) return std::string(dtype_name(value));
  else if constexpr (std::is_same_v<T, double>) return float_attribute_json(value);
  else if constexpr (std::is_same_v<T, std::optional<double>>) return value ? float_attribute_json(*value) : Json(nullptr);
  else return Json(value);
}

/// The same document as the strict reader's value (non-finite reals, which
/// a program can put in a Json though a file cannot hold them, kept).
inline json::Value strict_json(const Json& j) {
  switch (j.type()) {
    case Json::value_t::boolean: return json::Value::boolean(j.get<bool>());
    case Json::value_t::number_integer: return json::Value::integer(j.get<std::int64_t>());
    case Json::value_t::number_unsigned: return json::Value::unsigned_integer(j.get<std::uint64_t>());
    case Json::value_t::number_float: return json::Value::real(j.get<double>());
    case Json::value_t::string: return json::Value::string(j.get<std::string>());
    case Json::value_t::array: {
      std::vector<json::Value> items;
      for (const Json& item : j) items.push_back(strict_json(item));
      return json::Value::array(std::move(items));
    }
    case Json::value_t::object: {
      std::vector<std::string> keys;
      std::vector<json::Value> values;
      for (auto it = j.begin(); it != j.end(); ++it) {
        keys.push_back(it.key());
        values.push_back(strict_json(*it));
      }
      return json::Value::object(std::move(keys), std::move(values));
    }
    default: return {};  // null (binary values never reach an attribute)
  }
}

}  // namespace detail

/// The op named `name` with attributes from a JSON object (see the overload
/// for a parsed file in ir/op_from_json.hpp).
inline AnyOp op_from_json(std::string_view name, const Json& attrs) {
  return op_from_json(name, detail::strict_json(attrs));
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
