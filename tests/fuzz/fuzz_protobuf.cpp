// libFuzzer harness: the protobuf decoder rml uses to read ONNX models back
// (emit/protobuf.hpp), on arbitrary bytes read as an ONNX ModelProto. Like an
// ONNX reader it follows the schema: a field that onnx.proto declares as a
// message is decoded as one (recursively: graphs inside attributes inside
// nodes inside graphs), every other field is left as bytes. Descending into
// strings as well made almost every input throw at every level, which held
// the harness to some 600 executions a second.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "rml/emit/protobuf.hpp"

namespace {

namespace pb = rml::emit::protobuf;

enum class Message { model, graph, node, attribute, tensor, segment, value_info, type, tensor_type, shape, dimension, opset, entry, other };

/// The message type of field `number` of a `parent`, per onnx.proto; `other` when it is not a message.
Message field_message(Message parent, int number) {
  using M = Message;
  using Table = std::initializer_list<std::pair<int, Message>>;
  auto find = [number](Table table) {
    for (const auto& [field, type] : table)
      if (field == number) return type;
    return M::other;
  };
  switch (parent) {
    case M::model: return find({{7, M::graph}, {8, M::opset}, {14, M::entry}});
    case M::graph: return find({{1, M::node}, {5, M::tensor}, {11, M::value_info}, {12, M::value_info}, {13, M::value_info}});
    case M::node: return find({{5, M::attribute}});
    case M::attribute: return find({{5, M::tensor}, {6, M::graph}, {10, M::tensor}, {11, M::graph}, {14, M::type}});
    case M::tensor: return find({{3, M::segment}, {13, M::entry}});
    case M::value_info: return find({{2, M::type}});
    case M::type: return find({{1, M::tensor_type}});
    case M::tensor_type: return find({{2, M::shape}});
    case M::shape: return find({{1, M::dimension}});
    default: return M::other;
  }
}

void decode(std::string_view bytes, Message type, int depth) {
  if (depth == 0) return;
  for (const pb::Field& field : pb::read_message(bytes)) {
    const Message child = field_message(type, field.number);
    if (child != Message::other && field.type == pb::WireType::bytes) decode(field.bytes, child, depth - 1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    decode(std::string_view(reinterpret_cast<const char*>(data), size), Message::model, 16);
  } catch (const rml::Error&) {  // malformed bytes are refused with an rml::Error; anything else is a finding
  }
  return 0;
}
