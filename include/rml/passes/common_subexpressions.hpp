// eliminate_common_subexpressions, share_identical_constants and
// eliminate_dead_code: one copy of each computation and each constant, and
// nothing nobody reads.
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
    const bool commutative = std::visit([](const auto& o) { return is_commutative<std::decay_t<decltype(o)>>; }, node.op);
    if (commutative) std::sort(inputs.begin(), inputs.end());
    return inputs;
  }
};

struct ShareIdenticalConstants {
  static constexpr std::string_view name = "share_identical_constants";

  static void run(Rewriter& rw) {
    std::unordered_multimap<std::size_t, ValueId> seen;  // content hash -> kept constant
    const std::size_t count = rw.graph().values.size();
    // Named constants first, so each group keeps a named copy when it has one.
    std::vector<ValueId> order;
    for (ValueId v = 0; v < count; ++v)
      if (rw.is_constant(v) && !rw.readers(v).empty()) order.push_back(v);
    std::stable_partition(order.begin(), order.end(), [&](ValueId v) { return !rw.graph().values[v].name.empty(); });
    for (ValueId v : order) {
      const Tensor& data = rw.data(v);
      const std::size_t hash = std::hash<std::string_view>{}(
          std::string_view(reinterpret_cast<const char*>(data.raw()), data.bytes())) ^ std::hash<std::string>{}(to_string(data.type()));
      bool shared = false;
      for (auto [it, end] = seen.equal_range(hash); it != end && !shared; ++it) {
        if (rw.type(it->second) != data.type() || !rw.data(it->second).bitwise_equal(data)) continue;
        reroute_readers(rw, v, it->second);
        shared = true;
      }
      if (!shared) seen.emplace(hash, v);
    }
  }
};

struct EliminateDeadCode {
  static constexpr std::string_view name = "eliminate_dead_code";
  static void run(Rewriter&) {}  // run_passes drops dead code after every pass
};

}  // namespace rml::passes
