// drop_implicit_broadcasts and shrink_broadcast_constants: broadcasting that a
// binary op would do anyway is removed, whether written as a broadcast_to (or
// a reshape that only prepends size-1 axes) or folded into a constant that
// repeats along some axes.
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

struct ShrinkBroadcastConstants {
  static constexpr std::string_view name = "shrink_broadcast_constants";

  static void run(Rewriter& rw) {
    const std::size_t count = rw.graph().values.size();
    for (ValueId v = 0; v < count; ++v) {
      if (!rw.is_constant(v) || rw.readers(v).empty()) continue;
      const Tensor& data = rw.data(v);
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
