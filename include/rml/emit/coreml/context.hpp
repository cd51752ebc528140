// What a CoreML lowering writes into: the operations of the MIL program's
// main block, in order, and the weight blob its large constants live in.
//
// Names. MIL names are identifiers ([A-Za-z_][A-Za-z0-9_@]*), unique in the
// program: rml's names are made so (other characters become '_', a leading
// digit gets a '_' before it, a clash gets a numeric suffix), the graph's
// inputs and outputs first, so that they keep their rml names where those
// are identifiers already. Values that have no name of their own are `v<id>`;
// values a lowering adds are `t<n>`; the constants of op parameters `c<n>`.
//
// Boundary. MIL programs take and give no rank-0 tensors: a scalar input is
// declared [1] and reshaped to a scalar first, a scalar output reshaped to
// [1] last. An output that is not a node's (an input, a constant, or a value
// named twice) is an identity op, as each output needs its own op.
#pragma once

#include <cctype>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "rml/emit/contract.hpp"
#include "rml/emit/coreml/mil.hpp"

namespace rml::emit::coreml {

/// The MIL weight blob file (weights/weight.bin): a 64-byte header (count,
/// version 2), then per tensor a 64-byte metadata record (sentinel
/// 0xDEADBEEF, data type, size, data offset) and the data, each 64-byte
/// aligned. Values reference a tensor by its metadata record's offset.
class WeightBlob {
 public:
  static constexpr std::string_view file_name = "@model_path/weights/weight.bin";

  /// Appends an f32 tensor; returns its metadata offset.
  std::uint64_t add(const Tensor& tensor) {
    const std::uint64_t at = aligned(bytes_.size());
    bytes_.resize(at + 64, '\0');
    put<std::uint32_t>(at, 0xDEADBEEF);
    put<std::uint32_t>(at + 4, 2);  // BlobDataType Float32
    put<std::uint64_t>(at + 8, tensor.bytes());
    put<std::uint64_t>(at + 16, at + 64);
    bytes_.append(reinterpret_cast<const char*>(tensor.raw()), tensor.bytes());
    ++count_;
    return at;
  }
  bool empty() const { return count_ == 0; }
  std::string finish() {
    bytes_.resize(aligned(bytes_.size()), '\0');
    put<std::uint32_t>(0, count_);
    put<std::uint32_t>(4, 2);  // version
    return std::move(bytes_);
  }

 private:
  static std::uint64_t aligned(std::uint64_t n) { return (n + 63) / 64 * 64; }
  template <class T>
  void put(std::uint64_t at, T value) {  // little-endian, as x86-64 stores it
    std::memcpy(bytes_.data() + at, &value, sizeof value);
  }
  std::string bytes_ = std::string(64, '\0');
  std::uint32_t count_ = 0;
};

/// One MIL input binding: a parameter and the value names bound to it.
using Inputs = std::vector<std::pair<std::string, std::vector<std::string>>>;

class Context {
 public:
  Context(const Graph& graph, const ConvertOptions& options) : graph_(graph), options_(options) {
    for (const NamedValue& in : graph.inputs) input_names_.push_back(claim(in.name));
    for (const NamedValue& out : graph.outputs) {
      output_names_.push_back(claim(out.name));
      const Value& value = graph.values[out.value];
      if (value.kind == ValueKind::node_output && !value.type.shape.empty() && !names_.contains(out.value))
        names_[out.value] = output_names_.back();
    }
  }

  const Graph& graph() const { return graph_; }
  const TensorType& type(ValueId v) const { return graph_.values[v].type; }
  bool is_constant(ValueId v) const { return graph_.values[v].kind == ValueKind::constant; }

  /// The function's inputs; a scalar input is reshaped from its [1] boundary form.
  std::vector<Writer> declare_inputs() {
    std::vector<Writer> declared;
    for (std::size_t i = 0; i < graph_.inputs.size(); ++i) {
      const ValueId v = graph_.inputs[i].value;
      const TensorType& t = type(v);
      declared.push_back(named_type(input_names_[i], mil_type(t.dtype), boundary_shape(t.shape)));
      if (!t.shape.empty()) names_[v] = input_names_[i];
      else names_[v] = emit("reshape", {{"x", {input_names_[i]}}, {"shape", {ints({}, {0})}}}, fresh("v", v), t);
    }
    return declared;
  }

  /// The block's outputs, after the ops that give the ones no node named.
  std::vector<std::string> declare_outputs() {
    for (std::size_t i = 0; i < graph_.outputs.size(); ++i) {
      const ValueId v = graph_.outputs[i].value;
      const std::string& name = output_names_[i];
      if (auto named = names_.find(v); named != names_.end() && named->second == name) continue;  // a node's, named for it
      const TensorType& t = type(v);
      if (t.shape.empty()) emit("reshape", {{"x", {operand(v)}}, {"shape", {ints({1}, {1})}}}, name, {t.dtype, {1}});
      else emit("identity", {{"x", {operand(v)}}}, name, t);
    }
    return output_names_;
  }
  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<std::string>& output_names() const { return output_names_; }

  /// The MIL value holding rml value `v`; a constant becomes a const op on first use.
  std::string operand(ValueId v) {
    if (auto found = names_.find(v); found != names_.end()) return found->second;
    const Value& value = graph_.values[v];
    if (value.kind != ValueKind::constant) fail(ErrorCode::internal, "coreml: value ", v, " is used before it is computed");
    const Tensor& data = *value.data;
    const std::string name = value.name.empty() ? fresh("v", v) : claim(value.name);
    const MilType dtype = mil_type(value.type.dtype);
    if (value.type.dtype == DType::f32 && data.bytes() >= options_.external_threshold)
      add_const(name, blob_value(dtype, value.type.shape, WeightBlob::file_name, blob_.add(data)), dtype, value.type.shape);
    else if (value.type.dtype == DType::f32)
      add_const(name, immediate(dtype, value.type.shape, coreml::floats(as_vector<float>(data.values<float>()))), dtype, value.type.shape);
    else
      add_const(name, immediate(dtype, value.type.shape, coreml::ints(as_vector<std::int64_t>(data.values<std::int32_t>()))), dtype,
                value.type.shape);
    return names_[v] = name;
  }
  std::string input(const Node& node, std::size_t i) { return operand(node.inputs[i]); }

  /// The name node output `i` gets (its graph output's name where it has one).
  std::string output(const Node& node, std::size_t i = 0) {
    const ValueId v = node.outputs[i];
    if (auto found = names_.find(v); found != names_.end()) return found->second;
    return names_[v] = fresh("v", v);
  }

  /// Adds an op with one output of `type`, named `out`; returns `out`.
  std::string emit(std::string_view op, Inputs inputs, const std::string& out, const MilTensor& type) {
    return emit_multi(op, std::move(inputs), {{out, type}}).front();
  }
  std::vector<std::string> emit_multi(std::string_view op, Inputs inputs, const std::vector<std::pair<std::string, MilTensor>>& outs) {
    Operation operation{std::string(op), std::move(inputs), {}, {}};
    std::vector<std::string> names;
    for (const auto& [name, t] : outs) {
      operation.outputs.push_back(named_type(name, t.type, t.shape));
      names.push_back(name);
    }
    operations_.push_back(operation.message(names.front()));
    ++ops_;
    return names;
  }
  /// The op computing node output 0.
  void assign(const Node& node, std::string_view op, Inputs inputs) { emit(op, std::move(inputs), output(node), mil_type_of(node.outputs[0])); }
  /// An op whose one output is a new value of `type`.
  std::string helper(std::string_view op, Inputs inputs, const MilTensor& type) {
    return emit(op, std::move(inputs), fresh("t", counter_++), type);
  }

  /// Const ops for op parameters: the name of a new constant.
  std::string ints(const std::vector<std::int64_t>& values, const Shape& shape) {
    return parameter(immediate(MilType::i32, shape, coreml::ints(values)), MilType::i32, shape);
  }
  std::string ints(const std::vector<std::int64_t>& values) { return ints(values, {static_cast<std::int64_t>(values.size())}); }
  std::string int_scalar(std::int64_t value) { return ints({value}, {}); }
  std::string scalar(double value, DType dtype) {
    if (dtype == DType::i32) return int_scalar(static_cast<std::int64_t>(value));
    return parameter(immediate(MilType::f32, {}, coreml::floats({static_cast<float>(value)})), MilType::f32, {});
  }
  std::string floats(const Shape& shape, const std::vector<float>& values) {
    return parameter(immediate(MilType::f32, shape, coreml::floats(values)), MilType::f32, shape);
  }
  std::string boolean(bool value) { return parameter(immediate(MilType::boolean, {}, bools(value)), MilType::boolean, {}); }
  std::string text(std::string_view value) { return parameter(immediate(MilType::string, {}, strings(value)), MilType::string, {}); }

  std::vector<Writer>& operations() { return operations_; }
  std::size_t op_count() const { return ops_; }
  WeightBlob& blob() { return blob_; }

  /// `name` made a MIL identifier.
  static std::string identifier(std::string_view name) {
    std::string out;
    for (const char ch : name) {
      const auto c = static_cast<unsigned char>(ch);
      out += std::isalnum(c) || c == '_' ? ch : '_';
    }
    if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out.insert(0, "_");
    return out;
  }

  /// The boundary form of a shape: [1] for a scalar.
  static Shape boundary_shape(const Shape& shape) { return shape.empty() ? Shape{1} : shape; }

  /// The shape a value has in MIL, whose tensors have rank at most 5: rml's,
  /// except that a higher rank has its leading axes merged into one. Such a
  /// value lies between reshapes and broadcasts that leave those axes alone
  /// (Coreml::refuse_node), where merging them changes no element's place.
  static Shape mil_shape(const Shape& shape) {
    if (shape.size() <= max_rank) return shape;
    const auto kept = shape.end() - (max_rank - 1);
    Shape merged{std::accumulate(shape.begin(), kept, std::int64_t{1}, std::multiplies<>())};
    merged.insert(merged.end(), kept, shape.end());
    return merged;
  }
  TensorType mil_type_of(ValueId v) const { return {type(v).dtype, mil_shape(type(v).shape)}; }
  static constexpr std::size_t max_rank = 5;

 private:
  /// `name` made an identifier no other value has, and taken.
  std::string claim(std::string_view name) {
    const std::string base = identifier(name);
    std::string candidate = base;
    for (std::size_t n = 1; taken_.contains(candidate); ++n) candidate = detail::concat(base, "_", n);
    taken_.insert(candidate);
    return candidate;
  }
  std::string fresh(std::string_view prefix, std::size_t n) { return claim(detail::concat(prefix, n)); }
  template <class To, class From>
  static std::vector<To> as_vector(std::span<const From> values) {
    return std::vector<To>(values.begin(), values.end());
  }
  void add_const(const std::string& name, const Writer& value, MilType type, const Shape& shape) {
    Operation op{"const", {}, {named_type(name, type, shape)}, {{"val", value}}};
    operations_.push_back(op.message(name));
  }
  std::string parameter(const Writer& value, MilType type, const Shape& shape) {
    const std::string name = fresh("c", parameters_++);
    add_const(name, value, type, shape);
    return name;
  }

  const Graph& graph_;
  const ConvertOptions& options_;
  std::vector<std::string> input_names_, output_names_;
  std::map<ValueId, std::string> names_;
  std::set<std::string> taken_;
  std::vector<Writer> operations_;
  WeightBlob blob_;
  std::size_t counter_ = 0, parameters_ = 0, ops_ = 0;
};

}  // namespace rml::emit::coreml
