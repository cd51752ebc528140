// share_identical_constants: every reader points at one copy of each distinct
// constant array, a named copy when there is one. Unrolled loops fold the same
// weight once per step; sharing keeps it in cache.
#pragma once

#include <unordered_map>

#include "rml/passes/common.hpp"

namespace rml::passes {

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

}  // namespace rml::passes
