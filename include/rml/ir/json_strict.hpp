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
  static Value boolean(bool value) { return scalar(Kind::boolean, &Bits::boolean, value); }
  static Value integer(std::int64_t value) { return scalar(Kind::integer, &Bits::integer, value); }
  static Value unsigned_integer(std::uint64_t value) { return scalar(Kind::unsigned_integer, &Bits::unsigned_integer, value); }
  static Value real(double value) { return scalar(Kind::real, &Bits::real, value); }
  static Value string(std::string text) {
    Value v;
    v.become(Kind::string);
    *v.bits_.text = std::move(text);
    return v;
  }
  static Value array(std::vector<Value> items) {
    Value v;
    v.become(Kind::array);
    *v.bits_.items = std::move(items);
    return v;
  }
  /// `keys` distinct, one per value.
  static Value object(std::vector<std::string> keys, std::vector<Value> values) {
    Value v;
    v.become(Kind::object);
    v.bits_.object->keys = std::move(keys);
    v.bits_.object->values = std::move(values);
    return v;
  }

  Value() = default;
  Value(const Value& other) : kind_(other.kind_), bits_(other.bits_) {
    if (kind_ == Kind::string) bits_.text = new std::string(*other.bits_.text);
    if (kind_ == Kind::array) bits_.items = new std::vector<Value>(*other.bits_.items);
    if (kind_ == Kind::object) bits_.object = new Object(*other.bits_.object);
  }
  Value(Value&& other) noexcept : kind_(other.kind_), bits_(other.bits_) { other.kind_ = Kind::null; }
  Value& operator=(const Value& other) {
    if (this != &other) *this = Value(other);
    return *this;
  }
  Value& operator=(Value&& other) noexcept {
    if (this != &other) {
      release();
      kind_ = other.kind_;
      bits_ = other.bits_;
      other.kind_ = Kind::null;
    }
    return *this;
  }
  ~Value() { release(); }

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
  bool as_bool() const { return bits_.boolean; }
  std::int64_t as_int64() const {
    return kind_ == Kind::unsigned_integer ? static_cast<std::int64_t>(bits_.unsigned_integer) : bits_.integer;
  }
  std::uint64_t as_uint64() const {
    return kind_ == Kind::unsigned_integer ? bits_.unsigned_integer : static_cast<std::uint64_t>(bits_.integer);
  }
  double as_double() const {
    if (kind_ == Kind::integer) return static_cast<double>(bits_.integer);
    if (kind_ == Kind::unsigned_integer) return static_cast<double>(bits_.unsigned_integer);
    return bits_.real;
  }
  const std::string& as_string() const { return kind_ == Kind::string ? *bits_.text : empty().text; }

  /// Elements of an array, or values of an object (in the order of keys()).
  std::size_t size() const { return items().size(); }
  const Value& operator[](std::size_t i) const { return items()[i]; }
  const Value* begin() const { return items().data(); }
  const Value* end() const { return items().data() + items().size(); }
  const std::vector<std::string>& keys() const { return kind_ == Kind::object ? bits_.object->keys : empty().no_keys; }

  /// The member named `key` of an object, or null when it has none.
  const Value* find(std::string_view key) const {
    const std::vector<std::string>& names = keys();
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == key) return &items()[i];
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
      case Kind::boolean: out += bits_.boolean ? "true" : "false"; return;
      case Kind::integer: out += std::to_string(bits_.integer); return;
      case Kind::unsigned_integer: out += std::to_string(bits_.unsigned_integer); return;
      case Kind::real: {
        char text[32];
        const auto end = std::to_chars(text, text + sizeof text, bits_.real).ptr;
        const std::string_view shortest(text, static_cast<std::size_t>(end - text));
        out += shortest;
        if (shortest.find_first_of(".e") == std::string_view::npos) out += ".0";
        return;
      }
      case Kind::string: out += json_detail::quoted(as_string()); return;
      case Kind::array:
      case Kind::object:
        out += is_array() ? '[' : '{';
        for (std::size_t i = 0; i < size(); ++i) {
          if (i) out += ',';
          if (is_object()) out += json_detail::quoted(keys()[i]) + ':';
          items()[i].dump_to(out);
        }
        out += is_array() ? ']' : '}';
        return;
    }
  }

  struct Object {
    std::vector<std::string> keys;  // distinct
    std::vector<Value> values;      // one per key
  };
  /// A number's bits, or what a string, array or object owns on the heap:
  /// a Value is 16 bytes, so the numbers that make up most of a graph file
  /// cost little, and an array costs one small block beside its elements.
  union Bits {
    bool boolean;
    std::int64_t integer;
    std::uint64_t unsigned_integer;
    double real;
    std::string* text;
    std::vector<Value>* items;
    Object* object;
  };
  template <class T>
  static Value scalar(Kind kind, T Bits::*member, T value) {
    Value v;
    v.kind_ = kind;
    v.bits_.*member = value;
    return v;
  }
  /// What an accessor of the wrong kind reads: nothing.
  struct Empty {
    std::string text;
    std::vector<std::string> no_keys;
    std::vector<Value> items;
  };
  static const Empty& empty() {
    static const Empty nothing;
    return nothing;
  }
  const std::vector<Value>& items() const {
    if (kind_ == Kind::array) return *bits_.items;
    return kind_ == Kind::object ? bits_.object->values : empty().items;
  }
  /// Drops what the value held; it becomes an empty `kind`.
  void become(Kind kind) {
    release();
    kind_ = kind;
    bits_.integer = 0;
    if (kind == Kind::string) bits_.text = new std::string();
    if (kind == Kind::array) bits_.items = new std::vector<Value>();
    if (kind == Kind::object) bits_.object = new Object();
  }
  void release() noexcept {
    if (kind_ == Kind::string) delete bits_.text;
    if (kind_ == Kind::array) delete bits_.items;
    if (kind_ == Kind::object) delete bits_.object;
    kind_ = Kind::null;
  }

  Kind kind_ = Kind::null;
  Bits bits_{};
};
static_assert(sizeof(Value) <= 16);

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
      v.become(Value::Kind::string);
      *v.bits_.text = string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      number(v);
    } else if (literal("true")) {
      v.kind_ = Value::Kind::boolean;
      v.bits_.boolean = true;
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
    v.become(Value::Kind::array);
    skip_space();
    if (take(']')) return;
    do v.bits_.items->push_back(value(depth));
    while ((skip_space(), take(',')));
    expect(']', "expected ',' or ']'");
  }

  void object(Value& v, int depth) {
    v.become(Value::Kind::object);
    skip_space();
    if (!take('}')) {
      do {
        skip_space();
        if (at_ == text_.size() || text_[at_] != '"') syntax_error("expected a string key");
        v.bits_.object->keys.push_back(string());
        expect(':', "expected ':'");
        v.bits_.object->values.push_back(value(depth));
      } while ((skip_space(), take(',')));
      expect('}', "expected ',' or '}'");
    }
    // Duplicate keys: readers disagree on which one wins, so take neither.
    if (v.keys().size() > 1) {
      std::vector<std::string_view> sorted(v.keys().begin(), v.keys().end());
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
        if (std::from_chars(first, last, v.bits_.integer).ec == std::errc{}) {
          v.kind_ = Value::Kind::integer;
          return;
        }
      } else if (std::from_chars(first, last, v.bits_.unsigned_integer).ec == std::errc{}) {
        v.kind_ = Value::Kind::unsigned_integer;
        return;
      }
      // Past 64 bits: a real, as other readers take it.
    }
    v.kind_ = Value::Kind::real;
    const auto [end, ec] = std::from_chars(first, last, v.bits_.real);
    if (ec == std::errc::result_out_of_range) {
      if (!underflows(first, last))
        fail(ErrorCode::non_finite_number, what_, " is not valid JSON: number ", std::string_view(first, last - first),
             " overflows a double");
      v.bits_.real = negative ? -0.0 : 0.0;
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
