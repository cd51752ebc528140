// Every rml op's TFLite lowering, builtin operators only. One-to-one ops are
// data (`same_op<Op>`); the rest are functions that close the gap between
// rml's semantics and TFLite's: comparisons give bool (cast to f32), windows
// take only SAME or VALID padding (other pads become a PAD first), spatial
// ops run in NHWC between two transposes, attention, layer norm and the
// f32 -> i32 cast are written as their formulas. `refuse` names what a
// lowering cannot express; preflight reports it before anything is built.
#pragma once

#include <numbers>

#include "rml/emit/tflite/context.hpp"

namespace rml::emit {

struct Tflite;

namespace tfl {

template <class Op> constexpr BuiltinOperator same_op = BuiltinOperator::CUSTOM;
template <> constexpr BuiltinOperator same_op<Neg> = BuiltinOperator::NEG;
template <> constexpr BuiltinOperator same_op<Abs> = BuiltinOperator::ABS;
template <> constexpr BuiltinOperator same_op<Exp> = BuiltinOperator::EXP;
template <> constexpr BuiltinOperator same_op<Log> = BuiltinOperator::LOG;
template <> constexpr BuiltinOperator same_op<Sqrt> = BuiltinOperator::SQRT;
template <> constexpr BuiltinOperator same_op<Rsqrt> = BuiltinOperator::RSQRT;
template <> constexpr BuiltinOperator same_op<Tanh> = BuiltinOperator::TANH;
template <> constexpr BuiltinOperator same_op<Sigmoid> = BuiltinOperator::LOGISTIC;
template <> constexpr BuiltinOperator same_op<Sin> = BuiltinOperator::SIN;
template <> constexpr BuiltinOperator same_op<Cos> = BuiltinOperator::COS;
template <> constexpr BuiltinOperator same_op<Add> = BuiltinOperator::ADD;
template <> constexpr BuiltinOperator same_op<Sub> = BuiltinOperator::SUB;
template <> constexpr BuiltinOperator same_op<Mul> = BuiltinOperator::MUL;
template <> constexpr BuiltinOperator same_op<Div> = BuiltinOperator::DIV;
template <> constexpr BuiltinOperator same_op<Pow> = BuiltinOperator::POW;
template <> constexpr BuiltinOperator same_op<Maximum> = BuiltinOperator::MAXIMUM;
template <> constexpr BuiltinOperator same_op<Minimum> = BuiltinOperator::MINIMUM;

/// Comparisons: TFLite gives bool, rml gives f32 0/1.
template <class Op> constexpr BuiltinOperator comparison = BuiltinOperator::CUSTOM;
template <> constexpr BuiltinOperator comparison<Eq> = BuiltinOperator::EQUAL;
template <> constexpr BuiltinOperator comparison<Ne> = BuiltinOperator::NOT_EQUAL;
template <> constexpr BuiltinOperator comparison<Lt> = BuiltinOperator::LESS;
template <> constexpr BuiltinOperator comparison<Le> = BuiltinOperator::LESS_EQUAL;
template <> constexpr BuiltinOperator comparison<Gt> = BuiltinOperator::GREATER;
template <> constexpr BuiltinOperator comparison<Ge> = BuiltinOperator::GREATER_EQUAL;

/// The shape of a broadcast of two operands (for helper tensors).
inline Shape broadcast(const Shape& a, const Shape& b) { return broadcast_shapes(a, b, "operands"); }

/// Options tables, by name.
inline Options reshape_options() { return {BuiltinOptions::ReshapeOptions, [](fb::FlatBufferBuilder& b) { return ::tflite::CreateReshapeOptions(b).Union(); }}; }
inline Options softmax_options() { return {BuiltinOptions::SoftmaxOptions, [](fb::FlatBufferBuilder& b) { return ::tflite::CreateSoftmaxOptions(b, 1.0f).Union(); }}; }
inline Options reducer_options(bool keep_dims) {
  return {BuiltinOptions::ReducerOptions, [=](fb::FlatBufferBuilder& b) { return ::tflite::CreateReducerOptions(b, keep_dims).Union(); }};
}
inline Options batch_matmul_options(bool adj_y) {
  return {BuiltinOptions::BatchMatMulOptions,
          [=](fb::FlatBufferBuilder& b) { return ::tflite::CreateBatchMatMulOptions(b, false, adj_y).Union(); }};
}
inline Options cast_options(TflType from, TflType to) {
  return {BuiltinOptions::CastOptions, [=](fb::FlatBufferBuilder& b) {
            return ::tflite::CreateCastOptions(b, static_cast<std::int8_t>(from), static_cast<std::int8_t>(to)).Union();
          }};
}
/// Binary arithmetic ops carry their options table (no fused activation).
template <class Op>
Options binary_options() {
  if constexpr (std::is_same_v<Op, Add>) return {BuiltinOptions::AddOptions, [](fb::FlatBufferBuilder& b) { return ::tflite::CreateAddOptions(b).Union(); }};
  if constexpr (std::is_same_v<Op, Sub>) return {BuiltinOptions::SubOptions, [](fb::FlatBufferBuilder& b) { return ::tflite::CreateSubOptions(b).Union(); }};
  if constexpr (std::is_same_v<Op, Mul>) return {BuiltinOptions::MulOptions, [](fb::FlatBufferBuilder& b) { return ::tflite::CreateMulOptions(b).Union(); }};
  if constexpr (std::is_same_v<Op, Div>) return {BuiltinOptions::DivOptions, [](fb::FlatBufferBuilder& b) { return ::tflite::CreateDivOptions(b).Union(); }};
  return {};
}

/// A same-shaped copy of tensor `x` into tensor `out`.
inline void copy(Context& c, std::int32_t x, std::int32_t out, const Shape& shape) {
  c.op(BuiltinOperator::RESHAPE, {x, c.int32s(shape)}, {out}, reshape_options());
}

/// a (op) b into a new f32 tensor, for the formulas below.
inline std::int32_t f32_op(Context& c, BuiltinOperator code, std::vector<std::int32_t> inputs, const Shape& shape,
                           Options options = {}) {
  return c.helper(code, std::move(inputs), TflType::FLOAT32, shape, std::move(options));
}

/// TFLite windows pad only as SAME or VALID. Whether rml's pads on one
/// spatial axis are exactly SAME's: out = ceil(in / stride), and the total
/// padding split with the smaller half first.
inline bool same_padding_axis(std::int64_t in, std::int64_t out, std::int64_t extent, std::int64_t stride,
                              std::int64_t before, std::int64_t after) {
  if (out != (in + stride - 1) / stride) return false;
  const std::int64_t total = std::max<std::int64_t>((out - 1) * stride + extent - in, 0);
  return before == total / 2 && after == total - total / 2;
}

/// The padding of a window op in NHWC: VALID when rml has none, SAME when
/// rml's pads are SAME's, else the input padded first (with `fill`) and VALID.
struct Padded {
  ::tflite::Padding padding;
  std::int32_t input;
};
template <class Op>
Padded pad_window(Context& c, const Node& node, const Op& op, std::int32_t x_nhwc, const Shape& kernel,
                  std::optional<double> fill) {
  const Shape& x = c.type(node.inputs[0]).shape;
  const Shape& y = c.type(node.outputs[0]).shape;
  const Ints& p = op.pads;  // top, left, bottom, right
  if (p == Ints{0, 0, 0, 0}) return {::tflite::Padding::VALID, x_nhwc};
  bool same = true;
  for (int axis = 0; axis < 2; ++axis)
    same = same && same_padding_axis(x[2 + axis], y[2 + axis], op.dilations[axis] * (kernel[axis] - 1) + 1,
                                     op.strides[axis], p[axis], p[axis + 2]);
  if (same) return {::tflite::Padding::SAME, x_nhwc};
  if (!fill) fail(ErrorCode::unsupported, "tflite: these pads are neither SAME nor VALID");  // refused in preflight
  const Shape padded_shape{x[0], x[2] + p[0] + p[2], x[3] + p[1] + p[3], x[1]};
  const std::int32_t paddings = c.int32s({0, 0, p[0], p[2], p[1], p[3], 0, 0}, Shape{4, 2});
  const std::int32_t padded = c.temporary(TflType::FLOAT32, padded_shape);
  c.op(BuiltinOperator::PADV2, {x_nhwc, paddings, c.scalar(*fill, DType::f32)}, {padded});
  return {::tflite::Padding::VALID, padded};
}

/// The NHWC result of a spatial op, written back to the rml output (NCHW).
inline void store_nchw(Context& c, const Node& node, std::int32_t y_nhwc) {
  c.op(BuiltinOperator::TRANSPOSE, {y_nhwc, c.int32s(to_nchw)}, {c.output(node)});
}
inline Shape nhwc_shape(const Shape& nchw) { return Context::permute(nchw, to_nhwc); }

/// Dimensions and index operands TFLite holds as int32.
inline std::string fits_int32(const Graph& graph, const Node& node) {
  for (const auto& ids : {node.inputs, node.outputs})
    for (ValueId v : ids)
      for (std::int64_t d : graph.values[v].type.shape)
        if (d > INT32_MAX) return detail::concat("dimension ", d, " does not fit TFLite's int32 shapes");
  return "";
}

}  // namespace tfl

template <class Op>
  requires(tfl::same_op<Op> != tfl::BuiltinOperator::CUSTOM)
struct Lowering<Tflite, Op> {
  static void lower(tfl::Context& c, const Node& node, const Op&) {
    std::vector<std::int32_t> inputs;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) inputs.push_back(c.input(node, i));
    c.op(tfl::same_op<Op>, inputs, {c.output(node)}, tfl::binary_options<Op>());
  }
  static std::string refuse(const Graph& graph, const Node& node, const Op&) { return tfl::fits_int32(graph, node); }
};

template <class Op>
  requires(tfl::comparison<Op> != tfl::BuiltinOperator::CUSTOM)
struct Lowering<Tflite, Op> {
  static void lower(tfl::Context& c, const Node& node, const Op&) {
    const Shape& y = c.type(node.outputs[0]).shape;
    const std::int32_t truth = c.helper(tfl::comparison<Op>, {c.input(node, 0), c.input(node, 1)}, tfl::TflType::BOOL, y);
    c.op(tfl::BuiltinOperator::CAST, {truth}, {c.output(node)}, tfl::cast_options(tfl::TflType::BOOL, tfl::TflType::FLOAT32));
  }
  static std::string refuse(const Graph& graph, const Node& node, const Op&) { return tfl::fits_int32(graph, node); }
};

/// RELU has no int32 kernel: max(x, 0) for i32.
template <>
struct Lowering<Tflite, Relu> {
  static void lower(tfl::Context& c, const Node& node, const Relu&) {
    if (c.type(node.inputs[0]).dtype == DType::f32) return c.op(tfl::BuiltinOperator::RELU, {c.input(node, 0)}, {c.output(node)});
    c.op(tfl::BuiltinOperator::MAXIMUM, {c.input(node, 0), c.scalar(0, DType::i32)}, {c.output(node)});
  }
};

template <>
struct Lowering<Tflite, Reciprocal> {
  static void lower(tfl::Context& c, const Node& node, const Reciprocal&) {
    c.op(tfl::BuiltinOperator::DIV, {c.scalar(1.0, DType::f32), c.input(node, 0)}, {c.output(node)}, tfl::binary_options<Div>());
  }
};

/// where(cond != 0, a, b): NOT_EQUAL gives the bool SELECT_V2 takes (NaN
/// counts as true, as in rml).
template <>
struct Lowering<Tflite, Select> {
  static void lower(tfl::Context& c, const Node& node, const Select&) {
    const TensorType& cond = c.type(node.inputs[0]);
    const std::int32_t truth = c.helper(tfl::BuiltinOperator::NOT_EQUAL, {c.input(node, 0), c.scalar(0, cond.dtype)},
                                        tfl::TflType::BOOL, cond.shape);
    c.op(tfl::BuiltinOperator::SELECT_V2, {truth, c.input(node, 1), c.input(node, 2)}, {c.output(node)});
  }
};

/// Never an identity cast (a copy instead). f32 -> i32 saturates and maps
/// NaN to 0 in rml, where TFLite's cast leaves out-of-range values undefined.
template <>
struct Lowering<Tflite, Cast> {
  static void lower(tfl::Context& c, const Node& node, const Cast& op) {
    using tfl::BuiltinOperator;
    const TensorType& x = c.type(node.inputs[0]);
    if (x.dtype == op.to) return tfl::copy(c, c.input(node, 0), c.output(node), x.shape);
    if (op.to == DType::f32)
      return c.op(BuiltinOperator::CAST, {c.input(node, 0)}, {c.output(node)}, tfl::cast_options(tfl::TflType::INT32, tfl::TflType::FLOAT32));
    const std::int32_t in = c.input(node, 0);
    const std::int32_t nan = c.helper(BuiltinOperator::NOT_EQUAL, {in, in}, tfl::TflType::BOOL, x.shape);
    const std::int32_t finite = tfl::f32_op(c, BuiltinOperator::SELECT_V2, {nan, c.scalar(0, DType::f32), in}, x.shape);
    // The largest f32 below 2^31 converts exactly; 2^31 and above saturate to INT32_MAX.
    const std::int32_t low = tfl::f32_op(c, BuiltinOperator::MAXIMUM, {finite, c.scalar(-2147483648.0, DType::f32)}, x.shape);
    const std::int32_t clipped = tfl::f32_op(c, BuiltinOperator::MINIMUM, {low, c.scalar(2147483520.0, DType::f32)}, x.shape);
    const std::int32_t converted = c.helper(BuiltinOperator::CAST, {clipped}, tfl::TflType::INT32, x.shape,
                                            tfl::cast_options(tfl::TflType::FLOAT32, tfl::TflType::INT32));
    const std::int32_t too_large = c.helper(BuiltinOperator::GREATER_EQUAL, {in, c.scalar(2147483648.0, DType::f32)},
                                            tfl::TflType::BOOL, x.shape);
    c.op(BuiltinOperator::SELECT_V2, {too_large, c.scalar(2147483647.0, DType::i32), converted}, {c.output(node)});
  }
};

template <>
struct Lowering<Tflite, Reshape> {
  static void lower(tfl::Context& c, const Node& node, const Reshape&) {
    tfl::copy(c, c.input(node, 0), c.output(node), c.type(node.outputs[0]).shape);
  }
  static std::string refuse(const Graph& graph, const Node& node, const Reshape&) { return tfl::fits_int32(graph, node); }
};

template <>
struct Lowering<Tflite, Transpose> {
  static void lower(tfl::Context& c, const Node& node, const Transpose& op) {
    c.op(tfl::BuiltinOperator::TRANSPOSE, {c.input(node, 0), c.int32s(op.perm)}, {c.output(node)});
  }
};

template <>
struct Lowering<Tflite, BroadcastTo> {
  static void lower(tfl::Context& c, const Node& node, const BroadcastTo&) {
    c.op(tfl::BuiltinOperator::BROADCAST_TO, {c.input(node, 0), c.int32s(c.type(node.outputs[0]).shape)}, {c.output(node)});
  }
};

template <>
struct Lowering<Tflite, Concat> {
  static void lower(tfl::Context& c, const Node& node, const Concat& op) {
    std::vector<std::int32_t> inputs;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) inputs.push_back(c.input(node, i));
    const auto axis = static_cast<std::int32_t>(normalize_axis(op.axis, c.type(node.outputs[0]).shape.size(), "axis"));
    c.op(tfl::BuiltinOperator::CONCATENATION, inputs, {c.output(node)},
         {tfl::BuiltinOptions::ConcatenationOptions,
          [=](tfl::fb::FlatBufferBuilder& b) { return ::tflite::CreateConcatenationOptions(b, axis).Union(); }});
  }
};

/// Every axis sliced with rml's own clamped start, step and length. The end
/// is one past the last index taken; a negative step that runs to the front
/// sets the axis's end_mask bit (a negative end would count from the back).
/// An empty axis is [0, 0) with step 2: LiteRT's XNNPACK delegate, which
/// takes stride-1 slices, returns the whole axis for a stride-1 [0, 0)
/// (ai-edge-litert 2.3.0; its builtin kernels give the empty axis).
template <>
struct Lowering<Tflite, Slice> {
  static void lower(tfl::Context& c, const Node& node, const Slice& op) {
    std::vector<std::int64_t> begin, end, strides;
    std::int32_t end_mask = 0;
    const auto ranges = op.ranges(c.type(node.inputs[0]).shape);
    for (std::size_t axis = 0; axis < ranges.size(); ++axis) {
      const auto& r = ranges[axis];
      if (r.count <= 1) {  // empty, or one index: no step to express
        begin.push_back(r.count == 0 ? 0 : r.start), end.push_back(r.count == 0 ? 0 : r.start + 1);
        strides.push_back(r.count == 0 ? 2 : 1);
        continue;
      }
      const std::int64_t last = r.start + r.step * (r.count - 1);
      begin.push_back(r.start), strides.push_back(r.step);
      if (r.step > 0) end.push_back(last + 1);
      else if (last > 0) end.push_back(last - 1);
      else end.push_back(0), end_mask |= 1 << axis;
    }
    c.op(tfl::BuiltinOperator::STRIDED_SLICE, {c.input(node, 0), c.int32s(begin), c.int32s(end), c.int32s(strides)},
         {c.output(node)},
         {tfl::BuiltinOptions::StridedSliceOptions,
          [=](tfl::fb::FlatBufferBuilder& b) { return ::tflite::CreateStridedSliceOptions(b, 0, end_mask).Union(); }});
  }
  static std::string refuse(const Graph& graph, const Node& node, const Slice& op) {
    if (std::string reason = tfl::fits_int32(graph, node); !reason.empty()) return reason;
    for (const auto& r : op.ranges(graph.values[node.inputs[0]].type.shape))
      if (r.count > 1 && (r.step > INT32_MAX || r.step < -INT32_MAX)) return detail::concat("step ", r.step, " does not fit in int32");
    return graph.values[node.inputs[0]].type.shape.size() > 5 ? "STRIDED_SLICE takes at most 5 dimensions" : "";
  }
};

template <>
struct Lowering<Tflite, Pad> {
  static void lower(tfl::Context& c, const Node& node, const Pad& op) {
    const TensorType& x = c.type(node.inputs[0]);
    std::vector<std::int64_t> paddings;
    const std::size_t rank = x.shape.size();
    for (std::size_t i = 0; i < rank; ++i) paddings.push_back(op.pads[i]), paddings.push_back(op.pads[rank + i]);
    c.op(tfl::BuiltinOperator::PADV2,
         {c.input(node, 0), c.int32s(paddings, Shape{static_cast<std::int64_t>(rank), 2}), c.scalar(op.value, x.dtype)},
         {c.output(node)});
  }
  static std::string refuse(const Graph& graph, const Node& node, const Pad&) { return tfl::fits_int32(graph, node); }
};

/// TFLite's GATHER takes indices in [0, dim): rml's negative ones are
/// wrapped with FLOOR_MOD (constant indices are wrapped here).
template <>
struct Lowering<Tflite, Gather> {
  static void lower(tfl::Context& c, const Node& node, const Gather& op) {
    const Shape& data = c.type(node.inputs[0]).shape;
    const auto axis = static_cast<std::int32_t>(normalize_axis(op.axis, data.size(), "axis"));
    const std::int64_t dim = data[static_cast<std::size_t>(axis)];
    std::int32_t indices;
    const ValueId index_value = node.inputs[1];
    if (c.is_constant(index_value)) {
      const Tensor& t = *c.graph().values[index_value].data;
      std::vector<std::int64_t> wrapped;
      const auto* raw = reinterpret_cast<const std::int32_t*>(t.raw());
      for (std::size_t i = 0; i < t.bytes() / 4; ++i) wrapped.push_back(raw[i] < 0 ? raw[i] + dim : raw[i]);
      indices = c.int32s(wrapped, t.shape());
    } else {
      indices = c.helper(tfl::BuiltinOperator::FLOOR_MOD, {c.input(node, 1), c.scalar(static_cast<double>(dim), DType::i32)},
                         tfl::TflType::INT32, c.type(index_value).shape);
    }
    c.op(tfl::BuiltinOperator::GATHER, {c.input(node, 0), indices}, {c.output(node)},
         {tfl::BuiltinOptions::GatherOptions,
          [=](tfl::fb::FlatBufferBuilder& b) { return ::tflite::CreateGatherOptions(b, axis).Union(); }});
  }
  static std::string refuse(const Graph& graph, const Node& node, const Gather&) { return tfl::fits_int32(graph, node); }
};

/// TOPK_V2 along the last axis; its indices are int32 like rml's.
template <>
struct Lowering<Tflite, TopK> {
  static void lower(tfl::Context& c, const Node& node, const TopK& op) {
    c.op(tfl::BuiltinOperator::TOPK_V2, {c.input(node, 0), c.scalar(static_cast<double>(op.k), DType::i32)},
         {c.output(node, 0), c.output(node, 1)},
         {tfl::BuiltinOptions::TopKV2Options, [](tfl::fb::FlatBufferBuilder& b) { return ::tflite::CreateTopKV2Options(b).Union(); }});
  }
  static std::string refuse(const Graph& graph, const Node& node, const TopK&) { return tfl::fits_int32(graph, node); }
};

namespace tfl {
template <class Kind> constexpr BuiltinOperator reduction = BuiltinOperator::CUSTOM;
template <> constexpr BuiltinOperator reduction<SumKind> = BuiltinOperator::SUM;
template <> constexpr BuiltinOperator reduction<MeanKind> = BuiltinOperator::MEAN;
template <> constexpr BuiltinOperator reduction<MaxKind> = BuiltinOperator::REDUCE_MAX;
template <> constexpr BuiltinOperator reduction<MinKind> = BuiltinOperator::REDUCE_MIN;
}  // namespace tfl

/// rml's empty axes reduce nothing: a copy.
template <class Kind>
  requires(tfl::reduction<Kind> != tfl::BuiltinOperator::CUSTOM)
struct Lowering<Tflite, Reduce<Kind>> {
  static void lower(tfl::Context& c, const Node& node, const Reduce<Kind>& op) {
    if (op.axes.empty()) return tfl::copy(c, c.input(node, 0), c.output(node), c.type(node.outputs[0]).shape);
    c.op(tfl::reduction<Kind>, {c.input(node, 0), c.int32s(op.axes)}, {c.output(node)}, tfl::reducer_options(op.keep_dims));
  }
  static std::string refuse(const Graph& graph, const Node& node, const Reduce<Kind>&) { return tfl::fits_int32(graph, node); }
};

/// CUMSUM with its axis as an int32 scalar tensor.
template <>
struct Lowering<Tflite, CumSum> {
  static void lower(tfl::Context& c, const Node& node, const CumSum& op) {
    const std::int64_t axis = normalize_axis(op.axis, c.type(node.inputs[0]).shape.size(), "axis");
    c.op(tfl::BuiltinOperator::CUMSUM, {c.input(node, 0), c.scalar(static_cast<double>(axis), DType::i32)},
         {c.output(node)}, {tfl::BuiltinOptions::CumsumOptions, [exclusive = op.exclusive, reverse = op.reverse](
                               tfl::fb::FlatBufferBuilder& b) {
           return ::tflite::CreateCumsumOptions(b, exclusive, reverse).Union();
         }});
  }
  static std::string refuse(const Graph& graph, const Node& node, const CumSum&) { return tfl::fits_int32(graph, node); }
};

/// SOFTMAX works on the last axis: another axis is moved there and back.
template <>
struct Lowering<Tflite, Softmax> {
  static void lower(tfl::Context& c, const Node& node, const Softmax& op) {
    const TensorType& x = c.type(node.inputs[0]);
    const auto rank = static_cast<std::int64_t>(x.shape.size());
    const std::int64_t axis = normalize_axis(op.axis, x.shape.size(), "axis");
    if (axis == rank - 1) return c.op(tfl::BuiltinOperator::SOFTMAX, {c.input(node, 0)}, {c.output(node)}, tfl::softmax_options());
    Ints perm;
    for (std::int64_t i = 0; i < rank; ++i) perm.push_back(i);
    std::swap(perm[static_cast<std::size_t>(axis)], perm.back());  // its own inverse
    const std::int32_t moved = c.transpose(c.input(node, 0), x.dtype, x.shape, perm);
    const Shape moved_shape = tfl::Context::permute(x.shape, perm);
    const std::int32_t soft = tfl::f32_op(c, tfl::BuiltinOperator::SOFTMAX, {moved}, moved_shape, tfl::softmax_options());
    c.op(tfl::BuiltinOperator::TRANSPOSE, {soft, c.int32s(perm)}, {c.output(node)});
  }
};

/// (x - mean) * rsqrt(var + eps) over the last axis, then * scale, + bias.
template <>
struct Lowering<Tflite, LayerNorm> {
  static void lower(tfl::Context& c, const Node& node, const LayerNorm& op) {
    using tfl::BuiltinOperator;
    const Shape& x = c.type(node.inputs[0]).shape;
    Shape row = x;
    row.back() = 1;
    const std::int32_t last = c.int32s({static_cast<std::int64_t>(x.size()) - 1});
    const std::int32_t mean = tfl::f32_op(c, BuiltinOperator::MEAN, {c.input(node, 0), last}, row, tfl::reducer_options(true));
    const std::int32_t centred = tfl::f32_op(c, BuiltinOperator::SUB, {c.input(node, 0), mean}, x, tfl::binary_options<Sub>());
    const std::int32_t squares = tfl::f32_op(c, BuiltinOperator::MUL, {centred, centred}, x, tfl::binary_options<Mul>());
    const std::int32_t variance = tfl::f32_op(c, BuiltinOperator::MEAN, {squares, last}, row, tfl::reducer_options(true));
    const std::int32_t shifted = tfl::f32_op(c, BuiltinOperator::ADD, {variance, c.scalar(op.eps, DType::f32)}, row, tfl::binary_options<Add>());
    const std::int32_t inverse = tfl::f32_op(c, BuiltinOperator::RSQRT, {shifted}, row);
    const std::size_t extra = node.inputs.size() - 1;  // scale, then bias
    std::int32_t y = (extra == 0 ? c.output(node) : c.temporary(tfl::TflType::FLOAT32, x));
    c.op(BuiltinOperator::MUL, {centred, inverse}, {y}, tfl::binary_options<Mul>());
    for (std::size_t i = 1; i <= extra; ++i) {
      const std::int32_t next = i == extra ? c.output(node) : c.temporary(tfl::TflType::FLOAT32, x);
      if (i == 1) c.op(BuiltinOperator::MUL, {y, c.input(node, 1)}, {next}, tfl::binary_options<Mul>());
      else c.op(BuiltinOperator::ADD, {y, c.input(node, 2)}, {next}, tfl::binary_options<Add>());
      y = next;
    }
  }
};

template <>
struct Lowering<Tflite, Gelu> {
  static void lower(tfl::Context& c, const Node& node, const Gelu& op) {
    const bool tanh = op.uses_tanh();
    c.op(tfl::BuiltinOperator::GELU, {c.input(node, 0)}, {c.output(node)},
         {tfl::BuiltinOptions::GeluOptions, [=](tfl::fb::FlatBufferBuilder& b) { return ::tflite::CreateGeluOptions(b, tanh).Union(); }});
  }
};

/// BATCH_MATMUL (rank 2 to 5, batch axes broadcast); 1-D operands are
/// reshaped to a row or a column and the result back.
template <>
struct Lowering<Tflite, MatMul> {
  static void lower(tfl::Context& c, const Node& node, const MatMul&) {
    const Shape &a = c.type(node.inputs[0]).shape, &b = c.type(node.inputs[1]).shape;
    std::int32_t left = c.input(node, 0), right = c.input(node, 1);
    if (a.size() == 1) left = c.helper(tfl::BuiltinOperator::RESHAPE, {left, c.int32s({1, a[0]})}, tfl::TflType::FLOAT32, {1, a[0]}, tfl::reshape_options());
    if (b.size() == 1) right = c.helper(tfl::BuiltinOperator::RESHAPE, {right, c.int32s({b[0], 1})}, tfl::TflType::FLOAT32, {b[0], 1}, tfl::reshape_options());
    if (a.size() > 1 && b.size() > 1)
      return c.op(tfl::BuiltinOperator::BATCH_MATMUL, {left, right}, {c.output(node)}, tfl::batch_matmul_options(false));
    Shape full = c.type(node.outputs[0]).shape;
    if (a.size() == 1) full.insert(full.end() - (b.size() == 1 ? 0 : 1), 1);
    if (b.size() == 1) full.push_back(1);
    const std::int32_t product = tfl::f32_op(c, tfl::BuiltinOperator::BATCH_MATMUL, {left, right}, full, tfl::batch_matmul_options(false));
    tfl::copy(c, product, c.output(node), c.type(node.outputs[0]).shape);
  }
  static std::string refuse(const Graph& graph, const Node& node, const MatMul&) {
    const TensorType& a = graph.values[node.inputs[0]].type;
    if (a.dtype != DType::f32) return "BATCH_MATMUL has no int32 kernel";
    if (a.shape.size() > 5 || graph.values[node.inputs[1]].type.shape.size() > 5) return "BATCH_MATMUL takes at most 5 dimensions";
    return tfl::fits_int32(graph, node);
  }
};

/// Attention as its formula: softmax(q k^T * scale + mask [+ causal]) v. The
/// causal mask is a constant [Lq, Lk] of 0 and -inf (top-left aligned).
template <>
struct Lowering<Tflite, Sdpa> {
  static void lower(tfl::Context& c, const Node& node, const Sdpa& op) {
    using tfl::BuiltinOperator;
    const Shape& q = c.type(node.inputs[0]).shape;
    const Shape& k = c.type(node.inputs[1]).shape;
    const std::int64_t lq = q[q.size() - 2], lk = k[k.size() - 2], d = q.back();
    Shape scores_shape = broadcast_shapes(std::span(q).first(q.size() - 2), std::span(k).first(k.size() - 2), "batch");
    scores_shape.push_back(lq), scores_shape.push_back(lk);
    const double scale = op.scale ? *op.scale : 1.0 / std::sqrt(static_cast<double>(d));
    std::int32_t scores = tfl::f32_op(c, BuiltinOperator::BATCH_MATMUL, {c.input(node, 0), c.input(node, 1)}, scores_shape,
                                      tfl::batch_matmul_options(true));
    scores = tfl::f32_op(c, BuiltinOperator::MUL, {scores, c.scalar(scale, DType::f32)}, scores_shape, tfl::binary_options<Mul>());
    if (node.inputs.size() == 4) {
      scores_shape = tfl::broadcast(scores_shape, c.type(node.inputs[3]).shape);
      scores = tfl::f32_op(c, BuiltinOperator::ADD, {scores, c.input(node, 3)}, scores_shape, tfl::binary_options<Add>());
    }
    if (op.causal) {
      std::vector<float> mask(static_cast<std::size_t>(lq * lk), 0.0f);
      for (std::int64_t i = 0; i < lq; ++i)
        for (std::int64_t j = i + 1; j < lk; ++j) mask[static_cast<std::size_t>(i * lk + j)] = -INFINITY;
      scores = tfl::f32_op(c, BuiltinOperator::ADD, {scores, c.floats({lq, lk}, mask)}, scores_shape, tfl::binary_options<Add>());
    }
    const std::int32_t weights = tfl::f32_op(c, BuiltinOperator::SOFTMAX, {scores}, scores_shape, tfl::softmax_options());
    c.op(BuiltinOperator::BATCH_MATMUL, {weights, c.input(node, 2)}, {c.output(node)}, tfl::batch_matmul_options(false));
  }
  static std::string refuse(const Graph& graph, const Node& node, const Sdpa&) {
    for (ValueId v : node.inputs)
      if (graph.values[v].type.shape.size() > 5) return "BATCH_MATMUL takes at most 5 dimensions";
    return tfl::fits_int32(graph, node);
  }
};

/// CONV_2D (OHWI filter) or, when each group is one input channel,
/// DEPTHWISE_CONV_2D ([1, kh, kw, O] filter); in NHWC between transposes.
template <>
struct Lowering<Tflite, Conv2d> {
  static void lower(tfl::Context& c, const Node& node, const Conv2d& op) {
    const Shape& w = c.type(node.inputs[1]).shape;
    const Shape& x = c.type(node.inputs[0]).shape;
    const std::int32_t x_nhwc = c.permuted(node.inputs[0], tfl::to_nhwc);
    const auto [padding, input] = tfl::pad_window(c, node, op, x_nhwc, {w[2], w[3]}, 0.0);
    const std::int32_t bias = node.inputs.size() == 3 ? c.input(node, 2)
                                                      : c.floats({w[0]}, std::vector<float>(static_cast<std::size_t>(w[0]), 0.0f));
    const auto sh = static_cast<std::int32_t>(op.strides[0]), sw = static_cast<std::int32_t>(op.strides[1]);
    const auto dh = static_cast<std::int32_t>(op.dilations[0]), dw = static_cast<std::int32_t>(op.dilations[1]);
    const auto pad = static_cast<std::int8_t>(padding);
    const Shape y_nhwc = tfl::nhwc_shape(c.type(node.outputs[0]).shape);
    std::int32_t y;
    if (op.groups == 1) {
      y = tfl::f32_op(c, tfl::BuiltinOperator::CONV_2D, {input, c.permuted(node.inputs[1], tfl::to_nhwc), bias}, y_nhwc,
                      {tfl::BuiltinOptions::Conv2DOptions, [=](tfl::fb::FlatBufferBuilder& b) {
                         return ::tflite::CreateConv2DOptions(b, pad, sw, sh, 0, dw, dh).Union();
                       }});
    } else {
      const auto multiplier = static_cast<std::int32_t>(w[0] / x[1]);
      y = tfl::f32_op(c, tfl::BuiltinOperator::DEPTHWISE_CONV_2D, {input, c.permuted(node.inputs[1], {1, 2, 3, 0}), bias},
                      y_nhwc, {tfl::BuiltinOptions::DepthwiseConv2DOptions, [=](tfl::fb::FlatBufferBuilder& b) {
                                 return ::tflite::CreateDepthwiseConv2DOptions(b, pad, sw, sh, multiplier, 0, dw, dh).Union();
                               }});
    }
    tfl::store_nchw(c, node, y);
  }
  static std::string refuse(const Graph& graph, const Node& node, const Conv2d& op) {
    const Shape& x = graph.values[node.inputs[0]].type.shape;
    if (op.groups != 1 && op.groups != x[1]) return "grouped convolution other than depthwise (groups = input channels)";
    for (std::int64_t v : {op.strides[0], op.strides[1], op.dilations[0], op.dilations[1]})
      if (v > INT32_MAX) return detail::concat("stride or dilation ", v, " does not fit in int32");
    return tfl::fits_int32(graph, node);
  }
};

namespace tfl {
/// MAX_POOL_2D / AVERAGE_POOL_2D in NHWC: no dilation.
template <class Op>
void pool(Context& c, const Node& node, const Op& op, BuiltinOperator code, std::optional<double> fill) {
  const std::int32_t x_nhwc = c.permuted(node.inputs[0], to_nhwc);
  const auto [padding, input] = pad_window(c, node, op, x_nhwc, op.kernel, fill);
  const auto pad = static_cast<std::int8_t>(padding);
  const auto sh = static_cast<std::int32_t>(op.strides[0]), sw = static_cast<std::int32_t>(op.strides[1]);
  const auto kh = static_cast<std::int32_t>(op.kernel[0]), kw = static_cast<std::int32_t>(op.kernel[1]);
  const std::int32_t y = f32_op(c, code, {input}, nhwc_shape(c.type(node.outputs[0]).shape),
                                {BuiltinOptions::Pool2DOptions, [=](fb::FlatBufferBuilder& b) {
                                   return ::tflite::CreatePool2DOptions(b, pad, sw, sh, kw, kh).Union();
                                 }});
  store_nchw(c, node, y);
}
template <class Op>
std::string refuse_pool(const Graph& graph, const Node& node, const Op& op) {
  if (op.dilations != Ints{1, 1}) return "TFLite pools have no dilation";
  for (std::int64_t v : {op.strides[0], op.strides[1], op.kernel[0], op.kernel[1]})
    if (v > INT32_MAX) return detail::concat("stride or window ", v, " does not fit in int32");
  return fits_int32(graph, node);
}
}  // namespace tfl

/// Padding is ignored by the max: SAME's, or a fill of -inf.
template <>
struct Lowering<Tflite, MaxPool2d> {
  static void lower(tfl::Context& c, const Node& node, const MaxPool2d& op) {
    tfl::pool(c, node, op, tfl::BuiltinOperator::MAX_POOL_2D, -INFINITY);
  }
  static std::string refuse(const Graph& graph, const Node& node, const MaxPool2d& op) { return tfl::refuse_pool(graph, node, op); }
};

/// count_include_pad: zeros padded in, counted by a VALID window. Otherwise
/// only SAME's padding (whose cells TFLite does not count) can be expressed.
template <>
struct Lowering<Tflite, AvgPool2d> {
  static void lower(tfl::Context& c, const Node& node, const AvgPool2d& op) {
    tfl::pool(c, node, op, tfl::BuiltinOperator::AVERAGE_POOL_2D, op.count_include_pad ? std::optional(0.0) : std::nullopt);
  }
  static std::string refuse(const Graph& graph, const Node& node, const AvgPool2d& op) {
    if (std::string reason = tfl::refuse_pool(graph, node, op); !reason.empty()) return reason;
    if (op.count_include_pad || op.pads == Ints{0, 0, 0, 0}) return "";
    const Shape& x = graph.values[node.inputs[0]].type.shape;
    const Shape& y = graph.values[node.outputs[0]].type.shape;
    for (int axis = 0; axis < 2; ++axis)
      if (!tfl::same_padding_axis(x[2 + axis], y[2 + axis], op.kernel[axis], op.strides[axis], op.pads[axis], op.pads[axis + 2]))
        return "pads that are not SAME's, uncounted (count_include_pad false)";
    return "";
  }
};

}  // namespace rml::emit
