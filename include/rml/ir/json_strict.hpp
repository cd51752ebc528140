// Strict JSON for the files rml reads (graph JSON, safetensors headers): a
// small document type and a parser that rejects what lenient readers let
// through (duplicate keys, a NUL byte, invalid UTF-8, numbers past a double,
// nesting deeper than a limit). Reading needs nothing beyond the standard
// library, so a program that only loads and runs models does not compile a
// general JSON library; rml writes JSON with nlohmann_json (ir/graph_io.hpp).
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "rml/core/error.hpp"
#include "rml/core/utf8.hpp"

namespace rml {

namespace json_detail {

/// `text` as a JSON string literal: quotes, backslashes and control
/// characters escaped (as nlohmann_json writes them), UTF-8 kept as it is.
inline std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escape[8];
          std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(c));
          out += escape;
        } else {
          out += c;
        }
    }
  }
  return out + '"';
}

}  // namespace json_detail

namespace json {

/// A parsed JSON document. Numbers keep their JSON kind: an integer literal
/// is `integer` (negative) or `unsigned_integer` (non-negative) while it fits
/// 64 bits, anything else is `real`. Objects keep their keys in file order.
class Value {
 public:
  enum class Kind : unsigned char { null, boolean, integer, unsigned_integer, real, string, array, object };

  // Values made in code (attributes given by a program rather than a file).
  static Value boolean(bool value) { return scalar(Kind::boolean, &ScalarBits::boolean, value); }
  static Value integer(std::int64_t value) { return scalar(Kind::integer, &ScalarBits::integer, value); }
  static Value unsigned_integer(std::uint64_t value) {
    return scalar(Kind::unsigned_integer, &ScalarBits::unsigned_integer, value);
  }
  static Value real(double value) { return scalar(Kind::real, &ScalarBits::real, value); }
  static Value string(std::string text) {
    Value v;
    v.kind_ = Kind::string;
    v.text_ = std::move(text);
    return v;
  }
  static Value array(std::vector<Value> items) {
    Value v;
    v.kind_ = Kind::array;
    v.items_ = std::move(items);
    return v;
  }
  /// `keys` distinct, one per value.
  static Value object(std::vector<std::string> keys, std::vector<Value> values) {
    Value v;
    v.kind_ = Kind::object;
    v.keys_ = std::move(keys);
    v.items_ = std::move(values);
    return v;
  }

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::null; }
  bool is_boolean() const { return kind_ == Kind::boolean; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_array() const { return kind_ == Kind::array; }
  bool is_object() const { return kind_ == Kind::object; }
  bool is_number_unsigned() const { return kind_ == Kind::unsigned_integer; }
  bool is_number_integer() const { return kind_ == Kind::integer || kind_ == Kind::unsigned_integer; }
  bool is_number() const { return is_number_integer() || kind_ == Kind::real; }

  /// "null", "boolean", "number", "string", "array" or "object".
  std::string_view type_name() const {
    constexpr std::string_view names[] = {"null", "boolean", "number", "number", "number", "string", "array", "object"};
    return names[static_cast<int>(kind_)];
  }

  // Accessors: the caller has checked the kind.
  bool as_bool() const { return scalar_.boolean; }
  std::int64_t as_int64() const {
    return kind_ == Kind::unsigned_integer ? static_cast<std::int64_t>(scalar_.unsigned_integer) : scalar_.integer;
  }
  std::uint64_t as_uint64() const {
    return kind_ == Kind::unsigned_integer ? scalar_.unsigned_integer : static_cast<std::uint64_t>(scalar_.integer);
  }
  double as_double() const {
    if (kind_ == Kind::integer) return static_cast<double>(scalar_.integer);
    if (kind_ == Kind::unsigned_integer) return static_cast<double>(scalar_.unsigned_integer);
    return scalar_.real;
  }
  const std::string& as_string() const { return text_; }

  /// Elements of an array, or values of an object (in the order of keys()).
  std::size_t size() const { return items_.size(); }
  const Value& operator[](std::size_t i) const { return items_[i]; }
  const Value* begin() const { return items_.data(); }
  const Value* end() const { return items_.data() + items_.size(); }
  const std::vector<std::string>& keys() const { return keys_; }

  /// The member named `key` of an object, or null when it has none.
  const Value* find(std::string_view key) const {
    for (std::size_t i = 0; i < keys_.size(); ++i)
      if (keys_[i] == key) return &items_[i];
    return nullptr;
  }
  bool contains(std::string_view key) const { return find(key) != nullptr; }

  /// Compact JSON text, as error messages quote a value.
  std::string dump() const {
    std::string out;
    dump_to(out);
    return out;
  }

 private:
  friend class Parser;

  void dump_to(std::string& out) const {
    switch (kind_) {
      case Kind::null: out += "null"; return;
      case Kind::boolean: out += scalar_.boolean ? "true" : "false"; return;
      case Kind::integer: out += std::to_string(scalar_.integer); return;
      case Kind::unsigned_integer: out += std::to_string(scalar_.unsigned_integer); return;
      case Kind::real: {
        char text[32];
        const auto end = std::to_chars(text, text + sizeof text, scalar_.real).ptr;
        const std::string_view shortest(text, static_cast<std::size_t>(end - text));
        out += shortest;
        if (shortest.find_first_of(".e") == std::string_view::npos) out += ".0";
        return;
      }
      case Kind::string: out += json_detail::quoted(text_); return;
      case Kind::array:
      case Kind::object:
        out += is_array() ? '[' : '{';
        for (std::size_t i = 0; i < items_.size(); ++i) {
          if (i) out += ',';
          if (is_object()) out += json_detail::quoted(keys_[i]) + ':';
          items_[i].dump_to(out);
        }
        out += is_array() ? ']' : '}';
        return;
    }
  }

  union ScalarBits {
    bool boolean;
    std::int64_t integer;
    std::uint64_t unsigned_integer;
    double real;
  };
  template <class T>
  static Value scalar(Kind kind, T ScalarBits::*member, T value) {
    Value v;
    v.kind_ = kind;
    v.scalar_.*member = value;
    return v;
  }

  Kind kind_ = Kind::null;
  ScalarBits scalar_{};
  std::string text_;               // a string's text
  std::vector<Value> items_;       // an array's elements, an object's values
  std::vector<std::string> keys_;  // an object's keys
};

/// The deepest nesting any document may have: the parser recurses once a
/// level, and this bounds its stack (well under a thread's smallest stack).
inline constexpr int max_depth = 1024;

/// Recursive descent over the text, one Value per JSON value.
class Parser {
 public:
  Parser(std::string_view text, const std::string& what, int depth_limit)
      : text_(text), what_(what), max_depth_(std::min(depth_limit, max_depth)) {}

  Value document() {
    Value root = value(0);
    skip_space();
    if (at_ != text_.size()) syntax_error("text after the document");
    return root;
  }

 private:
  [[noreturn]] void syntax_error(std::string_view problem) const {
    fail(ErrorCode::json_syntax, what_, " is not valid JSON: ", problem, " at byte ", at_);
  }

  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r'))
      ++at_;
  }

  bool take(char c) {
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }

  void expect(char c, std::string_view problem) {
    skip_space();
    if (!take(c)) syntax_error(problem);
  }

  Value value(int depth) {
    skip_space();
    if (at_ == text_.size()) syntax_error("unexpected end of input");
    Value v;
    const char c = text_[at_];
    if (c == '{' || c == '[') {
      if (depth + 1 > max_depth_) fail(ErrorCode::limit_exceeded, what_, " nests deeper than ", max_depth_, " levels");
      ++at_;
      if (c == '{') object(v, depth + 1);
      else array(v, depth + 1);
    } else if (c == '"') {
      v.kind_ = Value::Kind::string;
      v.text_ = string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      number(v);
    } else if (literal("true")) {
      v.kind_ = Value::Kind::boolean;
      v.scalar_.boolean = true;
    } else if (literal("false")) {
      v.kind_ = Value::Kind::boolean;
    } else if (!literal("null")) {
      syntax_error("unexpected character");
    }
    return v;
  }

  bool literal(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  void array(Value& v, int depth) {
    v.kind_ = Value::Kind::array;
    skip_space();
    if (take(']')) return;
    do v.items_.push_back(value(depth));
    while ((skip_space(), take(',')));
    expect(']', "expected ',' or ']'");
  }

  void object(Value& v, int depth) {
    v.kind_ = Value::Kind::object;
    skip_space();
    if (!take('}')) {
      do {
        skip_space();
        if (at_ == text_.size() || text_[at_] != '"') syntax_error("expected a string key");
        v.keys_.push_back(string());
        expect(':', "expected ':'");
        v.items_.push_back(value(depth));
      } while ((skip_space(), take(',')));
      expect('}', "expected ',' or '}'");
    }
    // Duplicate keys: readers disagree on which one wins, so take neither.
    if (v.keys_.size() > 1) {
      std::vector<std::string_view> sorted(v.keys_.begin(), v.keys_.end());
      std::sort(sorted.begin(), sorted.end());
      if (const auto twice = std::adjacent_find(sorted.begin(), sorted.end()); twice != sorted.end())
        fail(ErrorCode::json_duplicate_key, what_, " has duplicate key '", *twice, "'");
    }
  }

  unsigned hex4() {
    if (text_.size() - at_ < 4) syntax_error("truncated \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[at_++];
      code <<= 4;
      if (h >= '0' && h <= '9') code |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f') code |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') code |= static_cast<unsigned>(h - 'A' + 10);
      else syntax_error("invalid \\u escape");
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  /// A string literal at text_[at_] == '"'; the text is valid UTF-8 already.
  std::string string() {
    ++at_;
    std::string out;
    while (true) {
      if (at_ == text_.size()) syntax_error("unterminated string");
      const char c = text_[at_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) syntax_error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_ == text_.size()) syntax_error("unterminated string");
      switch (text_[at_++]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned code = hex4();
          if (code >= 0xDC00 && code <= 0xDFFF) syntax_error("unpaired surrogate in a \\u escape");
          if (code >= 0xD800 && code <= 0xDBFF) {
            if (!literal("\\u")) syntax_error("unpaired surrogate in a \\u escape");
            const unsigned low = hex4();
            if (low < 0xDC00 || low > 0xDFFF) syntax_error("unpaired surrogate in a \\u escape");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, code);
          break;
        }
        default: syntax_error("invalid escape in a string");
      }
    }
  }

  /// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  void number(Value& v) {
    const std::size_t start = at_;
    auto digits = [&] {
      const std::size_t from = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
      return at_ - from;
    };
    const bool negative = take('-');
    const std::size_t int_start = at_;
    const std::size_t int_digits = digits();
    if (int_digits == 0) syntax_error("a number needs digits");
    if (int_digits > 1 && text_[int_start] == '0') syntax_error("a number has a leading zero");
    bool integral = true;
    if (take('.')) {
      integral = false;
      if (digits() == 0) syntax_error("a number needs digits after '.'");
    }
    if (take('e') || take('E')) {
      integral = false;
      if (!take('+')) take('-');
      if (digits() == 0) syntax_error("a number needs digits in its exponent");
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + at_;
    if (integral) {
      if (negative) {
        if (std::from_chars(first, last, v.scalar_.integer).ec == std::errc{}) {
          v.kind_ = Value::Kind::integer;
          return;
        }
      } else if (std::from_chars(first, last, v.scalar_.unsigned_integer).ec == std::errc{}) {
        v.kind_ = Value::Kind::unsigned_integer;
        return;
      }
      // Past 64 bits: a real, as other readers take it.
    }
    v.kind_ = Value::Kind::real;
    const auto [end, ec] = std::from_chars(first, last, v.scalar_.real);
    if (ec == std::errc::result_out_of_range) {
      if (!underflows(first, last))
        fail(ErrorCode::non_finite_number, what_, " is not valid JSON: number ", std::string_view(first, last - first),
             " overflows a double");
      v.scalar_.real = negative ? -0.0 : 0.0;
    } else if (ec != std::errc{} || end != last) {
      syntax_error("invalid number");
    }
  }

  /// Whether a number out of a double's range is too small rather than too
  /// large: its decimal exponent, counted from the first nonzero digit.
  static bool underflows(const char* first, const char* last) {
    std::int64_t exponent = 0;
    bool seen_nonzero = false, after_point = false;
    const char* p = first;
    for (; p != last && *p != 'e' && *p != 'E'; ++p) {
      if (*p == '.') after_point = true;
      else if (*p >= '1' && *p <= '9') seen_nonzero = true;
      if (*p < '0' || *p > '9') continue;
      if (!after_point && seen_nonzero) ++exponent;
      if (after_point && !seen_nonzero) --exponent;
    }
    if (p != last) {
      std::int64_t written = 0;
      ++p;
      const bool negative = *p == '-';
      if (*p == '-' || *p == '+') ++p;
      for (; p != last && written < 1'000'000'000; ++p) written = written * 10 + (*p - '0');
      exponent += negative ? -written : written;
    }
    return exponent < 0;
  }

  std::string_view text_;
  const std::string& what_;
  int max_depth_;
  std::size_t at_ = 0;
};

}  // namespace json

/// Parses `text`, rejecting invalid UTF-8, NUL bytes, duplicate keys at any depth, numbers
/// beyond a double and nesting deeper than `max_depth` (at most json::max_depth). Errors
/// start with `what`.
inline json::Value parse_json_strict(std::string_view text, const std::string& what, int max_depth) {
  if (const auto bad = first_invalid_utf8(text))
    fail(ErrorCode::invalid_utf8, what, " is not valid UTF-8 (bad byte at offset ", *bad, ")");
  // JSON never allows a raw NUL; naming it beats "unexpected character".
  if (const auto nul = text.find('\0'); nul != std::string_view::npos)
    fail(ErrorCode::json_syntax, what, " is not valid JSON: NUL byte at offset ", nul);
  return json::Parser(text, what, max_depth).document();
}

}  // namespace rml
