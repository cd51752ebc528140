// drop_implicit_broadcasts: a broadcast_to, or a reshape that only prepends
// size-1 axes, goes when every reader is a binary op that broadcasts anyway
// and would compute the same type without it.
#pragma once

#include "rml/passes/common.hpp"

namespace rml::passes {

struct DropImplicitBroadcasts {
  static constexpr std::string_view name = "drop_implicit_broadcasts";

  static void run(Rewriter& rw) {
    const std::size_t count = rw.graph().nodes.size();
    for (std::size_t n = 0; n < count; ++n) {
      const Node node = rw.graph().nodes[n];
      if (!is_live(rw, node) || !is_explicit_broadcast(rw, node)) continue;
      const ValueId source = node.inputs[0], out = node.outputs[0];
      if (readers_accept(rw, out, rw.type(source))) reroute_readers(rw, out, source);
    }
  }

 private:
  static bool is_explicit_broadcast(const Rewriter& rw, const Node& node) {
    if (holds<BroadcastTo>(node.op)) return true;
    if (!holds<Reshape>(node.op)) return false;
    const Shape &in = rw.shape(node.inputs[0]), &out = rw.shape(node.outputs[0]);
    if (out.size() < in.size()) return false;
    const std::size_t lead = out.size() - in.size();
    return std::all_of(out.begin(), out.begin() + lead, [](std::int64_t d) { return d == 1; }) &&
           std::equal(in.begin(), in.end(), out.begin() + lead);
  }
};

}  // namespace rml::passes
