// Every rml op's WebNN lowering: one MLGraphBuilder call where WebNN has the
// op, the formula where it does not (rsqrt, the tanh GELU, attention, the
// saturating f32 -> i32 cast), and the gaps closed: comparisons give uint8
// (cast to float32), `where` takes a uint8 condition, WebNN's slice has no
// negative strides (the axis is reversed first), gather's indices are made
// non-negative, a counted average pool pads first. WebNN has no top-k: that
// op has no lowering and is refused by name.
#pragma once

#include <numbers>

#include "rml/emit/webnn/context.hpp"

namespace rml::emit {

struct WebNN;

namespace webnn {

/// WebNN methods that compute exactly what the rml op does, input for input.
template <class Op> constexpr std::string_view same_op = "";
template <> constexpr std::string_view same_op<Neg> = "neg";
template <> constexpr std::string_view same_op<Abs> = "abs";
template <> constexpr std::string_view same_op<Exp> = "exp";
template <> constexpr std::string_view same_op<Log> = "log";
template <> constexpr std::string_view same_op<Sqrt> = "sqrt";
template <> constexpr std::string_view same_op<Tanh> = "tanh";
template <> constexpr std::string_view same_op<Sigmoid> = "sigmoid";
template <> constexpr std::string_view same_op<Erf> = "erf";
template <> constexpr std::string_view same_op<Sin> = "sin";
template <> constexpr std::string_view same_op<Cos> = "cos";
template <> constexpr std::string_view same_op<Reciprocal> = "reciprocal";
template <> constexpr std::string_view same_op<Relu> = "relu";
template <> constexpr std::string_view same_op<Add> = "add";
template <> constexpr std::string_view same_op<Sub> = "sub";
template <> constexpr std::string_view same_op<Mul> = "mul";
template <> constexpr std::string_view same_op<Div> = "div";
template <> constexpr std::string_view same_op<Pow> = "pow";
template <> constexpr std::string_view same_op<Maximum> = "max";
template <> constexpr std::string_view same_op<Minimum> = "min";
template <> constexpr std::string_view same_op<MatMul> = "matmul";

/// Comparisons: WebNN gives uint8, rml gives f32 0/1.
template <class Op> constexpr std::string_view comparison = "";
template <> constexpr std::string_view comparison<Eq> = "equal";
template <> constexpr std::string_view comparison<Ne> = "notEqual";
template <> constexpr std::string_view comparison<Lt> = "lesser";
template <> constexpr std::string_view comparison<Le> = "lesserOrEqual";
template <> constexpr std::string_view comparison<Gt> = "greater";
template <> constexpr std::string_view comparison<Ge> = "greaterOrEqual";

inline std::string call(std::string_view method, const std::vector<std::string>& arguments) {
  std::string out = std::string(method) + "(";
  for (std::size_t i = 0; i < arguments.size(); ++i) out += (i ? ", " : "") + arguments[i];
  return out + ")";
}

inline std::vector<std::string> operands(Context& c, const Node& node) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node.inputs.size(); ++i) out.push_back(c.input(node, i));
  return out;
}

/// rml's 1-D matmul operands, as WebNN's matmul takes rank >= 2.
inline std::string matmul(Context& c, const std::string& a, const Shape& a_shape, const std::string& b, const Shape& b_shape) {
  const std::string left = a_shape.size() == 1 ? c.helper(call("reshape", {a, list(Shape{1, a_shape[0]})})) : a;
  const std::string right = b_shape.size() == 1 ? c.helper(call("reshape", {b, list(Shape{b_shape[0], 1})})) : b;
  return call("matmul", {left, right});
}

}  // namespace webnn

template <class Op>
  requires(!webnn::same_op<Op>.empty() && !std::is_same_v<Op, MatMul>)
struct Lowering<WebNN, Op> {
  static void lower(webnn::Context& c, const Node& node, const Op&) {
    c.assign(c.output(node), webnn::call(webnn::same_op<Op>, webnn::operands(c, node)));
  }
};

template <>
struct Lowering<WebNN, MatMul> {
  static void lower(webnn::Context& c, const Node& node, const MatMul&) {
    const Shape &a = c.type(node.inputs[0]).shape, &b = c.type(node.inputs[1]).shape;
    const std::string product = webnn::matmul(c, c.input(node, 0), a, c.input(node, 1), b);
    if (a.size() > 1 && b.size() > 1) return c.assign(c.output(node), product);
    c.assign(c.output(node), webnn::call("reshape", {c.helper(product), webnn::list(c.type(node.outputs[0]).shape)}));
  }
};

template <class Op>
  requires(!webnn::comparison<Op>.empty())
struct Lowering<WebNN, Op> {
  static void lower(webnn::Context& c, const Node& node, const Op&) {
    const std::string truth = c.helper(webnn::call(webnn::comparison<Op>, webnn::operands(c, node)));
    c.assign(c.output(node), webnn::call("cast", {truth, "\"float32\""}));
  }
};

template <>
struct Lowering<WebNN, Rsqrt> {
  static void lower(webnn::Context& c, const Node& node, const Rsqrt&) {
    c.assign(c.output(node), webnn::call("reciprocal", {c.helper(webnn::call("sqrt", {c.input(node, 0)}))}));
  }
};

/// where(cond != 0, a, b): notEqual gives the uint8 condition `where` takes.
template <>
struct Lowering<WebNN, Select> {
  static void lower(webnn::Context& c, const Node& node, const Select&) {
    const TensorType& cond = c.type(node.inputs[0]);
    const std::string truth = c.helper(webnn::call("notEqual", {c.input(node, 0), c.scalar(0, cond.dtype)}));
    c.assign(c.output(node), webnn::call("where", {truth, c.input(node, 1), c.input(node, 2)}));
  }
};

/// A cast to the same dtype is an identity. f32 -> i32 saturates and maps
/// NaN to 0 in rml, where WebNN leaves out-of-range values to the platform.
template <>
struct Lowering<WebNN, Cast> {
  static void lower(webnn::Context& c, const Node& node, const Cast& op) {
    using webnn::call;
    const std::string x = c.input(node, 0);
    if (c.type(node.inputs[0]).dtype == op.to) return c.assign(c.output(node), call("identity", {x}));
    if (op.to == DType::f32) return c.assign(c.output(node), call("cast", {x, "\"float32\""}));
    const std::string finite = c.helper(call("where", {c.helper(call("notEqual", {x, x})), c.scalar(0, DType::f32), x}));
    // The largest f32 below 2^31 converts exactly; 2^31 and above saturate to INT32_MAX.
    const std::string clipped = c.helper(call("clamp", {finite, "{minValue: -2147483648, maxValue: 2147483520}"}));
    const std::string converted = c.helper(call("cast", {clipped, "\"int32\""}));
    const std::string too_large = c.helper(call("greaterOrEqual", {x, c.scalar(2147483648.0, DType::f32)}));
    c.assign(c.output(node), call("where", {too_large, c.scalar(2147483647.0, DType::i32), converted}));
  }
};

template <>
struct Lowering<WebNN, Reshape> {
  static void lower(webnn::Context& c, const Node& node, const Reshape&) {
    c.assign(c.output(node), webnn::call("reshape", {c.input(node, 0), webnn::list(c.type(node.outputs[0]).shape)}));
  }
};

template <>
struct Lowering<WebNN, Transpose> {
  static void lower(webnn::Context& c, const Node& node, const Transpose& op) {
    c.assign(c.output(node), webnn::call("transpose", {c.input(node, 0), "{permutation: " + webnn::list(op.perm) + "}"}));
  }
};

template <>
struct Lowering<WebNN, BroadcastTo> {
  static void lower(webnn::Context& c, const Node& node, const BroadcastTo&) {
    c.assign(c.output(node), webnn::call("expand", {c.input(node, 0), webnn::list(c.type(node.outputs[0]).shape)}));
  }
};

template <>
struct Lowering<WebNN, Concat> {
  static void lower(webnn::Context& c, const Node& node, const Concat& op) {
    std::string inputs = "[";
    for (std::size_t i = 0; i < node.inputs.size(); ++i) inputs += (i ? ", " : "") + c.input(node, i);
    const std::int64_t axis = normalize_axis(op.axis, c.type(node.outputs[0]).shape.size(), "axis");
    c.assign(c.output(node), webnn::call("concat", {inputs + "]", std::to_string(axis)}));
  }
};

/// WebNN's slice takes starts, window sizes (the output has
/// ceil(size / stride) elements) and positive strides: an axis with a
/// negative step is reversed first, and its start counted from the back.
template <>
struct Lowering<WebNN, Slice> {
  static void lower(webnn::Context& c, const Node& node, const Slice& op) {
    const Shape& x = c.type(node.inputs[0]).shape;
    std::vector<std::int64_t> starts, sizes, strides, reversed;
    const auto ranges = op.ranges(x);
    for (std::size_t axis = 0; axis < ranges.size(); ++axis) {
      const auto& r = ranges[axis];
      const bool backwards = r.count > 1 && r.step < 0;
      if (backwards) reversed.push_back(static_cast<std::int64_t>(axis));
      starts.push_back(r.count == 0 ? 0 : backwards ? x[axis] - 1 - r.start : r.start);
      sizes.push_back(r.count == 0 ? 0 : (r.count - 1) * (r.count > 1 ? std::abs(r.step) : 1) + 1);  // within the axis
      strides.push_back(r.count > 1 ? (backwards ? -r.step : r.step) : 1);
    }
    std::string input = c.input(node, 0);
    if (!reversed.empty()) input = c.helper(webnn::call("reverse", {input, "{axes: " + webnn::list(reversed) + "}"}));
    c.assign(c.output(node), webnn::call("slice", {input, webnn::list(starts), webnn::list(sizes), "{strides: " + webnn::list(strides) + "}"}));
  }
};

template <>
struct Lowering<WebNN, Pad> {
  static void lower(webnn::Context& c, const Node& node, const Pad& op) {
    const std::size_t rank = c.type(node.inputs[0]).shape.size();
    const std::vector<std::int64_t> begin(op.pads.begin(), op.pads.begin() + static_cast<std::ptrdiff_t>(rank));
    const std::vector<std::int64_t> end(op.pads.begin() + static_cast<std::ptrdiff_t>(rank), op.pads.end());
    c.assign(c.output(node), webnn::call("pad", {c.input(node, 0), webnn::list(begin), webnn::list(end),
                                                 "{mode: \"constant\", value: " + webnn::number(op.value) + "}"}));
  }
};

/// WebNN's gather takes indices in [0, dim): rml's negative ones get dim added.
template <>
struct Lowering<WebNN, Gather> {
  static void lower(webnn::Context& c, const Node& node, const Gather& op) {
    using webnn::call;
    const Shape& data = c.type(node.inputs[0]).shape;
    const std::int64_t axis = normalize_axis(op.axis, data.size(), "axis");
    const std::string indices = c.input(node, 1);
    const std::string negative = c.helper(call("lesser", {indices, c.scalar(0, DType::i32)}));
    const std::string wrapped = c.helper(call("where", {negative, c.helper(call("add", {indices, c.scalar(static_cast<double>(data[static_cast<std::size_t>(axis)]), DType::i32)})), indices}));
    c.assign(c.output(node), call("gather", {c.input(node, 0), wrapped, "{axis: " + std::to_string(axis) + "}"}));
  }
};

namespace webnn {
template <class Kind> constexpr std::string_view reduction = "";
template <> constexpr std::string_view reduction<SumKind> = "reduceSum";
template <> constexpr std::string_view reduction<MeanKind> = "reduceMean";
template <> constexpr std::string_view reduction<MaxKind> = "reduceMax";
template <> constexpr std::string_view reduction<MinKind> = "reduceMin";
}  // namespace webnn

/// rml's empty axes reduce nothing: an identity.
template <class Kind>
  requires(!webnn::reduction<Kind>.empty())
struct Lowering<WebNN, Reduce<Kind>> {
  static void lower(webnn::Context& c, const Node& node, const Reduce<Kind>& op) {
    if (op.axes.empty()) return c.assign(c.output(node), webnn::call("identity", {c.input(node, 0)}));
    std::vector<std::int64_t> axes;
    for (std::int64_t a : op.axes) axes.push_back(normalize_axis(a, c.type(node.inputs[0]).shape.size(), "axes"));
    c.assign(c.output(node), webnn::call(webnn::reduction<Kind>, {c.input(node, 0), detail::concat("{axes: ", webnn::list(axes),
                                                                                         ", keepDimensions: ", op.keep_dims ? "true" : "false", "}")}));
  }
};

namespace webnn {
/// WebNN's padding order is [top, bottom, left, right]; rml's [top, left, bottom, right].
inline std::string padding(const Ints& p) { return list(std::vector<std::int64_t>{p[0], p[2], p[1], p[3]}); }
}  // namespace webnn

template <>
struct Lowering<WebNN, Conv2d> {
  static void lower(webnn::Context& c, const Node& node, const Conv2d& op) {
    std::string options = detail::concat("{padding: ", webnn::padding(op.pads), ", strides: ", webnn::list(op.strides),
                                         ", dilations: ", webnn::list(op.dilations), ", groups: ", op.groups,
                                         ", inputLayout: \"nchw\", filterLayout: \"oihw\"");
    if (node.inputs.size() == 3) options += ", bias: " + c.input(node, 2);
    c.assign(c.output(node), webnn::call("conv2d", {c.input(node, 0), c.input(node, 1), options + "}"}));
  }
};

namespace webnn {
template <class Op>
std::string pool_options(const Op& op, const Ints& pads) {
  return detail::concat("{windowDimensions: ", list(op.kernel), ", padding: ", padding(pads), ", strides: ", list(op.strides),
                        ", dilations: ", list(op.dilations), ", layout: \"nchw\"}");
}
}  // namespace webnn

/// Padding is ignored by the max, as WebNN's maxPool2d does.
template <>
struct Lowering<WebNN, MaxPool2d> {
  static void lower(webnn::Context& c, const Node& node, const MaxPool2d& op) {
    c.assign(c.output(node), webnn::call("maxPool2d", {c.input(node, 0), webnn::pool_options(op, op.pads)}));
  }
};

/// WebNN's averagePool2d does not count padding; counted padding is padded
/// in (zeros) first and the window then has none.
template <>
struct Lowering<WebNN, AvgPool2d> {
  static void lower(webnn::Context& c, const Node& node, const AvgPool2d& op) {
    std::string x = c.input(node, 0);
    Ints pads = op.pads;
    if (op.count_include_pad && pads != Ints{0, 0, 0, 0}) {
      x = c.helper(webnn::call("pad", {x, webnn::list(Ints{0, 0, pads[0], pads[1]}), webnn::list(Ints{0, 0, pads[2], pads[3]})}));
      pads = {0, 0, 0, 0};
    }
    c.assign(c.output(node), webnn::call("averagePool2d", {x, webnn::pool_options(op, pads)}));
  }
};

template <>
struct Lowering<WebNN, Softmax> {
  static void lower(webnn::Context& c, const Node& node, const Softmax& op) {
    const std::int64_t axis = normalize_axis(op.axis, c.type(node.inputs[0]).shape.size(), "axis");
    c.assign(c.output(node), webnn::call("softmax", {c.input(node, 0), std::to_string(axis)}));
  }
};

template <>
struct Lowering<WebNN, CumSum> {
  static void lower(webnn::Context& c, const Node& node, const CumSum& op) {
    const std::int64_t axis = normalize_axis(op.axis, c.type(node.inputs[0]).shape.size(), "axis");
    c.assign(c.output(node), webnn::call("cumulativeSum", {c.input(node, 0), std::to_string(axis),
                                                          detail::concat("{exclusive: ", op.exclusive ? "true" : "false",
                                                                         ", reversed: ", op.reverse ? "true" : "false", "}")}));
  }
};

template <>
struct Lowering<WebNN, LayerNorm> {
  static void lower(webnn::Context& c, const Node& node, const LayerNorm& op) {
    const auto last = static_cast<std::int64_t>(c.type(node.inputs[0]).shape.size()) - 1;
    std::string options = detail::concat("{axes: [", last, "], epsilon: ", webnn::number(op.eps));
    if (node.inputs.size() > 1) options += ", scale: " + c.input(node, 1);
    if (node.inputs.size() > 2) options += ", bias: " + c.input(node, 2);
    c.assign(c.output(node), webnn::call("layerNormalization", {c.input(node, 0), options + "}"}));
  }
};

/// WebNN's gelu is the erf form; the tanh approximation is its formula.
template <>
struct Lowering<WebNN, Gelu> {
  static void lower(webnn::Context& c, const Node& node, const Gelu& op) {
    using webnn::call;
    const std::string x = c.input(node, 0);
    if (!op.uses_tanh()) return c.assign(c.output(node), call("gelu", {x}));
    const std::string cube = c.helper(call("mul", {c.helper(call("mul", {x, x})), x}));
    const std::string inner = c.helper(call("add", {x, c.helper(call("mul", {cube, c.scalar(0.044715, DType::f32)}))}));
    const std::string phi = c.helper(call("tanh", {c.helper(call("mul", {inner, c.scalar(std::sqrt(2.0 / std::numbers::pi), DType::f32)}))}));
    const std::string half_x = c.helper(call("mul", {x, c.scalar(0.5, DType::f32)}));
    c.assign(c.output(node), call("mul", {half_x, c.helper(call("add", {phi, c.scalar(1.0, DType::f32)}))}));
  }
};

/// Attention as its formula: softmax(q k^T * scale + mask [+ causal]) v.
template <>
struct Lowering<WebNN, Sdpa> {
  static void lower(webnn::Context& c, const Node& node, const Sdpa& op) {
    using webnn::call;
    const Shape& q = c.type(node.inputs[0]).shape;
    const Shape& k = c.type(node.inputs[1]).shape;
    const std::int64_t lq = q[q.size() - 2], lk = k[k.size() - 2], d = q.back();
    std::vector<std::int64_t> perm(k.size());
    for (std::size_t i = 0; i < k.size(); ++i) perm[i] = static_cast<std::int64_t>(i);
    std::swap(perm[k.size() - 1], perm[k.size() - 2]);
    const std::string k_t = c.helper(call("transpose", {c.input(node, 1), "{permutation: " + webnn::list(perm) + "}"}));
    const double scale = op.scale ? *op.scale : 1.0 / std::sqrt(static_cast<double>(d));
    std::string scores = c.helper(call("mul", {c.helper(call("matmul", {c.input(node, 0), k_t})), c.scalar(scale, DType::f32)}));
    if (node.inputs.size() == 4) scores = c.helper(call("add", {scores, c.input(node, 3)}));
    if (op.causal) {
      std::vector<float> mask(static_cast<std::size_t>(lq * lk), 0.0f);
      for (std::int64_t i = 0; i < lq; ++i)
        for (std::int64_t j = i + 1; j < lk; ++j) mask[static_cast<std::size_t>(i * lk + j)] = -INFINITY;
      scores = c.helper(call("add", {scores, c.floats({lq, lk}, mask)}));
    }
    const std::size_t last_axis = std::max(q.size(), k.size()) - 1;  // of the scores, whose batch axes broadcast
    const std::string weights = c.helper(call("softmax", {scores, std::to_string(last_axis)}));
    c.assign(c.output(node), call("matmul", {weights, c.input(node, 2)}));
  }
};

}  // namespace rml::emit
