// Strict JSON parsing for files rml reads: nlohmann_json silently keeps the
// last of duplicate keys and stops at a NUL byte; a lying file must not get
// through either way.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "rml/core/error.hpp"

namespace rml {

/// Parses `text`, rejecting NUL bytes, duplicate keys at any depth and
/// nesting deeper than `max_depth`. Errors start with `what`.
inline nlohmann::json parse_json_strict(std::string_view text, const std::string& what, int max_depth) {
  // nlohmann stops at a NUL as if the input ended, which would hide whatever
  // follows it; JSON never allows a raw NUL anyway.
  if (const auto nul = text.find('\0'); nul != std::string_view::npos)
    fail(what, " is not valid JSON: NUL byte at offset ", nul);

  using Event = nlohmann::json::parse_event_t;
  std::vector<std::set<std::string>> keys_of_open_objects;
  int depth = 0;
  auto check_structure = [&](int, Event event, nlohmann::json& parsed) {
    if (event == Event::object_start || event == Event::array_start) {
      if (++depth > max_depth) fail(what, " nests deeper than ", max_depth, " levels");
      if (event == Event::object_start) keys_of_open_objects.emplace_back();
    } else if (event == Event::object_end || event == Event::array_end) {
      --depth;
      if (event == Event::object_end) keys_of_open_objects.pop_back();
    } else if (event == Event::key) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!keys_of_open_objects.back().insert(key).second) fail(what, " has duplicate key '", key, "'");
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), check_structure);
  } catch (const nlohmann::json::exception& e) {
    fail(what, " is not valid JSON: ", e.what());
  }
}

}  // namespace rml
