// Strict JSON parsing for files rml reads: nlohmann_json silently keeps the
// last of duplicate keys and stops at a NUL byte; a lying file must not get
// through either way.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "rml/core/error.hpp"

namespace rml {

namespace json_detail {

/// Offset of the first byte that breaks UTF-8 (overlong forms, surrogates
/// and code points past U+10FFFF included), or nullopt if `text` is valid.
inline std::optional<std::size_t> first_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    unsigned char second_min = 0x80, second_max = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) second_min = 0xA0;  // overlong
      if (lead == 0xED) second_max = 0x9F;  // surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) second_min = 0x90;  // overlong
      if (lead == 0xF4) second_max = 0x8F;  // past U+10FFFF
    } else {
      return i;
    }
    if (text.size() - i < length) return i;
    for (std::size_t k = 1; k < length; ++k) {
      const auto byte = static_cast<unsigned char>(text[i + k]);
      const unsigned char min = k == 1 ? second_min : 0x80, max = k == 1 ? second_max : 0xBF;
      if (byte < min || byte > max) return i;
    }
    i += length;
  }
  return std::nullopt;
}

/// A SAX handler that builds the document with nlohmann's own DOM builder
/// while checking depth and duplicate keys as the events pass: linear in the
/// text (nlohmann's parse callback re-walks each finished container, which
/// made 100k-node graphs quadratic).
class StrictDomBuilder {
 public:
  using Json = nlohmann::json;
  StrictDomBuilder(Json& result, const std::string& what, int max_depth)
      : dom_(result, /*allow_exceptions=*/true), what_(what), max_depth_(max_depth) {}

  bool null() { return dom_.null(); }
  bool boolean(bool value) { return dom_.boolean(value); }
  bool number_integer(Json::number_integer_t value) { return dom_.number_integer(value); }
  bool number_unsigned(Json::number_unsigned_t value) { return dom_.number_unsigned(value); }
  bool number_float(Json::number_float_t value, const Json::string_t& text) { return dom_.number_float(value, text); }
  bool string(Json::string_t& value) { return dom_.string(value); }
  bool binary(Json::binary_t& value) { return dom_.binary(value); }
  bool start_object(std::size_t elements) {
    enter();
    keys_of_open_objects_.emplace_back();
    return dom_.start_object(elements);
  }
  bool key(Json::string_t& key) {
    if (!keys_of_open_objects_.back().insert(key).second) fail(ErrorCode::json_duplicate_key, what_, " has duplicate key '", key, "'");
    return dom_.key(key);
  }
  bool end_object() {
    --depth_;
    keys_of_open_objects_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t elements) {
    enter();
    return dom_.start_array(elements);
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& error) {
    // nlohmann reports a number beyond a double's range (1e999) as out_of_range 406.
    const bool overflow = std::is_same_v<Exception, nlohmann::detail::out_of_range> && error.id == 406;
    fail(overflow ? ErrorCode::non_finite_number : ErrorCode::json_syntax, what_, " is not valid JSON: ", error.what());
  }

 private:
  void enter() {
    if (++depth_ > max_depth_) fail(ErrorCode::limit_exceeded, what_, " nests deeper than ", max_depth_, " levels");
  }
  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  const std::string& what_;
  int max_depth_;
  int depth_ = 0;
  std::vector<std::unordered_set<std::string>> keys_of_open_objects_;
};

}  // namespace json_detail

/// Parses `text`, rejecting invalid UTF-8, NUL bytes, duplicate keys at any depth and
/// nesting deeper than `max_depth`. Errors start with `what`.
inline nlohmann::json parse_json_strict(std::string_view text, const std::string& what, int max_depth) {
  if (const auto bad = json_detail::first_invalid_utf8(text))
    fail(ErrorCode::invalid_utf8, what, " is not valid UTF-8 (bad byte at offset ", *bad, ")");
  // nlohmann stops at a NUL as if the input ended, which would hide whatever
  // follows it; JSON never allows a raw NUL anyway.
  if (const auto nul = text.find('\0'); nul != std::string_view::npos)
    fail(ErrorCode::json_syntax, what, " is not valid JSON: NUL byte at offset ", nul);
  nlohmann::json result;
  json_detail::StrictDomBuilder builder(result, what, max_depth);
  try {
    // nlohmann's own sax_parse chooses the text or a binary reader at run
    // time, so it compiles the CBOR/MessagePack/BSON/UBJSON readers too
    // (seconds of every consumer's build); the text parser alone is enough.
    auto input = nlohmann::detail::input_adapter(text.begin(), text.end());
    nlohmann::detail::parser<nlohmann::json, decltype(input)>(std::move(input), nullptr, true, false)
        .sax_parse(&builder, true);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorCode::json_syntax, what, " is not valid JSON: ", e.what());
  }
  return result;
}

}  // namespace rml
