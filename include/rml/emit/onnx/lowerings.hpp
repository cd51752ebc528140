// Every rml op's ONNX lowering (opset 18). One-to-one ops are data
// (`onnx_op<Op>`); the rest are functions. Where ONNX's op differs from rml's
// semantics (comparisons give booleans, cast saturates in rml, layer_norm's
// scale is optional in rml), the lowering adds the nodes that close the gap.
#pragma once

#include <numbers>

#include "rml/emit/onnx/context.hpp"

namespace rml::emit {

struct Onnx;

namespace onnx {

/// ONNX op types that compute exactly what the rml op does, input for input.
template <class Op> constexpr std::string_view same_op = "";
template <> constexpr std::string_view same_op<Neg> = "Neg";
template <> constexpr std::string_view same_op<Abs> = "Abs";
template <> constexpr std::string_view same_op<Exp> = "Exp";
template <> constexpr std::string_view same_op<Log> = "Log";
template <> constexpr std::string_view same_op<Sqrt> = "Sqrt";
template <> constexpr std::string_view same_op<Tanh> = "Tanh";
template <> constexpr std::string_view same_op<Sigmoid> = "Sigmoid";
template <> constexpr std::string_view same_op<Erf> = "Erf";
template <> constexpr std::string_view same_op<Sin> = "Sin";
template <> constexpr std::string_view same_op<Cos> = "Cos";
template <> constexpr std::string_view same_op<Reciprocal> = "Reciprocal";
template <> constexpr std::string_view same_op<Add> = "Add";
template <> constexpr std::string_view same_op<Sub> = "Sub";
template <> constexpr std::string_view same_op<Mul> = "Mul";
template <> constexpr std::string_view same_op<Div> = "Div";
template <> constexpr std::string_view same_op<Pow> = "Pow";
template <> constexpr std::string_view same_op<Maximum> = "Max";
template <> constexpr std::string_view same_op<Minimum> = "Min";
template <> constexpr std::string_view same_op<MatMul> = "MatMul";
template <> constexpr std::string_view same_op<Concat> = "Concat";

/// Comparisons: ONNX gives booleans, rml gives f32 0/1 (ne is not-equal).
template <class Op> constexpr std::string_view comparison = "";
template <> constexpr std::string_view comparison<Eq> = "Equal";
template <> constexpr std::string_view comparison<Ne> = "Equal";
template <> constexpr std::string_view comparison<Lt> = "Less";
template <> constexpr std::string_view comparison<Le> = "LessOrEqual";
template <> constexpr std::string_view comparison<Gt> = "Greater";
template <> constexpr std::string_view comparison<Ge> = "GreaterOrEqual";

inline Writer cast_to(ElementType type) { return attribute_int("to", static_cast<std::int64_t>(type)); }

}  // namespace onnx

template <class Op>
  requires(!onnx::same_op<Op>.empty())
struct Lowering<Onnx, Op> {
  static void lower(onnx::Context& c, const Node& node, const Op& op) {
    std::vector<onnx::Writer> attributes;
    if constexpr (std::is_same_v<Op, Concat>) attributes.push_back(onnx::attribute_int("axis", op.axis));
    c.emit(onnx::same_op<Op>, c.inputs(node), node, std::move(attributes));
  }
};

template <class Op>
  requires(!onnx::comparison<Op>.empty())
struct Lowering<Onnx, Op> {
  static void lower(onnx::Context& c, const Node& node, const Op&) {
    std::string truth = c.helper(onnx::comparison<Op>, c.inputs(node));
    if constexpr (std::is_same_v<Op, Ne>) truth = c.helper("Not", {truth});
    c.emit("Cast", {truth}, node, {onnx::cast_to(onnx::ElementType::float32)});
  }
};

/// ONNX Runtime's Relu has no int32 kernel: max(x, 0) for i32.
template <>
struct Lowering<Onnx, Relu> {
  static void lower(onnx::Context& c, const Node& node, const Relu&) {
    const TensorType& x = c.type(node.inputs[0]);
    if (x.dtype == DType::f32) return c.emit("Relu", c.inputs(node), node);
    c.emit("Max", {c.input(node, 0), c.scalar(0, DType::i32)}, node);
  }
};

template <>
struct Lowering<Onnx, Rsqrt> {
  static void lower(onnx::Context& c, const Node& node, const Rsqrt&) {
    c.emit("Reciprocal", {c.helper("Sqrt", c.inputs(node))}, node);
  }
};

/// where(cond != 0, a, b): ONNX's Cast to bool maps non-zero (and NaN) to true.
template <>
struct Lowering<Onnx, Select> {
  static void lower(onnx::Context& c, const Node& node, const Select&) {
    const std::string cond = c.helper("Cast", {c.input(node, 0)}, {onnx::cast_to(onnx::ElementType::boolean)});
    c.emit("Where", {cond, c.input(node, 1), c.input(node, 2)}, node);
  }
};

/// Never an identity cast (an Identity node instead). f32 -> i32 saturates
/// and maps NaN to 0 in rml, where ONNX leaves out-of-range values undefined.
template <>
struct Lowering<Onnx, Cast> {
  static void lower(onnx::Context& c, const Node& node, const Cast& op) {
    const DType from = c.type(node.inputs[0]).dtype;
    if (from == op.to) return c.emit("Identity", c.inputs(node), node);
    if (op.to == DType::f32) return c.emit("Cast", c.inputs(node), node, {onnx::cast_to(onnx::ElementType::float32)});
    const std::string x = c.input(node, 0);
    const std::string finite = c.helper("Where", {c.helper("IsNaN", {x}), c.scalar(0, DType::f32), x});
    // The largest f32 below 2^31 converts exactly; 2^31 and above saturate to INT32_MAX.
    const std::string clipped = c.helper("Clip", {finite, c.scalar(-2147483648.0, DType::f32), c.scalar(2147483520.0, DType::f32)});
    const std::string converted = c.helper("Cast", {clipped}, {onnx::cast_to(onnx::ElementType::int32)});
    const std::string too_large = c.helper("GreaterOrEqual", {x, c.scalar(2147483648.0, DType::f32)});
    c.emit("Where", {too_large, c.scalar(2147483647.0, DType::i32), converted}, node);
  }
};

/// Reshape to the static output shape: no -1 to resolve, and allowzero keeps
/// a 0 meaning zero (ONNX's default reads 0 as "copy this dimension").
template <>
struct Lowering<Onnx, Reshape> {
  static void lower(onnx::Context& c, const Node& node, const Reshape&) {
    const Shape& out = c.type(node.outputs[0]).shape;
    c.emit("Reshape", {c.input(node, 0), c.int64s(out)}, node, {onnx::attribute_int("allowzero", 1)});
  }
};

template <>
struct Lowering<Onnx, Transpose> {
  static void lower(onnx::Context& c, const Node& node, const Transpose& op) {
    c.emit("Transpose", c.inputs(node), node, {onnx::attribute_ints("perm", op.perm)});
  }
};

template <>
struct Lowering<Onnx, BroadcastTo> {
  static void lower(onnx::Context& c, const Node& node, const BroadcastTo&) {
    c.emit("Expand", {c.input(node, 0), c.int64s(c.type(node.outputs[0]).shape)}, node);
  }
};

/// Every axis sliced with rml's own clamped start, step and length, so ONNX's
/// clamping rules never come into play. The end is one past the last index
/// taken (computed from that index, so a step near INT64_MAX cannot
/// overflow); a negative step that runs to the front ends at INT64_MIN
/// ("before index 0"), and an empty axis is [0, 0).
template <>
struct Lowering<Onnx, Slice> {
  static void lower(onnx::Context& c, const Node& node, const Slice& op) {
    std::vector<std::int64_t> starts, ends, axes, steps;
    const auto ranges = op.ranges(c.type(node.inputs[0]).shape);
    for (std::size_t axis = 0; axis < ranges.size(); ++axis) {
      const auto& r = ranges[axis];
      axes.push_back(static_cast<std::int64_t>(axis));
      if (r.count == 0) {
        starts.push_back(0), ends.push_back(0), steps.push_back(1);
        continue;
      }
      const std::int64_t last = r.start + r.step * (r.count - 1);  // an index inside the axis
      starts.push_back(r.start);
      ends.push_back(r.step > 0 ? last + 1 : (last == 0 ? INT64_MIN : last - 1));
      steps.push_back(r.step);
    }
    c.emit("Slice", {c.input(node, 0), c.int64s(starts), c.int64s(ends), c.int64s(axes), c.int64s(steps)}, node);
  }
};

template <>
struct Lowering<Onnx, Pad> {
  static void lower(onnx::Context& c, const Node& node, const Pad& op) {
    const DType dtype = c.type(node.inputs[0]).dtype;
    c.emit("Pad", {c.input(node, 0), c.int64s(op.pads), c.scalar(op.value, dtype)}, node);
  }
};

template <>
struct Lowering<Onnx, Gather> {
  static void lower(onnx::Context& c, const Node& node, const Gather& op) {
    c.emit("Gather", c.inputs(node), node, {onnx::attribute_int("axis", op.axis)});
  }
};

/// ONNX's TopK orders ties by lower index, as rml does; its indices are
/// int64, rml's int32.
template <>
struct Lowering<Onnx, TopK> {
  static void lower(onnx::Context& c, const Node& node, const TopK& op) {
    const auto outputs = c.helper_outputs("TopK", {c.input(node, 0), c.int64s({op.k})}, 2,
                                          {onnx::attribute_int("axis", -1), onnx::attribute_int("largest", 1),
                                           onnx::attribute_int("sorted", 1)});
    c.emit("Identity", {outputs[0]}, Node{node.op, {}, {node.outputs[0]}});
    c.emit("Cast", {outputs[1]}, Node{node.op, {}, {node.outputs[1]}}, {onnx::cast_to(onnx::ElementType::int32)});
  }
};

namespace onnx {
/// The ONNX reduction of each rml reduction kind.
template <class Kind> constexpr std::string_view reduction = "";
template <> constexpr std::string_view reduction<SumKind> = "ReduceSum";
template <> constexpr std::string_view reduction<MeanKind> = "ReduceMean";
template <> constexpr std::string_view reduction<MaxKind> = "ReduceMax";
template <> constexpr std::string_view reduction<MinKind> = "ReduceMin";
}  // namespace onnx

/// Reductions take their axes as an input (opset 18); rml's empty axes
/// reduce nothing, which is ONNX's noop_with_empty_axes.
template <class Kind>
  requires(!onnx::reduction<Kind>.empty())
struct Lowering<Onnx, Reduce<Kind>> {
  static void lower(onnx::Context& c, const Node& node, const Reduce<Kind>& op) {
    c.emit(onnx::reduction<Kind>, {c.input(node, 0), c.int64s(op.axes)}, node,
           {onnx::attribute_int("keepdims", op.keep_dims), onnx::attribute_int("noop_with_empty_axes", 1)});
  }
};

/// CumSum takes its axis as a tensor; ONNX Runtime carries float sums in float (rml in
/// double), so long axes may differ in the last bits.
template <>
struct Lowering<Onnx, CumSum> {
  static void lower(onnx::Context& c, const Node& node, const CumSum& op) {
    c.emit("CumSum", {c.input(node, 0), c.int64s({op.axis})}, node,
           {onnx::attribute_int("exclusive", op.exclusive), onnx::attribute_int("reverse", op.reverse)});
  }
};

namespace onnx {
/// kernel_shape, strides, pads ([top, left, bottom, right] is ONNX's
/// [x1_begin, x2_begin, x1_end, x2_end]) and dilations of a 2-D window.
template <class Op>
std::vector<Writer> window_attributes(const Op& op, const Shape& kernel) {
  return {attribute_ints("kernel_shape", {kernel[0], kernel[1]}), attribute_ints("strides", op.strides),
          attribute_ints("pads", op.pads), attribute_ints("dilations", op.dilations)};
}
}  // namespace onnx

template <>
struct Lowering<Onnx, Conv2d> {
  static void lower(onnx::Context& c, const Node& node, const Conv2d& op) {
    const Shape& w = c.type(node.inputs[1]).shape;
    auto attributes = onnx::window_attributes(op, {w[2], w[3]});
    attributes.push_back(onnx::attribute_int("group", op.groups));
    c.emit("Conv", c.inputs(node), node, std::move(attributes));
  }
};

template <>
struct Lowering<Onnx, MaxPool2d> {
  static void lower(onnx::Context& c, const Node& node, const MaxPool2d& op) {
    c.emit("MaxPool", c.inputs(node), node, onnx::window_attributes(op, op.kernel));
  }
};

/// AveragePool has dilations only from opset 19: rml's dilated average pools
/// are refused at preflight.
template <>
struct Lowering<Onnx, AvgPool2d> {
  static void lower(onnx::Context& c, const Node& node, const AvgPool2d& op) {
    c.emit("AveragePool", c.inputs(node), node,
           {onnx::attribute_ints("kernel_shape", op.kernel), onnx::attribute_ints("strides", op.strides),
            onnx::attribute_ints("pads", op.pads), onnx::attribute_int("count_include_pad", op.count_include_pad)});
  }
  static std::string refuse(const Graph&, const Node&, const AvgPool2d& op) {
    return op.dilations == Ints{1, 1} ? "" : "avg_pool2d with dilations needs AveragePool from opset 19";
  }
};

template <>
struct Lowering<Onnx, Softmax> {
  static void lower(onnx::Context& c, const Node& node, const Softmax& op) {
    c.emit("Softmax", c.inputs(node), node, {onnx::attribute_int("axis", op.axis)});
  }
};

/// LayerNormalization needs a scale: ones when rml has none.
template <>
struct Lowering<Onnx, LayerNorm> {
  static void lower(onnx::Context& c, const Node& node, const LayerNorm& op) {
    std::vector<std::string> inputs = c.inputs(node);
    if (inputs.size() == 1) {
      const std::int64_t dim = c.type(node.inputs[0]).shape.back();
      const std::int64_t dims[] = {dim};
      inputs.push_back(c.floats(dims, std::vector<float>(static_cast<std::size_t>(dim), 1.0f)));
    }
    c.emit("LayerNormalization", inputs, node,
           {onnx::attribute_int("axis", -1), onnx::attribute_float("epsilon", static_cast<float>(op.eps))});
  }
};

/// GELU as its formula (ONNX's Gelu op arrived in opset 20).
template <>
struct Lowering<Onnx, Gelu> {
  static void lower(onnx::Context& c, const Node& node, const Gelu& op) {
    const std::string x = c.input(node, 0);
    std::string phi;  // 1 + erf(x / sqrt 2), or 1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))
    if (op.uses_tanh()) {
      const std::string cube = c.helper("Mul", {c.helper("Mul", {x, x}), x});
      const std::string inner = c.helper("Add", {x, c.helper("Mul", {cube, c.scalar(0.044715, DType::f32)})});
      const double sqrt_2_over_pi = std::sqrt(2.0 / std::numbers::pi);
      phi = c.helper("Tanh", {c.helper("Mul", {inner, c.scalar(sqrt_2_over_pi, DType::f32)})});
    } else {
      phi = c.helper("Erf", {c.helper("Mul", {x, c.scalar(1.0 / std::numbers::sqrt2, DType::f32)})});
    }
    const std::string half_x = c.helper("Mul", {x, c.scalar(0.5, DType::f32)});
    c.emit("Mul", {half_x, c.helper("Add", {phi, c.scalar(1.0, DType::f32)})}, node);
  }
};

/// Attention as its formula: softmax(q k^T * scale + mask [+ causal]) v. The
/// causal mask is a constant [Lq, Lk] of 0 and -inf (top-left aligned).
template <>
struct Lowering<Onnx, Sdpa> {
  static void lower(onnx::Context& c, const Node& node, const Sdpa& op) {
    const Shape& q = c.type(node.inputs[0]).shape;
    const Shape& k = c.type(node.inputs[1]).shape;
    const std::int64_t lq = q[q.size() - 2], lk = k[k.size() - 2], d = q.back();
    std::vector<std::int64_t> perm(k.size());
    for (std::size_t i = 0; i < k.size(); ++i) perm[i] = static_cast<std::int64_t>(i);
    std::swap(perm[k.size() - 1], perm[k.size() - 2]);
    const std::string k_t = c.helper("Transpose", {c.input(node, 1)}, {onnx::attribute_ints("perm", perm)});
    const double scale = op.scale ? *op.scale : 1.0 / std::sqrt(static_cast<double>(d));
    std::string scores = c.helper("Mul", {c.helper("MatMul", {c.input(node, 0), k_t}), c.scalar(scale, DType::f32)});
    if (node.inputs.size() == 4) scores = c.helper("Add", {scores, c.input(node, 3)});
    if (op.causal) {
      std::vector<float> mask(static_cast<std::size_t>(lq * lk), 0.0f);
      for (std::int64_t i = 0; i < lq; ++i)
        for (std::int64_t j = i + 1; j < lk; ++j) mask[static_cast<std::size_t>(i * lk + j)] = -INFINITY;
      const std::int64_t dims[] = {lq, lk};
      scores = c.helper("Add", {scores, c.floats(dims, mask)});
    }
    const std::string weights = c.helper("Softmax", {scores}, {onnx::attribute_int("axis", -1)});
    c.emit("MatMul", {weights, c.input(node, 2)}, node);
  }
};

}  // namespace rml::emit
