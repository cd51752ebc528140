// Small facts the clean-up passes share: which ops broadcast elementwise, axis
// normalisation, and constants computed with the reference kernels.
#pragma once

#include <optional>

#include "rml/passes/match.hpp"
#include "rml/ref/evaluate.hpp"

namespace rml::passes {

/// Binary, comparison and select ops: elementwise with NumPy broadcasting.
inline bool is_broadcasting(const AnyOp& op) { return is_elementwise_op(op) && op_arity(op).min >= 2; }

inline std::int64_t normalize_axis(std::int64_t axis, std::size_t rank) {
  return axis < 0 ? axis + static_cast<std::int64_t>(rank) : axis;
}

/// `op` applied to constant tensors, by the reference kernels.
inline Tensor compute(const AnyOp& op, std::vector<const Tensor*> inputs) {
  return evaluate_op(op, inputs).front();
}

/// Output types of node `n` if input `slot` read a value of type `replacement`.
inline Types types_with(const Rewriter& rw, std::size_t n, std::size_t slot, const TensorType& replacement) {
  const Node& node = rw.graph().nodes[n];
  std::vector<TensorType> in;
  for (std::size_t i = 0; i < node.inputs.size(); ++i) in.push_back(i == slot ? replacement : rw.type(node.inputs[i]));
  try {
    return infer_types(node.op, in);
  } catch (const Error&) {
    return {};
  }
}

/// True when every reader of `v` is a broadcasting op whose output type would
/// not change if it read a value of type `replacement` instead.
inline bool readers_accept(const Rewriter& rw, ValueId v, const TensorType& replacement) {
  if (rw.is_output(v) || rw.readers(v).empty()) return false;
  for (std::size_t n : rw.readers(v)) {
    const Node& node = rw.graph().nodes[n];
    if (!is_broadcasting(node.op)) return false;
    for (std::size_t slot = 0; slot < node.inputs.size(); ++slot) {
      if (node.inputs[slot] != v) continue;
      const Types now = types_with(rw, n, slot, replacement);
      if (now.size() != 1 || now[0] != rw.type(node.outputs[0])) return false;
    }
  }
  return true;
}

/// Every reader of `v` reads `to` instead, slot by slot.
inline void reroute_readers(Rewriter& rw, ValueId v, ValueId to) {
  const std::vector<std::size_t> readers = rw.readers(v);
  for (std::size_t n : readers)
    for (std::size_t slot = 0; slot < rw.graph().nodes[n].inputs.size(); ++slot)
      if (rw.graph().nodes[n].inputs[slot] == v) rw.replace_input(n, slot, to);
}

/// A slice that keeps one index of one axis and every other axis whole, with
/// stride 1 (TensorFlow's strided slices also name the axes they keep whole):
/// one step of an unrolled loop's input.
struct UnitStep {
  std::int64_t axis, index;
};
inline std::optional<UnitStep> unit_step(const Rewriter& rw, const Node& slice) {
  if (!holds<Slice>(slice.op)) return std::nullopt;
  const Slice& op = get<Slice>(slice.op);
  const Shape& shape = rw.shape(slice.inputs[0]);
  std::optional<UnitStep> step;
  for (std::size_t i = 0; i < op.axes.size(); ++i) {
    const std::int64_t axis = normalize_axis(op.axes[i], shape.size());
    const std::int64_t start = normalize_axis(op.starts[i], static_cast<std::size_t>(shape[axis]));
    const std::int64_t stride = op.steps.empty() ? 1 : op.steps[i];
    if (stride != 1) return std::nullopt;
    if (start == 0 && op.ends[i] >= shape[axis]) continue;  // kept whole
    if (step || op.ends[i] != start + 1 || start < 0 || start >= shape[axis]) return std::nullopt;
    step = UnitStep{axis, start};
  }
  return step;
}

/// Whether a node's outputs are read at all (passes skip dead nodes).
inline bool is_live(const Rewriter& rw, const Node& node) {
  return std::any_of(node.outputs.begin(), node.outputs.end(), [&](ValueId v) { return rw.use_count(v) > 0; });
}

}  // namespace rml::passes
