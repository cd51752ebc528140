// Attribute reflection: each op declares its attributes once, as a tuple of
// fields; equality, hashing, JSON, docs and (later) Python dicts iterate it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "rml/core/dtype.hpp"

namespace rml {

/// One attribute: its name in the file format, the member that holds it, and
/// whether a file may leave it out (the member's initial value is the default).
template <class Owner, class T>
struct Field {
  using owner_type = Owner;
  using value_type = T;
  std::string_view name;
  T Owner::*member;
  bool required;
};

template <class Owner, class T>
constexpr Field<Owner, T> required(std::string_view name, T Owner::*member) {
  return {name, member, true};
}
template <class Owner, class T>
constexpr Field<Owner, T> optional(std::string_view name, T Owner::*member) {
  return {name, member, false};
}

/// The attribute types an op may declare.
using Ints = std::vector<std::int64_t>;

template <class T>
constexpr std::string_view attribute_type_name() {
  if constexpr (std::is_same_v<T, std::int64_t>) return "int";
  else if constexpr (std::is_same_v<T, double>) return "float";
  else if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_same_v<T, std::string>) return "string";
  else if constexpr (std::is_same_v<T, Ints>) return "int[]";
  else if constexpr (std::is_same_v<T, DType>) return "dtype";
  else if constexpr (std::is_same_v<T, std::optional<double>>) return "float?";
  else static_assert(sizeof(T) == 0, "unsupported attribute type");
}

/// Calls fn(field) for every attribute of Op. (An index expansion rather than
/// std::apply, whose invocability checks cost more to compile per op and use.)
template <class Op, class Fn>
constexpr void for_each_field(Fn&& fn) {
  const auto fields = Op::fields();
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (fn(std::get<I>(fields)), ...);
  }(std::make_index_sequence<std::tuple_size_v<decltype(fields)>>{});
}

template <class Op>
bool attributes_equal(const Op& a, const Op& b) {
  bool equal = true;
  for_each_field<Op>([&](const auto& f) { equal = equal && (a.*f.member == b.*f.member); });
  return equal;
}

namespace detail {
inline void hash_combine(std::size_t& seed, std::size_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}
template <class T>
std::size_t hash_attribute(const T& value) {
  if constexpr (std::is_same_v<T, Ints>) {
    std::size_t seed = value.size();
    for (auto v : value) hash_combine(seed, std::hash<std::int64_t>{}(v));
    return seed;
  } else if constexpr (std::is_same_v<T, std::optional<double>>) {
    return value ? std::hash<double>{}(*value) : 0x51ed;
  } else if constexpr (std::is_same_v<T, DType>) {
    return static_cast<std::size_t>(value);
  } else {
    return std::hash<T>{}(value);
  }
}
}  // namespace detail

template <class Op>
std::size_t attributes_hash(const Op& op) {
  std::size_t seed = std::hash<std::string_view>{}(Op::name);
  for_each_field<Op>([&](const auto& f) { detail::hash_combine(seed, detail::hash_attribute(op.*f.member)); });
  return seed;
}

}  // namespace rml
