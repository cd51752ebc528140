// The protobuf wire format, written and read by hand: rml is header-only and
// libprotobuf is not, and a ModelProto needs only varints, 32-bit floats and
// length-delimited fields. The reader is what the structural tests decode
// emitted models with; it checks every length against the bytes it has.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "rml/core/error.hpp"

namespace rml::emit::protobuf {

enum class WireType : std::uint8_t { varint = 0, fixed64 = 1, bytes = 2, fixed32 = 5 };

/// One message being written: append fields in any order.
class Writer {
 public:
  Writer& varint(int field, std::uint64_t value) {
    tag(field, WireType::varint);
    raw_varint(value);
    return *this;
  }
  /// int64 and int32 fields: negative values are ten-byte two's complement varints.
  Writer& int64(int field, std::int64_t value) { return varint(field, static_cast<std::uint64_t>(value)); }
  Writer& float32(int field, float value) {
    tag(field, WireType::fixed32);
    char bytes[4];
    std::memcpy(bytes, &value, 4);
    out_.append(bytes, 4);
    return *this;
  }
  Writer& bytes(int field, std::string_view value) {
    tag(field, WireType::bytes);
    raw_varint(value.size());
    out_.append(value);
    return *this;
  }
  Writer& message(int field, const Writer& nested) { return bytes(field, nested.str()); }
  /// A packed repeated varint field (int32, int64 or bool values).
  Writer& packed(int field, const std::vector<std::int64_t>& values) {
    Writer body;
    for (std::int64_t v : values) body.raw_varint(static_cast<std::uint64_t>(v));
    return bytes(field, body.str());
  }
  const std::string& str() const { return out_; }

 private:
  void tag(int field, WireType type) { raw_varint(static_cast<std::uint64_t>(field) << 3 | static_cast<std::uint64_t>(type)); }
  void raw_varint(std::uint64_t value) {
    while (value >= 0x80) {
      out_.push_back(static_cast<char>(value | 0x80));
      value >>= 7;
    }
    out_.push_back(static_cast<char>(value));
  }
  std::string out_;
};

/// One decoded field: its number, wire type, and value (varint or the bytes).
struct Field {
  int number;
  WireType type;
  std::uint64_t varint = 0;
  std::string_view bytes;
  float as_float() const {
    float f;
    std::memcpy(&f, bytes.data(), 4);
    return f;
  }
};

/// The varint at `at`, which it advances past.
inline std::uint64_t read_varint(std::string_view data, std::size_t& at) {
  std::uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (at >= data.size()) fail(ErrorCode::malformed_model_bytes, "protobuf: varint runs past the end of the message");
    const auto byte = static_cast<std::uint8_t>(data[at++]);
    value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
    if (byte < 0x80) return value;
  }
  fail(ErrorCode::malformed_model_bytes, "protobuf: varint longer than ten bytes");
}

/// Every field of one message, in order. Malformed bytes throw rml::Error.
inline std::vector<Field> read_message(std::string_view data) {
  std::vector<Field> fields;
  std::size_t at = 0;
  auto take = [&](std::uint64_t count) {
    if (count > data.size() - at) fail(ErrorCode::malformed_model_bytes, "protobuf: field of ", count, " bytes runs past the end of the message");
    const std::string_view bytes = data.substr(at, count);
    at += count;
    return bytes;
  };
  while (at < data.size()) {
    const std::uint64_t key = read_varint(data, at);
    Field field{static_cast<int>(key >> 3), static_cast<WireType>(key & 7), 0, {}};
    switch (field.type) {
      case WireType::varint: field.varint = read_varint(data, at); break;
      case WireType::fixed64: field.bytes = take(8); break;
      case WireType::bytes: field.bytes = take(read_varint(data, at)); break;
      case WireType::fixed32: field.bytes = take(4); break;
      default: fail(ErrorCode::malformed_model_bytes, "protobuf: unsupported wire type ", static_cast<int>(field.type));
    }
    fields.push_back(field);
  }
  return fields;
}

}  // namespace rml::emit::protobuf
