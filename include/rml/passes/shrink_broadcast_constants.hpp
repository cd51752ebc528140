// shrink_broadcast_constants: a constant that repeats along some axes (a
// broadcast folded at export time) is shrunk to the slice it repeats, when
// every reader broadcasts it back anyway.
#pragma once

#include "rml/passes/common.hpp"

namespace rml::passes {

struct ShrinkBroadcastConstants {
  static constexpr std::string_view name = "shrink_broadcast_constants";

  static void run(Rewriter& rw) {
    const std::size_t count = rw.graph().values.size();
    for (ValueId v = 0; v < count; ++v) {
      if (!rw.is_constant(v) || rw.readers(v).empty()) continue;
      const Tensor& data = rw.data(v);
      // An empty constant has nothing to save, and comparing its rows would
      // loop over its other axes (2^40 empty rows, once: a fuzz finding).
      if (data.elements() == 0) continue;
      Shape shrunk = data.shape();
      for (std::size_t axis = 0; axis < shrunk.size(); ++axis)
        if (shrunk[axis] > 1 && repeats_along(data, axis)) shrunk[axis] = 1;
      if (shrunk == data.shape() || !readers_accept(rw, v, {data.dtype(), shrunk})) continue;
      Ints axes, starts, ends;
      for (std::size_t axis = 0; axis < shrunk.size(); ++axis)
        if (shrunk[axis] != data.shape()[axis]) {
          axes.push_back(static_cast<std::int64_t>(axis));
          starts.push_back(0);
          ends.push_back(1);
        }
      const std::string name = rw.graph().values[v].name;
      const ValueId small = rw.add_constant(compute(Slice{axes, starts, ends, {}}, {&data}), name);
      rw.graph().values[v].name.clear();  // the full copy dies; its name moves on
      reroute_readers(rw, v, small);
    }
  }

 private:
  /// Every slice along `axis` equals the first, byte for byte.
  static bool repeats_along(const Tensor& t, std::size_t axis) {
    const Shape& s = t.shape();
    std::int64_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < axis; ++d) outer *= s[d];
    for (std::size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
    const std::size_t row = static_cast<std::size_t>(inner) * 4;
    const std::byte* base = t.raw();
    for (std::int64_t o = 0; o < outer; ++o) {
      const std::byte* first = base + static_cast<std::size_t>(o * s[axis]) * row;
      for (std::int64_t i = 1; i < s[axis]; ++i)
        if (std::memcmp(first, first + static_cast<std::size_t>(i) * row, row) != 0) return false;
    }
    return true;
  }
};

}  // namespace rml::passes
