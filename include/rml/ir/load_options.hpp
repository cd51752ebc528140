// rml::LoadOptions: what loading and running a model may cost. Each limit is
// checked before anything is allocated from the number it bounds, and an
// error names the limit and the value. The defaults admit every real model;
// a server loading untrusted files sets its own budget.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "rml/core/error.hpp"

namespace rml {

struct LoadOptions {
  std::uint64_t max_graph_bytes = std::uint64_t(1) << 31;    ///< the graph's JSON file
  std::uint64_t max_weights_bytes = std::uint64_t(1) << 40;  ///< the weights file: every stored weight
  std::uint64_t max_header_bytes = 100'000'000;              ///< the weights file's JSON header
  std::uint64_t max_json_depth = 32;                         ///< nesting in either JSON text
  std::uint64_t max_nodes = 10'000'000;
  std::uint64_t max_values = 20'000'000;
  std::uint64_t max_rank = 32;                                   ///< dimensions of any value
  std::uint64_t max_tensor_elements = std::uint64_t(1) << 40;    ///< elements of any value, computed ones too
  std::uint64_t max_memory_bytes = std::uint64_t(1) << 40;       ///< an Executor's arena, scratch and packed weights
};

/// Fails naming the limit when `value` exceeds it.
inline void check_limit(std::uint64_t value, std::uint64_t limit, std::string_view what, std::string_view field) {
  if (value > limit) fail(ErrorCode::limit_exceeded, what, ": ", value, " exceeds the limit of ", limit, " (", field, ")");
}

namespace load_options_detail {
struct Field {
  std::string_view name;
  std::uint64_t LoadOptions::*member;
};
inline constexpr Field fields[] = {
    {"max_graph_bytes", &LoadOptions::max_graph_bytes},     {"max_weights_bytes", &LoadOptions::max_weights_bytes},
    {"max_header_bytes", &LoadOptions::max_header_bytes},   {"max_json_depth", &LoadOptions::max_json_depth},
    {"max_nodes", &LoadOptions::max_nodes},                 {"max_values", &LoadOptions::max_values},
    {"max_rank", &LoadOptions::max_rank},                   {"max_tensor_elements", &LoadOptions::max_tensor_elements},
    {"max_memory_bytes", &LoadOptions::max_memory_bytes},
};
}  // namespace load_options_detail

/// Sets limits from text such as "max_nodes=1000,max_memory_bytes=1000000"
/// (the CLI's --limits; names as the fields above).
inline void set_limits(LoadOptions& options, std::string_view text) {
  while (!text.empty()) {
    const std::string_view item = text.substr(0, text.find(','));
    text.remove_prefix(std::min(text.size(), item.size() + 1));
    const auto equals = item.find('=');
    if (equals == std::string_view::npos) fail(ErrorCode::invalid_argument, "limit '", item, "' must be NAME=VALUE");
    const std::string_view name = item.substr(0, equals), value = item.substr(equals + 1);
    std::uint64_t number = 0;
    const auto parsed = std::from_chars(value.data(), value.data() + value.size(), number);
    if (parsed.ec != std::errc() || parsed.ptr != value.data() + value.size())
      fail(ErrorCode::invalid_argument, "limit '", name, "' needs a non-negative integer, got '", value, "'");
    bool known = false;
    for (const auto& field : load_options_detail::fields)
      if (field.name == name) {
        options.*field.member = number;
        known = true;
      }
    if (!known) {
      std::string names;
      for (const auto& field : load_options_detail::fields) names += (names.empty() ? "" : ", ") + std::string(field.name);
      fail(ErrorCode::invalid_argument, "unknown limit '", name, "' (limits: ", names, ")");
    }
  }
}

}  // namespace rml
