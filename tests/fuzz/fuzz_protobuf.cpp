// libFuzzer harness: the protobuf decoder rml uses to read ONNX models back
// (emit/protobuf.hpp), on arbitrary bytes, descending into every
// length-delimited field as a nested message as an ONNX reader would.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rml/emit/protobuf.hpp"

namespace {
void decode(std::string_view bytes, int depth) {
  if (depth == 0) return;
  for (const rml::emit::protobuf::Field& field : rml::emit::protobuf::read_message(bytes)) {
    if (field.type != rml::emit::protobuf::WireType::bytes) continue;
    try {
      decode(field.bytes, depth - 1);
    } catch (const rml::Error&) {  // a string or packed numbers, not a message
    }
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    decode(std::string_view(reinterpret_cast<const char*>(data), size), 8);
  } catch (const rml::Error&) {
  }
  return 0;
}
