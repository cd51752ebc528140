// eliminate_common_subexpressions: nodes applying the same op with the same
// attributes to the same inputs (in either order for commutative ops) merge.
#pragma once

#include <unordered_map>

#include "rml/passes/common.hpp"

namespace rml::passes {

struct EliminateCommonSubexpressions {
  static constexpr std::string_view name = "eliminate_common_subexpressions";

  static void run(Rewriter& rw) {
    std::unordered_multimap<std::size_t, std::size_t> seen;  // hash -> node index
    const std::size_t count = rw.graph().nodes.size();
    for (std::size_t n = 0; n < count; ++n) {
      const Node& node = rw.graph().nodes[n];
      if (!is_live(rw, node)) continue;
      const std::vector<ValueId> inputs = canonical_inputs(node);
      std::size_t hash = hash_op(node.op);
      for (ValueId id : inputs) hash = hash * 1000003u ^ id;
      bool merged = false;
      for (auto [it, end] = seen.equal_range(hash); it != end && !merged; ++it) {
        const Node& earlier = rw.graph().nodes[it->second];
        if (!same_op(earlier.op, node.op) || canonical_inputs(earlier) != inputs) continue;
        const std::vector<ValueId> outputs = node.outputs, kept = earlier.outputs;
        for (std::size_t i = 0; i < outputs.size(); ++i) rw.replace_uses(outputs[i], kept[i]);
        merged = true;
      }
      if (!merged) seen.emplace(hash, n);
    }
  }

 private:
  static std::vector<ValueId> canonical_inputs(const Node& node) {
    std::vector<ValueId> inputs = node.inputs;
    const bool commutative = is_commutative_op(node.op);
    if (commutative) std::sort(inputs.begin(), inputs.end());
    return inputs;
  }
};

}  // namespace rml::passes
