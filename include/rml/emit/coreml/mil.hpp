// The CoreML messages the converter writes, on the protobuf wire format
// (emit/protobuf.hpp): a Model (Model.proto) whose mlProgram is a MIL
// Program (MIL.proto) with one function, "main". Field numbers are those of
// coremltools 9.0's CoreML.Specification and CoreML.Specification.MILSpec
// packages; each is named where it is written. A protobuf map is a repeated
// entry message with the key as field 1 and the value as field 2.
#pragma once

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "rml/emit/protobuf.hpp"
#include "rml/ir/graph.hpp"

namespace rml::emit::coreml {

using protobuf::Writer;

/// MILSpec.DataType.
enum class MilType : int { boolean = 1, string = 2, f32 = 11, i32 = 23 };

inline MilType mil_type(DType dtype) { return dtype == DType::f32 ? MilType::f32 : MilType::i32; }

/// A MIL tensor's type: an rml TensorType, or a bool tensor (comparisons).
struct MilTensor {
  MilType type;
  Shape shape;
  MilTensor(MilType type, Shape shape) : type(type), shape(std::move(shape)) {}
  MilTensor(DType dtype, Shape shape) : type(mil_type(dtype)), shape(std::move(shape)) {}
  MilTensor(const TensorType& t) : type(mil_type(t.dtype)), shape(t.shape) {}  // NOLINT: implicit on purpose
};

/// MILSpec.ValueType holding a TensorType (rank 0: a scalar).
inline Writer value_type(MilType type, const Shape& shape) {
  Writer tensor;
  tensor.varint(1, static_cast<int>(type));  // dataType
  if (!shape.empty()) tensor.int64(2, static_cast<std::int64_t>(shape.size()));  // rank
  for (std::int64_t d : shape)
    tensor.message(3, Writer().message(1, Writer().varint(1, static_cast<std::uint64_t>(d))));  // dimensions: constant.size
  return Writer().message(1, tensor);  // tensorType
}

/// MILSpec.NamedValueType.
inline Writer named_type(std::string_view name, MilType type, const Shape& shape) {
  return Writer().bytes(1, name).message(2, value_type(type, shape));
}

/// The immediate values a const op may hold, as MILSpec.TensorValue.
inline Writer floats(const std::vector<float>& values) {
  std::string packed(values.size() * 4, '\0');
  if (!values.empty()) std::memcpy(packed.data(), values.data(), packed.size());
  return Writer().message(1, Writer().bytes(1, packed));  // floats.values, packed
}
inline Writer ints(const std::vector<std::int64_t>& values) { return Writer().message(2, Writer().packed(1, values)); }
inline Writer bools(bool value) { return Writer().message(3, Writer().packed(1, {value})); }
inline Writer strings(std::string_view value) { return Writer().message(4, Writer().bytes(1, value)); }

/// MILSpec.Value: an immediate tensor of `type` and `shape`.
inline Writer immediate(MilType type, const Shape& shape, const Writer& tensor_value) {
  return Writer().message(2, value_type(type, shape)).message(3, Writer().message(1, tensor_value));  // type, immediateValue.tensor
}
/// MILSpec.Value: a tensor stored in the weight blob file at `offset` (its metadata).
inline Writer blob_value(MilType type, const Shape& shape, std::string_view file, std::uint64_t offset) {
  return Writer().message(2, value_type(type, shape)).message(5, Writer().bytes(1, file).varint(2, offset));  // blobFileValue
}

/// A map<string, V> entry.
inline Writer entry(std::string_view key, const Writer& value) { return Writer().bytes(1, key).message(2, value); }

/// MILSpec.Operation. Inputs bind parameter names to value names (a list
/// for variadic parameters); every op carries its name as an attribute, as
/// coremltools writes them.
struct Operation {
  std::string type;
  std::vector<std::pair<std::string, std::vector<std::string>>> inputs;
  std::vector<Writer> outputs;  // NamedValueType
  std::vector<std::pair<std::string, Writer>> attributes;  // besides "name"

  Writer message(std::string_view name) const {
    Writer op;
    op.bytes(1, type);
    for (const auto& [parameter, names] : inputs) {
      Writer argument;
      for (const std::string& n : names) argument.message(1, Writer().bytes(1, n));  // arguments: Binding.name
      op.message(2, entry(parameter, argument));
    }
    for (const Writer& out : outputs) op.message(3, out);
    for (const auto& [key, value] : attributes) op.message(5, entry(key, value));
    op.message(5, entry("name", immediate(MilType::string, {}, strings(name))));
    return op;
  }
};

/// ArrayFeatureType.ArrayDataType.
inline std::uint64_t array_data_type(DType dtype) { return dtype == DType::f32 ? 65568 : 131104; }

/// FeatureDescription: a multi-array input or output.
inline Writer feature(std::string_view name, const TensorType& type) {
  Writer array;
  for (std::int64_t d : type.shape) array.int64(1, d);  // shape
  array.varint(2, array_data_type(type.dtype));         // dataType
  return Writer().bytes(1, name).message(3, Writer().message(5, array));  // name, type.multiArrayType
}

}  // namespace rml::emit::coreml
