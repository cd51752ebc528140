// safetensors reading and writing: exact round trips, canonical dtype
// conversion, and a catalogue of malformed files the reader must reject.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "rml/ir/safetensors.hpp"

namespace {

using rml::DType;
using rml::NamedTensors;
using rml::Tensor;

constexpr const char* source_name = "bad.safetensors";

/// A file from header text and data bytes, with the 8-byte length prefix.
std::string assemble(std::string_view header, std::string_view data = {}) {
  const std::uint64_t length = header.size();
  std::string file(reinterpret_cast<const char*>(&length), sizeof length);
  file += header;
  file += data;
  return file;
}

/// Only the 8-byte length prefix, claiming `length` bytes of header.
std::string length_prefix(std::uint64_t length) {
  return std::string(reinterpret_cast<const char*>(&length), sizeof length);
}

/// The little-endian bytes of `values`.
template <class T>
std::string le_bytes(std::initializer_list<T> values) {
  std::string out;
  for (T value : values) out.append(reinterpret_cast<const char*>(&value), sizeof value);
  return out;
}

/// A header with one tensor "t"; `shape` and `offsets` are JSON text.
std::string one_tensor_header(std::string_view dtype, std::string_view shape, std::string_view offsets) {
  return std::string(R"({"t":{"dtype":")") + std::string(dtype) + R"(","shape":)" + std::string(shape) +
         R"(,"data_offsets":)" + std::string(offsets) + "}}";
}

rml::SafetensorsContents parse(const std::string& file) { return rml::parse_safetensors(file, source_name); }

std::vector<std::uint32_t> float_bits(const Tensor& tensor) {
  std::vector<std::uint32_t> bits;
  for (float value : tensor.values<float>()) bits.push_back(std::bit_cast<std::uint32_t>(value));
  return bits;
}

float from_bits(std::uint32_t bits) { return std::bit_cast<float>(bits); }

/// A fresh directory under the system temp directory, removed afterwards.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("rml_safetensors_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(path))
      names.push_back(entry.path().filename().string());
    return names;
  }
};

NamedTensors sample_tensors() {
  NamedTensors tensors;
  tensors.emplace_back("a_f32", Tensor::from<float>({2, 3}, {from_bits(0x7FC00001), -0.0f,
                                                             std::numeric_limits<float>::infinity(),
                                                             -std::numeric_limits<float>::infinity(),
                                                             from_bits(0x00000001), 1.5f}));
  tensors.emplace_back("b_empty", Tensor(DType::f32, {0}));
  tensors.emplace_back("c_i32", Tensor::from<std::int32_t>({4}, {INT32_MIN, -1, 0, INT32_MAX}));
  tensors.emplace_back("d_scalar", Tensor::scalar(3.25f));
  tensors.emplace_back("e_empty_3d", Tensor(DType::i32, {3, 0, 2}));
  return tensors;
}

}  // namespace

#define CHECK_REJECTED(file, phrase) \
  CHECK_THROWS_WITH_AS(parse(file), doctest::Contains(phrase), rml::Error)

// ---- writing and round trips ----

TEST_CASE("safetensors: f32 and i32 tensors, rank-0 and empty ones, and metadata round-trip bit for bit") {
  const NamedTensors tensors = sample_tensors();
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"note", "\xC3\xBCnicode \xE2\x9C\x93"}, {"", ""}};
  const auto contents = rml::parse_safetensors(rml::serialize_safetensors(tensors, metadata), "x");
  REQUIRE(contents.tensors.size() == tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    CAPTURE(tensors[i].first);
    CHECK(contents.tensors[i].first == tensors[i].first);
    CHECK(contents.tensors[i].second.bitwise_equal(tensors[i].second));
  }
  CHECK(contents.metadata == metadata);
}

TEST_CASE("safetensors: a file written without metadata reads back with empty metadata") {
  const auto contents = rml::parse_safetensors(rml::serialize_safetensors(sample_tensors()), "x");
  CHECK(contents.metadata.empty());
  CHECK(contents.tensors.size() == 5);
}

TEST_CASE("safetensors: no tensors at all round-trips") {
  const auto contents = rml::parse_safetensors(rml::serialize_safetensors({}, {{"k", "v"}}), "x");
  CHECK(contents.tensors.empty());
  CHECK(contents.metadata.at("k") == "v");
}

TEST_CASE("safetensors: serialization is deterministic and stable under a read-write cycle") {
  const std::map<std::string, std::string> metadata = {{"b", "2"}, {"a", "1"}};
  const std::string first = rml::serialize_safetensors(sample_tensors(), metadata);
  CHECK(rml::serialize_safetensors(sample_tensors(), metadata) == first);
  const auto contents = rml::parse_safetensors(first, "x");
  CHECK(rml::serialize_safetensors(contents.tensors, contents.metadata) == first);
}

TEST_CASE("safetensors: the data region starts on a 64-byte boundary, padded with spaces") {
  for (std::size_t name_length = 1; name_length <= 80; ++name_length) {
    CAPTURE(name_length);
    const Tensor tensor = Tensor::from<float>({3}, {1.0f, 2.0f, 3.0f});
    const std::string file = rml::serialize_safetensors({{std::string(name_length, 'n'), tensor}});
    std::uint64_t header_length = 0;
    std::memcpy(&header_length, file.data(), 8);
    CHECK((8 + header_length) % 64 == 0);
    REQUIRE(file.size() == 8 + header_length + tensor.bytes());
    const std::string header = file.substr(8, header_length);
    const std::size_t json_end = header.rfind('}') + 1;
    CHECK(header.find_first_not_of(' ', json_end) == std::string::npos);
    CHECK(header_length - json_end < 64);
    CHECK(std::memcmp(file.data() + 8 + header_length, tensor.raw(), tensor.bytes()) == 0);
  }
}

TEST_CASE("safetensors: the header lists F32 and I32 entries in the given order with contiguous offsets") {
  const NamedTensors tensors = {{"zeta", Tensor::from<float>({2}, {1.0f, 2.0f})},
                                {"alpha", Tensor::from<std::int32_t>({1, 3}, {1, 2, 3})}};
  const std::string file = rml::serialize_safetensors(tensors, {{"k", "v"}});
  std::uint64_t header_length = 0;
  std::memcpy(&header_length, file.data(), 8);
  const auto header = nlohmann::ordered_json::parse(file.substr(8, header_length));
  std::vector<std::string> keys;
  for (auto it = header.begin(); it != header.end(); ++it) keys.push_back(it.key());
  CHECK(keys == std::vector<std::string>{"__metadata__", "zeta", "alpha"});
  CHECK(header["zeta"]["dtype"] == "F32");
  CHECK(header["zeta"]["shape"] == nlohmann::ordered_json::array({2}));
  CHECK(header["zeta"]["data_offsets"] == nlohmann::ordered_json::array({0, 8}));
  CHECK(header["alpha"]["dtype"] == "I32");
  CHECK(header["alpha"]["shape"] == nlohmann::ordered_json::array({1, 3}));
  CHECK(header["alpha"]["data_offsets"] == nlohmann::ordered_json::array({8, 20}));
  CHECK(header["__metadata__"]["k"] == "v");
}

TEST_CASE("safetensors: names and metadata with quotes, backslashes, control characters and UTF-8 round-trip") {
  const std::string name = "a\"b\\c\n\t\x01\x1f/\xc3\xa9\x7f";
  const std::map<std::string, std::string> metadata{{"q\"", "line\nbreak\b\f\r"}, {"\xe2\x82\xac", ""}};
  const std::string file = rml::serialize_safetensors({{name, Tensor::scalar(2.0f)}}, metadata);
  std::uint64_t header_length = 0;
  std::memcpy(&header_length, file.data(), 8);
  const auto header = nlohmann::json::parse(file.substr(8, header_length));  // an independent reader
  CHECK(header.contains(name));
  CHECK(header["__metadata__"].get<std::map<std::string, std::string>>() == metadata);
  const rml::SafetensorsContents back = rml::parse_safetensors(file, "t");
  REQUIRE(back.tensors.size() == 1);
  CHECK(back.tensors[0].first == name);
  CHECK(back.metadata == metadata);
}

TEST_CASE("safetensors: the writer rejects duplicate names, the reserved name __metadata__ and invalid UTF-8") {
  const Tensor tensor = Tensor::scalar(1.0f);
  CHECK_THROWS_WITH_AS(rml::serialize_safetensors({{"w", tensor}, {"w", tensor}}),
                       doctest::Contains("duplicate tensor name 'w'"), rml::Error);
  CHECK_THROWS_WITH_AS(rml::serialize_safetensors({{"__metadata__", tensor}}),
                       doctest::Contains("reserved"), rml::Error);
  CHECK_THROWS_WITH_AS(rml::serialize_safetensors({{"bad\xFF", tensor}}),
                       doctest::Contains("not valid UTF-8"), rml::Error);
  CHECK_THROWS_WITH_AS(rml::serialize_safetensors({{"w", tensor}}, {{"k", "\xC0\xAF"}}),
                       doctest::Contains("not valid UTF-8"), rml::Error);
}

TEST_CASE("safetensors: tensors are returned in data-offset order, not header order") {
  const std::string file = assemble(
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
      le_bytes<float>({2.0f, 1.0f}));
  const auto contents = parse(file);
  REQUIRE(contents.tensors.size() == 2);
  CHECK(contents.tensors[0].first == "b");
  CHECK(contents.tensors[0].second.values<float>()[0] == 2.0f);
  CHECK(contents.tensors[1].first == "a");
  CHECK(contents.tensors[1].second.values<float>()[0] == 1.0f);
}

TEST_CASE("safetensors: a header with no tensors, trailing spaces and no data is read") {
  const auto contents = parse(assemble("{}      "));
  CHECK(contents.tensors.empty());
  CHECK(contents.metadata.empty());
}

TEST_CASE("safetensors: write_safetensors leaves only the finished file, and read_safetensors reads it") {
  TempDir dir;
  const auto path = dir.path / "model.safetensors";
  rml::write_safetensors(path, sample_tensors(), {{"k", "v"}});
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});
  const auto contents = rml::read_safetensors(path);
  REQUIRE(contents.tensors.size() == 5);
  CHECK(contents.tensors[2].second.bitwise_equal(sample_tensors()[2].second));
  CHECK(contents.metadata.at("k") == "v");

  // Overwriting replaces the file whole and still leaves no temporary.
  rml::write_safetensors(path, {{"only", Tensor::scalar(7)}});
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});
  const auto replaced = rml::read_safetensors(path);
  REQUIRE(replaced.tensors.size() == 1);
  CHECK(replaced.tensors[0].second.values<std::int32_t>()[0] == 7);
}

TEST_CASE("safetensors: writing into a nonexistent directory throws and creates nothing") {
  TempDir dir;
  const auto missing = dir.path / "missing";
  CHECK_THROWS_AS(rml::write_safetensors(missing / "model.safetensors", sample_tensors()), rml::Error);
  CHECK_FALSE(std::filesystem::exists(missing));
  CHECK(dir.entries().empty());
}

TEST_CASE("safetensors: a write the serializer rejects names the path and creates no file") {
  TempDir dir;
  const auto path = dir.path / "dup.safetensors";
  const Tensor tensor = Tensor::scalar(1.0f);
  CHECK_THROWS_WITH_AS(rml::write_safetensors(path, {{"w", tensor}, {"w", tensor}}),
                       doctest::Contains("dup.safetensors"), rml::Error);
  CHECK(dir.entries().empty());
}

TEST_CASE("safetensors: reading a missing file throws rml::Error") {
  TempDir dir;
  CHECK_THROWS_AS(rml::read_safetensors(dir.path / "absent.safetensors"), rml::Error);
}

// ---- canonical conversion of the other dtypes ----

TEST_CASE("safetensors: F16 converts to f32 exactly, including subnormals, infinities and NaN") {
  const std::string data = le_bytes<std::uint16_t>(
      {0x3C00, 0xC000, 0x7C00, 0xFC00, 0x0001, 0x03FF, 0x8000, 0x7BFF, 0x3555, 0x7E00, 0x7C01});
  const auto contents = parse(assemble(one_tensor_header("F16", "[11]", "[0,22]"), data));
  const Tensor& t = contents.tensors.at(0).second;
  REQUIRE(t.dtype() == DType::f32);
  CHECK(t.shape() == rml::Shape{11});
  CHECK(t.values<float>()[0] == 1.0f);
  CHECK(t.values<float>()[1] == -2.0f);
  CHECK(t.values<float>()[4] == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(t.values<float>()[7] == 65504.0f);               // largest finite
  CHECK(t.values<float>()[8] == 0.333251953125f);        // 2^-2 * (1 + 341/1024)
  CHECK(float_bits(t) == std::vector<std::uint32_t>{
                             0x3F800000, 0xC0000000, 0x7F800000, 0xFF800000,
                             0x33800000,  // 2^-24
                             0x387FC000,  // 1023 * 2^-24, the largest subnormal
                             0x80000000,  // -0
                             0x477FE000, 0x3EAAA000,
                             0x7FC00000,  // quiet NaN
                             0x7F802000,  // NaN payload kept
                         });
}

TEST_CASE("safetensors: BF16 converts to f32 exactly, including subnormals, infinities and NaN") {
  const std::string data = le_bytes<std::uint16_t>({0x3F80, 0xC040, 0x7F80, 0xFF80, 0x0001, 0x8000, 0x7FC1});
  const auto contents = parse(assemble(one_tensor_header("BF16", "[7]", "[0,14]"), data));
  const Tensor& t = contents.tensors.at(0).second;
  REQUIRE(t.dtype() == DType::f32);
  CHECK(t.values<float>()[0] == 1.0f);
  CHECK(t.values<float>()[1] == -3.0f);
  CHECK(float_bits(t) == std::vector<std::uint32_t>{0x3F800000, 0xC0400000, 0x7F800000, 0xFF800000,
                                                    0x00010000, 0x80000000, 0x7FC10000});
}

TEST_CASE("safetensors: F64 converts to the nearest f32, overflowing to infinity") {
  const std::string data = le_bytes<double>({1.5, -0.1, 1e300, -1e300, 1e-50, -0.0,
                                             std::numeric_limits<double>::quiet_NaN(), 16777217.0});
  const auto contents = parse(assemble(one_tensor_header("F64", "[2,4]", "[0,64]"), data));
  const Tensor& t = contents.tensors.at(0).second;
  REQUIRE(t.dtype() == DType::f32);
  CHECK(t.shape() == rml::Shape{2, 4});
  const auto v = t.values<float>();
  CHECK(v[0] == 1.5f);
  CHECK(v[1] == -0.1f);
  CHECK(v[2] == std::numeric_limits<float>::infinity());
  CHECK(v[3] == -std::numeric_limits<float>::infinity());
  CHECK(std::bit_cast<std::uint32_t>(v[4]) == 0x00000000);
  CHECK(std::bit_cast<std::uint32_t>(v[5]) == 0x80000000);
  CHECK(std::isnan(v[6]));
  CHECK(v[7] == 16777216.0f);  // ties round to even
}

TEST_CASE("safetensors: I64 converts to i32 when every value fits") {
  const std::string data = le_bytes<std::int64_t>({-5, 0, INT32_MAX, INT32_MIN});
  const auto contents = parse(assemble(one_tensor_header("I64", "[2,2]", "[0,32]"), data));
  const Tensor& t = contents.tensors.at(0).second;
  REQUIRE(t.dtype() == DType::i32);
  CHECK(std::vector<std::int32_t>(t.values<std::int32_t>().begin(), t.values<std::int32_t>().end()) ==
        std::vector<std::int32_t>{-5, 0, INT32_MAX, INT32_MIN});
}

TEST_CASE("safetensors: an I64 value outside the i32 range is rejected, naming the tensor") {
  const std::string too_big = le_bytes<std::int64_t>({0, std::int64_t{INT32_MAX} + 1});
  CHECK_REJECTED(assemble(one_tensor_header("I64", "[2]", "[0,16]"), too_big),
                 "bad.safetensors: tensor 't': I64 value 2147483648 at index 1 is outside the i32 range");
  const std::string too_small = le_bytes<std::int64_t>({std::int64_t{INT32_MIN} - 1});
  CHECK_REJECTED(assemble(one_tensor_header("I64", "[1]", "[0,8]"), too_small), "outside the i32 range");
}

TEST_CASE("safetensors: BOOL converts to 0.0 and 1.0, and a byte other than 0 or 1 is rejected") {
  const auto contents = parse(assemble(one_tensor_header("BOOL", "[4]", "[0,4]"), std::string("\0\1\1\0", 4)));
  const Tensor& t = contents.tensors.at(0).second;
  REQUIRE(t.dtype() == DType::f32);
  CHECK(std::vector<float>(t.values<float>().begin(), t.values<float>().end()) ==
        std::vector<float>{0.0f, 1.0f, 1.0f, 0.0f});
  CHECK_REJECTED(assemble(one_tensor_header("BOOL", "[2]", "[0,2]"), std::string("\1\2", 2)),
                 "neither 0 nor 1");
}

// ---- malformed files ----

TEST_CASE("safetensors: a file shorter than the 8-byte length prefix is rejected") {
  for (std::size_t size = 0; size < 8; ++size) CHECK_REJECTED(std::string(size, '\0'), "too short");
}

TEST_CASE("safetensors: a header length past the end of file is rejected") {
  CHECK_REJECTED(length_prefix(100) + "{}", "runs past the end of the file");
  CHECK_REJECTED(length_prefix(3) + "{}", "runs past the end of the file");
}

TEST_CASE("safetensors: a header length over 100 MB is rejected before anything is allocated") {
  CHECK_REJECTED(length_prefix(100'000'001) + "{}", "exceeds the 100000000-byte limit");
  CHECK_REJECTED(length_prefix(UINT64_MAX) + "{}", "exceeds the 100000000-byte limit");
}

TEST_CASE("safetensors: a header that is not valid UTF-8 is rejected") {
  CHECK_REJECTED(assemble("{\"t\xFF\":1}"), "not valid UTF-8");
  CHECK_REJECTED(assemble(R"({"__metadata__":{"k":")" "\xC0\xAF" R"("}})"), "not valid UTF-8");  // overlong
  CHECK_REJECTED(assemble(R"({"__metadata__":{"k":")" "\xED\xA0\x80" R"("}})"), "not valid UTF-8");  // surrogate
  CHECK_REJECTED(assemble("{\"k\":\"\xE2\x9C"), "not valid UTF-8");  // cut mid-character
}

TEST_CASE("safetensors: a header that does not start with '{' is rejected") {
  CHECK_REJECTED(assemble(""), "does not start with '{'");
  CHECK_REJECTED(assemble(" {}"), "does not start with '{'");
  CHECK_REJECTED(assemble("[]"), "does not start with '{'");
}

TEST_CASE("safetensors: a header that is not valid JSON is rejected") {
  CHECK_REJECTED(assemble(R"({"t": )"), "not valid JSON");
  CHECK_REJECTED(assemble("{} x"), "not valid JSON");
  CHECK_REJECTED(assemble(std::string("{}\0", 3)), "not valid JSON");
  CHECK_REJECTED(assemble(std::string("{}\0{\"t\":5}", 11)), "not valid JSON");
  CHECK_REJECTED(assemble(R"({"t": 1e999})"), "not valid JSON");
}

TEST_CASE("safetensors: a duplicate key at any depth is rejected") {
  const std::string entry = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  CHECK_REJECTED(assemble(R"({"t":)" + entry + R"(,"t":)" + entry + "}", le_bytes<float>({1.0f})),
                 "duplicate key 't'");
  CHECK_REJECTED(assemble(R"({"t":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                          le_bytes<float>({1.0f})),
                 "duplicate key 'dtype'");
  CHECK_REJECTED(assemble(R"({"__metadata__":{"k":"a","k":"b"}})"), "duplicate key 'k'");
}

TEST_CASE("safetensors: a header nested deeper than any valid header is rejected") {
  CHECK_REJECTED(assemble(R"({"t":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})"), "nests deeper");
  CHECK_REJECTED(assemble("{\"t\":" + std::string(100000, '[') + std::string(100000, ']') + "}"),
                 "nests deeper");
}

TEST_CASE("safetensors: an unknown dtype is rejected, naming the file and the tensor") {
  CHECK_REJECTED(assemble(R"({"weight":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}})", "abcd"),
                 "bad.safetensors: tensor 'weight': unknown dtype 'Q7'");
  CHECK_REJECTED(assemble(one_tensor_header("f32", "[1]", "[0,4]"), "abcd"), "unknown dtype");
  CHECK_REJECTED(assemble(R"({"t":{"dtype":5,"shape":[1],"data_offsets":[0,4]}})", "abcd"),
                 "dtype must be a string");
}

TEST_CASE("safetensors: a dtype the format defines but rml cannot hold is rejected as unsupported") {
  for (const char* dtype : {"U8", "I8", "U16", "I16", "U32", "U64", "F8_E4M3", "F8_E5M2"}) {
    CAPTURE(dtype);
    CHECK_REJECTED(assemble(one_tensor_header(dtype, "[1]", "[0,1]"), "a"), "unsupported dtype");
  }
}

TEST_CASE("safetensors: a negative or non-integer dimension is rejected") {
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[-1]", "[0,0]")), "shape dimension -1 is negative");
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[2.0]", "[0,8]"), "abcdefgh"),
                 "must be a non-negative integer");
  CHECK_REJECTED(assemble(one_tensor_header("F32", R"(["2"])", "[0,8]"), "abcdefgh"),
                 "must be a non-negative integer");
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[18446744073709551615]", "[0,0]")), "is too large");
  CHECK_REJECTED(assemble(one_tensor_header("F32", "2", "[0,8]"), "abcdefgh"), "shape must be an array");
}

TEST_CASE("safetensors: a shape whose element count overflows, or whose byte length would, is rejected") {
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[4294967296,4294967296]", "[0,0]")), "overflows");
  // 2^61 f32 elements are 2^63 bytes: refused by the element limit before any byte arithmetic.
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[2305843009213693952]", "[0,0]")),
                 "more than the 2^58 any tensor may have");
}

TEST_CASE("safetensors: data_offsets whose byte length is not elements times dtype size are rejected") {
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[2]", "[0,4]"), "abcd"), "elements need 8");
  // A huge shape with tiny offsets fails here, before any allocation.
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[1000000000000]", "[0,4]"), "abcd"), "elements need");
}

TEST_CASE("safetensors: data_offsets past the end of the data region are rejected") {
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[1]", "[0,4]"), "ab"), "past the end of the data region");
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[1]", "[4611686018427387904,4611686018427387908]")),
                 "past the end of the data region");
}

TEST_CASE("safetensors: malformed data_offsets are rejected") {
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[1]", "[4,0]"), "abcd"), "begin 4 is greater than end 0");
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[1]", "[0]"), "abcd"), "data_offsets must be [begin, end]");
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[1]", "[0,4,8]"), "abcd"), "data_offsets must be [begin, end]");
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[1]", R"("0,4")"), "abcd"), "data_offsets must be [begin, end]");
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[1]", "[-4,0]"), "abcd"), "data_offsets begin -4 is negative");
}

TEST_CASE("safetensors: overlapping tensors are rejected") {
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  CHECK_REJECTED(assemble(header, "abcdefgh"), "overlaps tensor 'a'");
  const std::string same = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                           R"("b":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})";
  CHECK_REJECTED(assemble(same, "abcd"), "tensor 'b': data [0, 4) overlaps tensor 'a'");
  // Equal offsets keep header order: the later entry is the one named as overlapping.
  const std::string swapped = R"({"b":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},)"
                              R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  CHECK_REJECTED(assemble(swapped, "abcd"), "tensor 'a': data [0, 4) overlaps tensor 'b'");
}

TEST_CASE("safetensors: a gap between tensors, or before the first, is rejected") {
  const std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
  CHECK_REJECTED(assemble(header, "abcdefghijkl"), "tensor 'b': gap of 4 bytes");
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[1]", "[4,8]"), "abcdefgh"), "gap of 4 bytes");
}

TEST_CASE("safetensors: trailing bytes after the last tensor are rejected") {
  CHECK_REJECTED(assemble(one_tensor_header("F32", "[1]", "[0,4]"), "abcdef"), "2 trailing bytes");
  CHECK_REJECTED(assemble("{}", "x"), "1 trailing bytes");
}

TEST_CASE("safetensors: an entry that is not an object with exactly dtype, shape and data_offsets is rejected") {
  CHECK_REJECTED(assemble(R"({"t":5})"), "tensor 't': entry is not an object");
  CHECK_REJECTED(assemble(R"({"t":[1,2]})"), "entry is not an object");
  CHECK_REJECTED(assemble(R"({"t":{"dtype":"F32","shape":[1]}})", "abcd"), "missing key 'data_offsets'");
  CHECK_REJECTED(assemble(R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", "abcd"),
                 "unexpected key 'x'");
}

TEST_CASE("safetensors: __metadata__ that is not an object of strings is rejected") {
  CHECK_REJECTED(assemble(R"({"__metadata__":"v"})"), "__metadata__ must be an object");
  CHECK_REJECTED(assemble(R"({"__metadata__":{"k":1}})"), "__metadata__ value for 'k' is not a string");
}

TEST_CASE("safetensors: every truncation and single-byte corruption of a valid file is read or rejected cleanly") {
  const std::string file = rml::serialize_safetensors(
      {{"w", Tensor::from<float>({2}, {1.0f, 2.0f})}, {"i", Tensor::from<std::int32_t>({1}, {3})}}, {{"k", "v"}});
  int rejected = 0;
  auto try_parse = [&](const std::string& bytes) {
    try {
      (void)parse(bytes);
    } catch (const rml::Error&) {
      ++rejected;
    }  // anything else escapes and fails the test
  };
  for (std::size_t size = 0; size < file.size(); ++size) try_parse(file.substr(0, size));
  for (std::size_t at = 0; at < file.size(); ++at)
    for (char replacement : {'\0', '\xFF', '-', '9', '{', '"', ' '}) {
      std::string corrupted = file;
      corrupted[at] = replacement;
      try_parse(corrupted);
    }
  CHECK(rejected > 0);
}
