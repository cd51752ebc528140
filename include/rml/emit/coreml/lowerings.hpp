// Every rml op's CoreML (MIL, iOS 15 opset) lowering: one MIL op where MIL
// has the op, the formula where it does not (neg, the saturating f32 -> i32
// cast, attention), and the spec's rules: comparisons give bool, cast to
// float32; integer arithmetic runs in float32 (i32 operands are cast, the
// result cast back: exact while values stay below 2^24 in magnitude); ops
// that add an epsilon to x first (log, rsqrt, inverse) are given 0; pools
// have no dilation (a dilated pool is refused).
#pragma once

#include <numbers>

#include "rml/emit/coreml/context.hpp"

namespace rml::emit {

struct Coreml;

namespace coreml {

/// MIL ops that compute what the rml op does, input for input (x, y).
template <class Op> constexpr std::string_view same_op = "";
template <> constexpr std::string_view same_op<Abs> = "abs";
template <> constexpr std::string_view same_op<Relu> = "relu";
template <> constexpr std::string_view same_op<Exp> = "exp";
template <> constexpr std::string_view same_op<Sqrt> = "sqrt";
template <> constexpr std::string_view same_op<Tanh> = "tanh";
template <> constexpr std::string_view same_op<Sigmoid> = "sigmoid";
template <> constexpr std::string_view same_op<Erf> = "erf";
template <> constexpr std::string_view same_op<Sin> = "sin";
template <> constexpr std::string_view same_op<Cos> = "cos";
template <> constexpr std::string_view same_op<Add> = "add";
template <> constexpr std::string_view same_op<Sub> = "sub";
template <> constexpr std::string_view same_op<Mul> = "mul";
template <> constexpr std::string_view same_op<Div> = "real_div";
template <> constexpr std::string_view same_op<Pow> = "pow";
template <> constexpr std::string_view same_op<Maximum> = "maximum";
template <> constexpr std::string_view same_op<Minimum> = "minimum";

/// MIL ops computing op(x + epsilon): with epsilon 0, the rml op.
template <class Op> constexpr std::string_view with_epsilon = "";
template <> constexpr std::string_view with_epsilon<Log> = "log";
template <> constexpr std::string_view with_epsilon<Rsqrt> = "rsqrt";
template <> constexpr std::string_view with_epsilon<Reciprocal> = "inverse";

/// Comparisons: MIL gives bool, rml f32 0/1.
template <class Op> constexpr std::string_view comparison = "";
template <> constexpr std::string_view comparison<Eq> = "equal";
template <> constexpr std::string_view comparison<Ne> = "not_equal";
template <> constexpr std::string_view comparison<Lt> = "less";
template <> constexpr std::string_view comparison<Le> = "less_equal";
template <> constexpr std::string_view comparison<Gt> = "greater";
template <> constexpr std::string_view comparison<Ge> = "greater_equal";

inline std::string cast(Context& c, const std::string& x, const Shape& shape, DType to) {
  return c.helper("cast", {{"x", {x}}, {"dtype", {c.text(to == DType::f32 ? "fp32" : "int32")}}}, {to, shape});
}

/// Node input `i`, cast to float32 when it is i32.
inline std::string as_float(Context& c, const Node& node, std::size_t i) {
  const TensorType& t = c.type(node.inputs[i]);
  const std::string x = c.input(node, i);
  return t.dtype == DType::i32 ? cast(c, x, t.shape, DType::f32) : x;
}

/// The node's output computed by `op` in float32, and cast back when it is i32.
inline void assign_from_float(Context& c, const Node& node, std::string_view op, Inputs inputs) {
  const TensorType& out = c.type(node.outputs[0]);
  if (out.dtype == DType::f32) return c.assign(node, op, std::move(inputs));
  const std::string result = c.helper(op, std::move(inputs), {DType::f32, out.shape});
  c.assign(node, "cast", {{"x", {result}}, {"dtype", {c.text("int32")}}});
}

/// The node's op with its inputs bound to `parameters` in order (plus
/// `extra`): i32 operands are cast to float32 and the result cast back.
inline void in_float(Context& c, const Node& node, std::string_view op, const std::vector<std::string>& parameters, Inputs extra = {}) {
  Inputs inputs;
  for (std::size_t i = 0; i < parameters.size(); ++i) inputs.push_back({parameters[i], {as_float(c, node, i)}});
  inputs.insert(inputs.end(), extra.begin(), extra.end());
  assign_from_float(c, node, op, std::move(inputs));
}

inline std::vector<std::string> operand_parameters(const Node& node) {
  return node.inputs.size() == 1 ? std::vector<std::string>{"x"} : std::vector<std::string>{"x", "y"};
}

inline std::vector<std::int64_t> axes_of(const Ints& axes, std::size_t rank) {
  std::vector<std::int64_t> out;
  for (std::int64_t a : axes) out.push_back(normalize_axis(a, rank, "axes"));
  return out;
}

}  // namespace coreml

template <class Op>
  requires(!coreml::same_op<Op>.empty())
struct Lowering<Coreml, Op> {
  static void lower(coreml::Context& c, const Node& node, const Op&) {
    coreml::in_float(c, node, coreml::same_op<Op>, coreml::operand_parameters(node));
  }
};

/// MIL's matmul takes rank >= 2: a 1-D operand is made [1, K] (left) or
/// [K, 1] (right), and the product reshaped to rml's result.
template <>
struct Lowering<Coreml, MatMul> {
  static void lower(coreml::Context& c, const Node& node, const MatMul&) {
    const Shape &a = c.type(node.inputs[0]).shape, &b = c.type(node.inputs[1]).shape;
    if (a.size() > 1 && b.size() > 1) return coreml::in_float(c, node, "matmul", {"x", "y"});
    const Shape left = a.size() == 1 ? Shape{1, a[0]} : a, right = b.size() == 1 ? Shape{b[0], 1} : b;
    const std::string x = c.helper("reshape", {{"x", {coreml::as_float(c, node, 0)}}, {"shape", {c.ints(left)}}}, {DType::f32, left});
    const std::string y = c.helper("reshape", {{"x", {coreml::as_float(c, node, 1)}}, {"shape", {c.ints(right)}}}, {DType::f32, right});
    Shape product = broadcast_shapes(Shape(left.begin(), left.end() - 2), Shape(right.begin(), right.end() - 2), "batch axes");
    product.insert(product.end(), {left[left.size() - 2], right.back()});
    const std::string result = c.helper("matmul", {{"x", {x}}, {"y", {y}}}, {DType::f32, product});
    coreml::assign_from_float(c, node, "reshape", {{"x", {result}}, {"shape", {c.ints(c.type(node.outputs[0]).shape)}}});
  }
};

template <class Op>
  requires(!coreml::with_epsilon<Op>.empty())
struct Lowering<Coreml, Op> {
  static void lower(coreml::Context& c, const Node& node, const Op&) {
    c.assign(node, coreml::with_epsilon<Op>, {{"x", {c.input(node, 0)}}, {"epsilon", {c.scalar(0, DType::f32)}}});
  }
};

/// -x as x * -1, which keeps the sign of zero as negation does.
template <>
struct Lowering<Coreml, Neg> {
  static void lower(coreml::Context& c, const Node& node, const Neg&) {
    coreml::in_float(c, node, "mul", {"x"}, {{"y", {c.scalar(-1, DType::f32)}}});
  }
};

template <class Op>
  requires(!coreml::comparison<Op>.empty())
struct Lowering<Coreml, Op> {
  static void lower(coreml::Context& c, const Node& node, const Op&) {
    const Shape& shape = c.type(node.outputs[0]).shape;
    const std::string truth = c.helper(coreml::comparison<Op>, {{"x", {c.input(node, 0)}}, {"y", {c.input(node, 1)}}}, {coreml::MilType::boolean, shape});
    c.assign(node, "cast", {{"x", {truth}}, {"dtype", {c.text("fp32")}}});
  }
};

/// select(cond != 0, a, b): MIL's select takes a bool condition.
template <>
struct Lowering<Coreml, Select> {
  static void lower(coreml::Context& c, const Node& node, const Select&) {
    const TensorType& cond = c.type(node.inputs[0]);
    const std::string truth =
        c.helper("not_equal", {{"x", {c.input(node, 0)}}, {"y", {c.scalar(0, cond.dtype)}}}, {coreml::MilType::boolean, cond.shape});
    c.assign(node, "select", {{"cond", {truth}}, {"a", {c.input(node, 1)}}, {"b", {c.input(node, 2)}}});
  }
};

/// A cast to the same dtype is an identity. f32 -> i32 saturates and maps
/// NaN to 0 in rml, where MIL leaves out-of-range values to the device.
template <>
struct Lowering<Coreml, Cast> {
  static void lower(coreml::Context& c, const Node& node, const Cast& op) {
    const std::string x = c.input(node, 0);
    const Shape& shape = c.type(node.outputs[0]).shape;
    if (c.type(node.inputs[0]).dtype == op.to) return c.assign(node, "identity", {{"x", {x}}});
    if (op.to == DType::f32) return c.assign(node, "cast", {{"x", {x}}, {"dtype", {c.text("fp32")}}});
    const TensorType f32{DType::f32, shape};
    const coreml::MilTensor truth{coreml::MilType::boolean, shape};
    const std::string nan = c.helper("not_equal", {{"x", {x}}, {"y", {x}}}, truth);
    const std::string finite = c.helper("select", {{"cond", {nan}}, {"a", {c.scalar(0, DType::f32)}}, {"b", {x}}}, f32);
    // The largest f32 below 2^31 converts exactly; 2^31 and above saturate to INT32_MAX.
    const std::string clipped =
        c.helper("clip", {{"x", {finite}}, {"alpha", {c.scalar(-2147483648.0, DType::f32)}}, {"beta", {c.scalar(2147483520.0, DType::f32)}}}, f32);
    const std::string converted = coreml::cast(c, clipped, shape, DType::i32);
    const std::string too_large = c.helper("greater_equal", {{"x", {x}}, {"y", {c.scalar(2147483648.0, DType::f32)}}}, truth);
    c.assign(node, "select", {{"cond", {too_large}}, {"a", {c.int_scalar(2147483647)}}, {"b", {converted}}});
  }
};

template <>
struct Lowering<Coreml, Reshape> {
  static void lower(coreml::Context& c, const Node& node, const Reshape&) {
    c.assign(node, "reshape", {{"x", {c.input(node, 0)}}, {"shape", {c.ints(c.mil_type_of(node.outputs[0]).shape)}}});
  }
};

template <>
struct Lowering<Coreml, Transpose> {
  static void lower(coreml::Context& c, const Node& node, const Transpose& op) {
    c.assign(node, "transpose", {{"x", {c.input(node, 0)}}, {"perm", {c.ints(op.perm)}}});
  }
};

/// tile after a reshape that gives x the output's rank (in MIL's shapes:
/// above rank 5 the leading axes, which do not broadcast, are merged).
template <>
struct Lowering<Coreml, BroadcastTo> {
  static void lower(coreml::Context& c, const Node& node, const BroadcastTo&) {
    const TensorType out = c.mil_type_of(node.outputs[0]);
    const Shape& in = c.type(node.inputs[0]).shape;
    Shape padded = in;
    padded.insert(padded.begin(), c.type(node.outputs[0]).shape.size() - in.size(), 1);
    const Shape x = coreml::Context::mil_shape(padded);
    std::vector<std::int64_t> reps;
    for (std::size_t i = 0; i < x.size(); ++i) reps.push_back(x[i] == out.shape[i] ? 1 : out.shape[i]);
    std::string input = c.input(node, 0);
    const bool tiles = std::any_of(reps.begin(), reps.end(), [](std::int64_t r) { return r != 1; });
    if (x != c.mil_type_of(node.inputs[0]).shape) {
      if (!tiles) return c.assign(node, "reshape", {{"x", {input}}, {"shape", {c.ints(out.shape)}}});
      input = c.helper("reshape", {{"x", {input}}, {"shape", {c.ints(x)}}}, {out.dtype, x});
    }
    if (!tiles) return c.assign(node, "identity", {{"x", {input}}});
    c.assign(node, "tile", {{"x", {input}}, {"reps", {c.ints(reps)}}});
  }
};

/// slice_by_index with positive strides: an axis with a negative step is
/// reversed first, and its start counted from the back.
template <>
struct Lowering<Coreml, Slice> {
  static void lower(coreml::Context& c, const Node& node, const Slice& op) {
    const TensorType& in = c.type(node.inputs[0]);
    std::vector<std::int64_t> begin, end, stride, reversed;
    const auto ranges = op.ranges(in.shape);
    for (std::size_t axis = 0; axis < ranges.size(); ++axis) {
      const auto& r = ranges[axis];
      const bool backwards = r.count > 1 && r.step < 0;
      if (backwards) reversed.push_back(static_cast<std::int64_t>(axis));
      const std::int64_t step = r.count > 1 ? std::abs(r.step) : 1;
      begin.push_back(backwards ? in.shape[axis] - 1 - r.start : r.start);
      end.push_back(begin.back() + (r.count - 1) * step + 1);
      stride.push_back(step);
    }
    std::string x = c.input(node, 0);
    if (!reversed.empty()) x = c.helper("reverse", {{"x", {x}}, {"axes", {c.ints(reversed)}}}, in);
    c.assign(node, "slice_by_index", {{"x", {x}}, {"begin", {c.ints(begin)}}, {"end", {c.ints(end)}}, {"stride", {c.ints(stride)}}});
  }
};

template <>
struct Lowering<Coreml, Concat> {
  static void lower(coreml::Context& c, const Node& node, const Concat& op) {
    std::vector<std::string> values;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) values.push_back(c.input(node, i));
    const std::int64_t axis = normalize_axis(op.axis, c.type(node.outputs[0]).shape.size(), "axis");
    c.assign(node, "concat", {{"values", values}, {"axis", {c.int_scalar(axis)}}, {"interleave", {c.boolean(false)}}});
  }
};

/// MIL's pad takes [begin_0, end_0, begin_1, end_1, ...].
template <>
struct Lowering<Coreml, Pad> {
  static void lower(coreml::Context& c, const Node& node, const Pad& op) {
    const std::size_t rank = c.type(node.inputs[0]).shape.size();
    std::vector<std::int64_t> pad;
    for (std::size_t axis = 0; axis < rank; ++axis) pad.insert(pad.end(), {op.pads[axis], op.pads[rank + axis]});
    coreml::in_float(c, node, "pad", {"x"},
                     {{"pad", {c.ints(pad)}}, {"mode", {c.text("constant")}}, {"constant_val", {c.scalar(op.value, DType::f32)}}});
  }
};

/// MIL's gather takes indices in [-dim, dim), as rml's.
template <>
struct Lowering<Coreml, Gather> {
  static void lower(coreml::Context& c, const Node& node, const Gather& op) {
    const std::int64_t axis = normalize_axis(op.axis, c.type(node.inputs[0]).shape.size(), "axis");
    c.assign(node, "gather", {{"x", {c.input(node, 0)}}, {"indices", {c.input(node, 1)}}, {"axis", {c.int_scalar(axis)}}});
  }
};

template <>
struct Lowering<Coreml, TopK> {
  static void lower(coreml::Context& c, const Node& node, const TopK& op) {
    c.emit_multi("topk", {{"x", {c.input(node, 0)}}, {"k", {c.int_scalar(op.k)}}, {"axis", {c.int_scalar(-1)}}, {"ascending", {c.boolean(false)}}},
                 {{c.output(node, 0), c.type(node.outputs[0])}, {c.output(node, 1), c.type(node.outputs[1])}});
  }
};

namespace coreml {
template <class Kind> constexpr std::string_view reduction = "";
template <> constexpr std::string_view reduction<SumKind> = "reduce_sum";
template <> constexpr std::string_view reduction<MeanKind> = "reduce_mean";
template <> constexpr std::string_view reduction<MaxKind> = "reduce_max";
template <> constexpr std::string_view reduction<MinKind> = "reduce_min";
}  // namespace coreml

/// rml's empty axes reduce nothing: an identity.
template <class Kind>
  requires(!coreml::reduction<Kind>.empty())
struct Lowering<Coreml, Reduce<Kind>> {
  static void lower(coreml::Context& c, const Node& node, const Reduce<Kind>& op) {
    if (op.axes.empty()) return c.assign(node, "identity", {{"x", {c.input(node, 0)}}});
    const auto axes = coreml::axes_of(op.axes, c.type(node.inputs[0]).shape.size());
    coreml::in_float(c, node, coreml::reduction<Kind>, {"x"}, {{"axes", {c.ints(axes)}}, {"keep_dims", {c.boolean(op.keep_dims)}}});
  }
};

namespace coreml {
/// MIL's custom padding is [top, bottom, left, right]; rml's [top, left, bottom, right].
inline std::string padding(Context& c, const Ints& p) { return c.ints({p[0], p[2], p[1], p[3]}); }

template <class Op>
Inputs window(Context& c, const Node& node, const Op& op) {
  return {{"x", {c.input(node, 0)}}, {"kernel_sizes", {c.ints(op.kernel)}}, {"strides", {c.ints(op.strides)}},
          {"pad_type", {c.text("custom")}}, {"pad", {padding(c, op.pads)}}, {"ceil_mode", {c.boolean(false)}}};
}

template <class Op>
std::string refuse_dilated(const Op& op) {
  return op.dilations == Ints{1, 1} ? "" : "coreml: MIL pools have no dilation";
}
}  // namespace coreml

/// MIL's conv takes only a constant bias: one computed at run time is added
/// after, along the channel axis. Run-time weights cannot be dilated.
template <>
struct Lowering<Coreml, Conv2d> {
  static std::string refuse(const Graph& graph, const Node& node, const Conv2d& op) {
    const bool constant_weight = graph.values[node.inputs[1]].kind == ValueKind::constant;
    return constant_weight || op.dilations == Ints{1, 1} ? "" : "coreml: MIL convolutions with run-time weights have no dilation";
  }
  static void lower(coreml::Context& c, const Node& node, const Conv2d& op) {
    coreml::Inputs inputs{{"x", {c.input(node, 0)}}, {"weight", {c.input(node, 1)}}};
    const bool has_bias = node.inputs.size() == 3, bias_after = has_bias && !c.is_constant(node.inputs[2]);
    if (has_bias && !bias_after) inputs.push_back({"bias", {c.input(node, 2)}});
    inputs.insert(inputs.end(), {{"strides", {c.ints(op.strides)}}, {"pad_type", {c.text("custom")}}, {"pad", {coreml::padding(c, op.pads)}},
                                 {"dilations", {c.ints(op.dilations)}}, {"groups", {c.int_scalar(op.groups)}}});
    if (!bias_after) return c.assign(node, "conv", inputs);
    const TensorType& out = c.type(node.outputs[0]);
    const std::string convolved = c.helper("conv", inputs, out);
    const Shape per_channel{out.shape[1], 1, 1};
    const std::string bias = c.helper("reshape", {{"x", {c.input(node, 2)}}, {"shape", {c.ints(per_channel)}}}, {DType::f32, per_channel});
    c.assign(node, "add", {{"x", {convolved}}, {"y", {bias}}});
  }
};

/// Padding is ignored by the max, as MIL's max_pool does.
template <>
struct Lowering<Coreml, MaxPool2d> {
  static std::string refuse(const Graph&, const Node&, const MaxPool2d& op) { return coreml::refuse_dilated(op); }
  static void lower(coreml::Context& c, const Node& node, const MaxPool2d& op) { c.assign(node, "max_pool", coreml::window(c, node, op)); }
};

template <>
struct Lowering<Coreml, AvgPool2d> {
  static std::string refuse(const Graph&, const Node&, const AvgPool2d& op) { return coreml::refuse_dilated(op); }
  static void lower(coreml::Context& c, const Node& node, const AvgPool2d& op) {
    coreml::Inputs inputs = coreml::window(c, node, op);
    inputs.push_back({"exclude_padding_from_average", {c.boolean(!op.count_include_pad)}});
    c.assign(node, "avg_pool", inputs);
  }
};

template <>
struct Lowering<Coreml, Softmax> {
  static void lower(coreml::Context& c, const Node& node, const Softmax& op) {
    const std::int64_t axis = normalize_axis(op.axis, c.type(node.inputs[0]).shape.size(), "axis");
    c.assign(node, "softmax", {{"x", {c.input(node, 0)}}, {"axis", {c.int_scalar(axis)}}});
  }
};

template <>
struct Lowering<Coreml, CumSum> {
  static void lower(coreml::Context& c, const Node& node, const CumSum& op) {
    const std::int64_t axis = normalize_axis(op.axis, c.type(node.inputs[0]).shape.size(), "axis");
    c.assign(node, "cumsum", {{"x", {c.input(node, 0)}}, {"axis", {c.int_scalar(axis)}},
                              {"exclusive", {c.boolean(op.exclusive)}}, {"reverse", {c.boolean(op.reverse)}}});
  }
};

/// MIL's layer_norm takes only a constant gamma and beta: ones computed at
/// run time are applied after, as a product and a sum.
template <>
struct Lowering<Coreml, LayerNorm> {
  static void lower(coreml::Context& c, const Node& node, const LayerNorm& op) {
    const TensorType& out = c.type(node.outputs[0]);
    const auto last = static_cast<std::int64_t>(out.shape.size()) - 1;
    coreml::Inputs inputs{{"x", {c.input(node, 0)}}, {"axes", {c.ints({last})}}, {"epsilon", {c.scalar(op.eps, DType::f32)}}};
    bool constant = true;
    for (std::size_t i = 1; i < node.inputs.size(); ++i) constant = constant && c.is_constant(node.inputs[i]);
    if (constant) {
      if (node.inputs.size() > 1) inputs.push_back({"gamma", {c.input(node, 1)}});
      if (node.inputs.size() > 2) inputs.push_back({"beta", {c.input(node, 2)}});
      return c.assign(node, "layer_norm", inputs);
    }
    std::string normalized = c.helper("layer_norm", inputs, out);
    if (node.inputs.size() == 2) return c.assign(node, "mul", {{"x", {normalized}}, {"y", {c.input(node, 1)}}});
    normalized = c.helper("mul", {{"x", {normalized}}, {"y", {c.input(node, 1)}}}, out);
    c.assign(node, "add", {{"x", {normalized}}, {"y", {c.input(node, 2)}}});
  }
};

template <>
struct Lowering<Coreml, Gelu> {
  static void lower(coreml::Context& c, const Node& node, const Gelu& op) {
    c.assign(node, "gelu", {{"x", {c.input(node, 0)}}, {"mode", {c.text(op.uses_tanh() ? "TANH_APPROXIMATION" : "EXACT")}}});
  }
};

/// Attention as its formula: softmax(q k^T * scale + mask [+ causal]) v.
template <>
struct Lowering<Coreml, Sdpa> {
  static void lower(coreml::Context& c, const Node& node, const Sdpa& op) {
    const Shape& q = c.type(node.inputs[0]).shape;
    const Shape& k = c.type(node.inputs[1]).shape;
    const std::int64_t lq = q[q.size() - 2], lk = k[k.size() - 2], d = q.back();
    // The scores' batch axes are q's and k's, broadcast.
    Shape scores_shape = broadcast_shapes(Shape(q.begin(), q.end() - 2), Shape(k.begin(), k.end() - 2), "batch axes");
    scores_shape.insert(scores_shape.end(), {lq, lk});
    const TensorType scores_type{DType::f32, scores_shape};
    const double scale = op.scale ? *op.scale : 1.0 / std::sqrt(static_cast<double>(d));
    std::string scores = c.helper("matmul", {{"x", {c.input(node, 0)}}, {"y", {c.input(node, 1)}}, {"transpose_y", {c.boolean(true)}}}, scores_type);
    scores = c.helper("mul", {{"x", {scores}}, {"y", {c.scalar(scale, DType::f32)}}}, scores_type);
    if (node.inputs.size() == 4) {
      Shape masked = broadcast_shapes(scores_shape, c.type(node.inputs[3]).shape, "mask");
      scores = c.helper("add", {{"x", {scores}}, {"y", {c.input(node, 3)}}}, {DType::f32, masked});
      scores_shape = masked;
    }
    if (op.causal) {
      std::vector<float> mask(static_cast<std::size_t>(lq * lk), 0.0f);
      for (std::int64_t i = 0; i < lq; ++i)
        for (std::int64_t j = i + 1; j < lk; ++j) mask[static_cast<std::size_t>(i * lk + j)] = -INFINITY;
      scores = c.helper("add", {{"x", {scores}}, {"y", {c.floats({lq, lk}, mask)}}}, {DType::f32, scores_shape});
    }
    const std::string weights =
        c.helper("softmax", {{"x", {scores}}, {"axis", {c.int_scalar(static_cast<std::int64_t>(scores_shape.size()) - 1)}}}, {DType::f32, scores_shape});
    c.assign(node, "matmul", {{"x", {weights}}, {"y", {c.input(node, 2)}}});
  }
};

}  // namespace rml::emit
