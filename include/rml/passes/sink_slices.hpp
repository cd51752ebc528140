// sink_slices: slice(f(a, b)) becomes f(slice(a), slice(b)) for an
// elementwise f whose every reader is a slice read only by elementwise ops.
// An exported LSTM step adds the step's input projection to the recurrent
// product and slices the sum into its four gates, which two fused groups
// read: the sum, read by both, was a kernel of its own that wrote 64 KiB a
// step and read it back. Sliced, each gate's add joins its group, which reads
// both operands in place. Inputs broadcast along a sliced axis are not sliced.
#pragma once

#include "rml/passes/common.hpp"

namespace rml::passes {

struct SinkSlices {
  static constexpr std::string_view name = "sink_slices";

  static void run(Rewriter& rw) {
    const std::size_t count = rw.graph().nodes.size();
    for (std::size_t n = 0; n < count; ++n) {
      const Node node = rw.graph().nodes[n];
      if (!is_live(rw, node) || !is_elementwise_op(node.op) || node.outputs.size() != 1) continue;
      const ValueId sum = node.outputs[0];
      if (!read_as_slices_by_elementwise_ops(rw, sum)) continue;
      const std::vector<std::size_t> slices = rw.readers(sum);
      for (std::size_t s : slices) {
        const Node slice_node = rw.graph().nodes[s];
        const Slice& slice = std::get<Slice>(slice_node.op);
        std::vector<ValueId> inputs;
        for (ValueId in : node.inputs) inputs.push_back(sliced(rw, in, rw.shape(sum), slice));
        const ValueId out = rw.add(node.op, inputs);
        if (rw.type(out) != rw.type(slice_node.outputs[0]))
          fail(ErrorCode::internal, "sink_slices: ", describe_node(rw.graph(), s), " would change type");
        rw.replace_uses(slice_node.outputs[0], out);
      }
    }
  }

 private:
  /// Every use of `v` is a slice node, and every use of each slice an elementwise node.
  static bool read_as_slices_by_elementwise_ops(const Rewriter& rw, ValueId v) {
    if (rw.is_output(v) || rw.readers(v).empty()) return false;
    for (std::size_t s : rw.readers(v)) {
      const Node& slice = rw.graph().nodes[s];
      if (!holds<Slice>(slice.op)) return false;
      const ValueId piece = slice.outputs[0];
      if (rw.is_output(piece) || rw.readers(piece).empty()) return false;
      for (std::size_t r : rw.readers(piece))
        if (!is_elementwise_op(rw.graph().nodes[r].op)) return false;
    }
    return true;
  }

  /// `in` (an operand of an elementwise op whose output has shape `out`) cut
  /// as `slice` cuts that output: the same ranges on its aligned axes (NumPy
  /// aligns shapes at the right), none on axes it lacks or broadcasts.
  static ValueId sliced(Rewriter& rw, ValueId in, const Shape& out, const Slice& slice) {
    const Shape& shape = rw.shape(in);
    const std::int64_t lead = static_cast<std::int64_t>(out.size() - shape.size());
    Slice own;
    for (std::size_t i = 0; i < slice.axes.size(); ++i) {
      const std::int64_t axis = normalize_axis(slice.axes[i], out.size()) - lead;
      if (axis < 0 || shape[static_cast<std::size_t>(axis)] != out[static_cast<std::size_t>(axis + lead)]) continue;
      own.axes.push_back(axis);
      own.starts.push_back(slice.starts[i]);
      own.ends.push_back(slice.ends[i]);
      if (!slice.steps.empty()) own.steps.push_back(slice.steps[i]);
    }
    return own.axes.empty() ? in : rw.add(own, {in});
  }
};

}  // namespace rml::passes
