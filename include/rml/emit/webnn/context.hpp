// What a WebNN lowering writes into: the body of a JavaScript function that
// replays the graph through the browser's MLGraphBuilder, one statement per
// builder call, and the weights sidecar its constants are read from. Every
// rml value is a JavaScript constant `v<id>`; operands a lowering adds are
// `t<n>` from one counter. Small constants (shapes are attributes in WebNN;
// these are scalars and masks) are written inline.
#pragma once

#include <cmath>
#include <cstring>
#include <iomanip>
#include <set>
#include <sstream>

#include "rml/emit/contract.hpp"
#include "rml/ir/json_strict.hpp"  // json_detail::quoted

namespace rml::emit::webnn {

inline std::string_view data_type(DType dtype) { return dtype == DType::f32 ? "float32" : "int32"; }

/// A JavaScript string literal (JSON's escaping is valid JavaScript).
inline std::string quoted(std::string_view text) { return json_detail::quoted(text); }

/// [a, b, c]
template <class Numbers>
std::string list(const Numbers& values) {
  std::string out = "[";
  for (const auto& v : values) out += (out.size() > 1 ? ", " : "") + std::to_string(v);
  return out + "]";
}

/// A float as JavaScript reads it back to the same f32 (and the non-finite ones).
inline std::string number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  std::ostringstream out;
  out << std::setprecision(17) << value;
  return out.str();
}

/// The operand descriptor `{dataType, shape}`.
inline std::string descriptor(const TensorType& type) {
  return detail::concat("{dataType: \"", data_type(type.dtype), "\", shape: ", list(type.shape), "}");
}

class Context {
 public:
  explicit Context(const Graph& graph) : graph_(graph) {}

  const Graph& graph() const { return graph_; }
  const TensorType& type(ValueId v) const { return graph_.values[v].type; }
  bool is_constant(ValueId v) const { return graph_.values[v].kind == ValueKind::constant; }

  /// The operand holding rml value `v`; a constant is declared on first use.
  std::string operand(ValueId v) {
    const std::string name = detail::concat("v", v);
    if (is_constant(v) && declared_.insert(v).second) {
      const Tensor& data = *graph_.values[v].data;
      const std::size_t offset = (sidecar_.size() + 15) / 16 * 16;  // typed arrays need aligned offsets
      sidecar_.resize(offset, '\0');
      sidecar_.append(reinterpret_cast<const char*>(data.raw()), data.bytes());
      line(detail::concat("const ", name, " = constant(", descriptor(type(v)), ", ", offset, ", ",
                          data.bytes() / 4, ");"));
    }
    return name;
  }
  std::string input(const Node& node, std::size_t i) { return operand(node.inputs[i]); }
  std::string output(const Node& node, std::size_t i = 0) const { return detail::concat("v", node.outputs[i]); }

  /// `const OUT = b.CALL;` for rml value OUT (a node output).
  void assign(const std::string& out, const std::string& call) { line(detail::concat("const ", out, " = b.", call, ";")); }
  /// A builder call whose result is a new operand, returned.
  std::string helper(const std::string& call) {
    const std::string name = detail::concat("t", counter_++);
    assign(name, call);
    return name;
  }
  /// A small constant written inline.
  std::string scalar(double value, DType dtype, const Shape& shape = {}) {
    const std::string array = dtype == DType::f32 ? "Float32Array" : "Int32Array";
    return helper(detail::concat("constant(", descriptor({dtype, shape}), ", new ", array, "([", number(value), "]))"));
  }
  std::string floats(const Shape& shape, const std::vector<float>& values) {
    std::string data;
    for (float v : values) data += (data.empty() ? "" : ", ") + number(v);
    return helper(detail::concat("constant(", descriptor({DType::f32, shape}), ", new Float32Array([", data, "]))"));
  }

  void line(const std::string& text) { body_ += "  " + text + "\n"; }
  const std::string& body() const { return body_; }
  const std::string& sidecar() const { return sidecar_; }

 private:
  const Graph& graph_;
  std::set<ValueId> declared_;
  std::string body_, sidecar_;
  std::size_t counter_ = 0;
};

}  // namespace rml::emit::webnn
