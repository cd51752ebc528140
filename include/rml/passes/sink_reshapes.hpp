// sink_reshapes: f(reshape(x)) becomes reshape(f(x)) for a one-input
// elementwise f (an activation), when the reshape has no other reader. A
// linear layer on a 3-D input is lowered as reshape -> matmul -> bias add ->
// reshape; its activation then reads the reshape, so the executor could not
// run it in the matmul's epilogue. Below the activation, the reshape is a
// re-label again, and the activation joins the bias add's group.
#pragma once

#include "rml/passes/common.hpp"

namespace rml::passes {

struct SinkReshapes {
  static constexpr std::string_view name = "sink_reshapes";

  static void run(Rewriter& rw) {
    const std::size_t count = rw.graph().nodes.size();
    for (std::size_t n = 0; n < count; ++n) {
      const Node node = rw.graph().nodes[n];
      if (!is_live(rw, node) || !is_elementwise_op(node.op) || node.inputs.size() != 1 || node.outputs.size() != 1)
        continue;
      const Node* producer = rw.producer(node.inputs[0]);
      if (!producer || !holds<Reshape>(producer->op) || !rw.single_use(node.inputs[0])) continue;
      const Reshape reshape = get<Reshape>(producer->op);
      const ValueId inner = rw.add(node.op, {producer->inputs[0]});
      rw.replace_uses(node.outputs[0], rw.add(reshape, {inner}));
    }
  }
};

}  // namespace rml::passes
