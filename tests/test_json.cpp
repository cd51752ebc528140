// The strict JSON reader (ir/json_strict.hpp) that graph files and safetensors
// headers go through: what it accepts matches an independent reader
// (nlohmann_json), and what it rejects is named.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "rml/ir/op_json.hpp"

using namespace rml;

namespace {
json::Value parse(std::string_view text, int depth = 16) { return parse_json_strict(text, "doc", depth); }

void check_rejected(std::string_view text, ErrorCode code, const char* message) {
  CAPTURE(text);
  try {
    parse(text);
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK(e.code() == code);
    CHECK(std::string(e.what()).find(message) != std::string::npos);
  }
}
}  // namespace

TEST_CASE("json: documents read the same as an independent reader reads them") {
  const char* documents[] = {
      "null", "true", "false", "0", "-0", "7", "-7", "0.5", "-2.5e-3", "1E+2", "9223372036854775807",
      "9223372036854775808", "-9223372036854775808", "18446744073709551615", "18446744073709551616",
      "-9223372036854775809", "1e308", "4.9e-324", "123456789012345678901234567890", R"("")",
      R"("a\"b\\c\/d\b\f\n\r\t")", R"("\u0041\u00e9\u20ac\ud83d\ude00")", "\"caf\xc3\xa9 \xe2\x82\xac\"", "[]", "{}",
      " [1, [2, [3, []]], {\"k\": [true, null]}] ", R"({"b": 1, "a": 2, "c": {"z": [], "y": {}}})",
      "{\"values\": [{\"id\": 0, \"dtype\": \"f32\", \"shape\": [2, 3]}], \"weights\": \"m.safetensors\"}"};
  for (const char* text : documents) {
    CAPTURE(text);
    const json::Value ours = parse(text);
    const nlohmann::json theirs = nlohmann::json::parse(text);
    CHECK(nlohmann::json::parse(ours.dump()) == theirs);  // (objects compared whatever their key order)
    CHECK(ours.kind() == detail::strict_json(theirs).kind());
  }
}

TEST_CASE("json: numbers keep their kind and value") {
  CHECK(parse("5").is_number_unsigned());
  CHECK(parse("5").as_int64() == 5);
  CHECK(parse("-5").kind() == json::Value::Kind::integer);
  CHECK(parse("-5").as_int64() == -5);
  CHECK(parse("18446744073709551615").as_uint64() == std::numeric_limits<std::uint64_t>::max());
  CHECK(parse("18446744073709551616").kind() == json::Value::Kind::real);
  CHECK(parse("0.1").as_double() == 0.1);
  CHECK(parse("1e-400").as_double() == 0.0);
  CHECK(std::signbit(parse("-1e-400").as_double()));
  CHECK(parse("0.00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
               "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
               "00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
               "00000000000000000000000000000000000000000000000000000000000000000000000000001")
            .as_double() == 0.0);
  CHECK(parse("2.5").dump() == "2.5");
  CHECK(parse("1.0").dump() == "1.0");
  CHECK(parse("[1,-2,\"x\\n\",{\"k\":null}]").dump() == "[1,-2,\"x\\n\",{\"k\":null}]");
}

TEST_CASE("json: objects keep their keys in file order and find members by name") {
  const json::Value doc = parse(R"({"b": 1, "a": [2, 3], "c": "x"})");
  REQUIRE(doc.is_object());
  CHECK(doc.keys() == std::vector<std::string>{"b", "a", "c"});
  REQUIRE(doc.find("a"));
  CHECK(doc.find("a")->size() == 2);
  CHECK((*doc.find("a"))[1].as_int64() == 3);
  CHECK(doc.find("c")->as_string() == "x");
  CHECK_FALSE(doc.find("d"));
  CHECK_FALSE(doc.contains("B"));
}

TEST_CASE("json: values own what they hold: copies are deep, moves leave null, other kinds read as empty") {
  const std::string text = R"({"s": "text", "a": [1, [2, "x"], {"k": null}], "n": -7, "o": {"r": 0.5}})";
  json::Value doc = parse(text);
  json::Value copy = doc;
  CHECK(copy.dump() == doc.dump());
  doc = parse("[]");  // the copy keeps its own strings, arrays and objects
  CHECK(copy.dump() == R"({"s":"text","a":[1,[2,"x"],{"k":null}],"n":-7,"o":{"r":0.5}})");
  json::Value moved = std::move(copy);
  CHECK(copy.is_null());  // NOLINT(bugprone-use-after-move): a moved-from value is null
  CHECK(moved.find("a")->size() == 3);
  json::Value& alias = moved;
  moved = alias;  // self-assignment keeps the value
  CHECK(moved.find("o")->find("r")->as_double() == 0.5);
  moved = std::move(alias);
  CHECK(moved.find("s")->as_string() == "text");
  std::vector<json::Value> many(100, moved);  // copies of copies, then all destroyed
  many.erase(many.begin(), many.begin() + 50);
  CHECK(many.back().dump() == moved.dump());
  // Accessors of another kind see nothing rather than reading the wrong member.
  const json::Value number = json::Value::integer(3);
  CHECK(number.size() == 0);
  CHECK(number.keys().empty());
  CHECK(number.find("a") == nullptr);
  CHECK(number.as_string().empty());
  CHECK(number.begin() == number.end());
  CHECK(sizeof(json::Value) <= 16);
}

TEST_CASE("json: malformed text, duplicate keys, deep nesting and overflowing numbers are named") {
  check_rejected("", ErrorCode::json_syntax, "unexpected end of input");
  check_rejected("{} x", ErrorCode::json_syntax, "text after the document at byte 3");
  check_rejected("[1,]", ErrorCode::json_syntax, "unexpected character");
  check_rejected("{\"a\" 1}", ErrorCode::json_syntax, "expected ':'");
  check_rejected("{\"a\": 1,}", ErrorCode::json_syntax, "expected a string key");
  check_rejected("{1: 2}", ErrorCode::json_syntax, "expected a string key");
  check_rejected("[1 2]", ErrorCode::json_syntax, "expected ',' or ']'");
  check_rejected("01", ErrorCode::json_syntax, "leading zero");
  check_rejected("-", ErrorCode::json_syntax, "needs digits");
  check_rejected("1.", ErrorCode::json_syntax, "digits after '.'");
  check_rejected("1e", ErrorCode::json_syntax, "digits in its exponent");
  check_rejected("+1", ErrorCode::json_syntax, "unexpected character");
  check_rejected("tru", ErrorCode::json_syntax, "unexpected character");
  check_rejected("NaN", ErrorCode::json_syntax, "unexpected character");
  check_rejected("\"abc", ErrorCode::json_syntax, "unterminated string");
  check_rejected("\"a\tb\"", ErrorCode::json_syntax, "control character");
  check_rejected(R"("\x")", ErrorCode::json_syntax, "invalid escape");
  check_rejected(R"("\u12")", ErrorCode::json_syntax, "\\u escape");
  check_rejected(R"("\ud800")", ErrorCode::json_syntax, "unpaired surrogate");
  check_rejected(R"("\udc00\ud800")", ErrorCode::json_syntax, "unpaired surrogate");
  check_rejected(std::string_view("[1]\0", 4), ErrorCode::json_syntax, "NUL byte at offset 3");
  check_rejected("\"\xff\"", ErrorCode::invalid_utf8, "bad byte at offset 1");
  check_rejected(R"({"a": 1, "b": {"c": 1, "c": 2}})", ErrorCode::json_duplicate_key, "duplicate key 'c'");
  check_rejected("1e999", ErrorCode::non_finite_number, "overflows a double");
  check_rejected("-1e999", ErrorCode::non_finite_number, "overflows a double");
  check_rejected(std::string(17, '[') + std::string(17, ']'), ErrorCode::limit_exceeded, "nests deeper than 16 levels");
  CHECK(parse(std::string(16, '[') + std::string(16, ']')).is_array());
  // However deep a caller allows, the recursion stops at json::max_depth.
  const std::string deep = std::string(json::max_depth + 1, '[') + std::string(json::max_depth + 1, ']');
  CHECK_THROWS_WITH_AS(parse_json_strict(deep, "doc", 1 << 30), doctest::Contains("nests deeper than 1024 levels"), Error);
  CHECK(parse_json_strict(deep.substr(1, 2 * json::max_depth), "doc", 1 << 30).is_array());
}

TEST_CASE("json: attributes given as nlohmann values keep non-finite numbers a file cannot hold") {
  const AnyOp pad = op_from_json("pad", Json{{"pads", {0, 0}}, {"value", -std::numeric_limits<double>::infinity()}});
  CHECK(std::isinf(rml::get<Pad>(pad).value));
  CHECK(rml::get<Pad>(pad).value < 0);
}
