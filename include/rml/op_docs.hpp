// The op table of docs/ops.md and `rml ops`, generated from the registry so
// the documentation cannot drift from the code.
#pragma once

#include <string>

#include "rml/ir/op_json.hpp"

namespace rml {

/// "name: type" for a required attribute, "name: type = default" otherwise.
template <class Op>
std::string attributes_summary() {
  std::string text;
  const Op defaults{};
  for_each_field<Op>([&](const auto& field) {
    using T = typename std::decay_t<decltype(field)>::value_type;
    if (!text.empty()) text += ", ";
    text += detail::concat(field.name, ": ", attribute_type_name<T>());
    if (!field.required) text += " = " + detail::attribute_to_json(defaults.*field.member).dump();
  });
  return text.empty() ? "-" : text;
}

inline std::string arity_summary(Arity arity) {
  if (arity.max == Arity::variadic) return detail::concat(arity.min, "+");
  if (arity.min == arity.max) return std::to_string(arity.min);
  return detail::concat(arity.min, "-", arity.max);
}

/// One Markdown table row per op, in registry order.
inline std::string op_table_markdown() {
  std::string table =
      "| op | inputs | arity | attributes | semantics | shape rule |\n"
      "| --- | --- | --- | --- | --- | --- |\n";
  auto escape = [](std::string_view text) {
    std::string out;
    for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  Registry::for_each([&](auto tag) {
    using Op = typename decltype(tag)::type;
    table += detail::concat("| `", Op::name, "` | ", escape(Op::inputs), " | ", arity_summary(Op::arity),
                            " | ", escape(attributes_summary<Op>()), " | ", escape(Op::summary), " | ",
                            escape(Op::shape_rule), " |\n");
  });
  return table;
}

}  // namespace rml
