// sink_reshapes: f(reshape(x)) becomes reshape(f(x)) for a one-input
// elementwise f (an activation), when the reshape has no other reader. A
// linear layer on a 3-D input is lowered as reshape -> matmul -> bias add ->
// reshape; its activation then reads the reshape, so the executor could not
// run it in the matmul's epilogue. Below the activation, the reshape is a
// re-label again, and the activation joins the bias add's group. The same for
// f(reshape(x), y) (either order) when y already has x's shape and f's result
// the reshape's: PyTorch's LSTM step adds its input projection [B, 4H] to its
// product reshaped to [1, B, 4H], and that add now joins the product's epilogue.
#pragma once

#include "rml/passes/common.hpp"

namespace rml::passes {

struct SinkReshapes {
  static constexpr std::string_view name = "sink_reshapes";

  static void run(Rewriter& rw) {
    const std::size_t count = rw.graph().nodes.size();
    for (std::size_t n = 0; n < count; ++n) {
      const Node node = rw.graph().nodes[n];
      if (!is_live(rw, node) || !is_elementwise_op(node.op) || node.outputs.size() != 1) continue;
      for (std::size_t slot = 0; slot < node.inputs.size(); ++slot) {
        const Node* producer = rw.producer(node.inputs[slot]);
        if (!producer || !holds<Reshape>(producer->op) || !rw.single_use(node.inputs[slot])) continue;
        const ValueId x = producer->inputs[0];
        if (!others_match(rw, node, slot, rw.shape(x))) continue;
        const Reshape reshape = get<Reshape>(producer->op);
        std::vector<ValueId> inputs = node.inputs;
        inputs[slot] = x;
        const ValueId inner = rw.add(node.op, std::move(inputs));
        rw.replace_uses(node.outputs[0], rw.add(reshape, {inner}));
        break;
      }
    }
  }

 private:
  /// Whether the inputs of `node` other than `slot` have shape `x` and the
  /// result has the shape of input `slot`: then they pair element by element
  /// with x as they did with its reshape (which only adds or drops leading 1s).
  static bool others_match(const Rewriter& rw, const Node& node, std::size_t slot, const Shape& x) {
    if (rw.shape(node.outputs[0]) != rw.shape(node.inputs[slot])) return false;
    for (std::size_t i = 0; i < node.inputs.size(); ++i)
      if (i != slot && rw.shape(node.inputs[i]) != x) return false;
    return true;
  }
};

}  // namespace rml::passes
