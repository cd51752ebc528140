// chunk_step_projections: a hoisted input product P = X @ W (plus a bias along
// its last axis) that an unrolled loop reads one step at a time, through unit
// slices along one axis, is computed in chunks of steps when P is larger than
// a core's cache. Each chunk is then computed just before the first step that
// reads it, and its slices come back from cache instead of memory (the bench
// LSTM at batch 16: a 4 MiB P whose 64 KiB slices were each read from L3).
// Bit for bit: every element is the same sum, whichever rows share a product.
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "rml/passes/common.hpp"

namespace rml::passes {

struct ChunkStepProjections {
  static constexpr std::string_view name = "chunk_step_projections";

  /// A chunk's output at most this large: half of the 1 MiB L2 of the cores
  /// this was measured on, leaving room for the step's weights streaming past.
  static constexpr std::int64_t kChunkBytes = std::int64_t(512) << 10;

  static void run(Rewriter& rw) {
    const std::size_t count = rw.graph().nodes.size();
    for (std::size_t n = 0; n < count; ++n) {
      const Node& node = rw.graph().nodes[n];
      if (!is_live(rw, node) || !holds<MatMul>(node.op)) continue;
      if (auto projection = projection_of(rw, n)) split(rw, *projection);
    }
  }

 private:
  struct Projection {
    ValueId x, w;                 // P = X @ W ...
    std::optional<ValueId> bias;  // ... + bias, when there is one
    bool bias_first = false;      // add(bias, X @ W)
    ValueId p;
    std::int64_t axis;
  };

  /// The product of node `n` and its bias add, when every reader of the result
  /// is a unit slice along one axis other than the last (none of them a graph
  /// output) and the result is larger than a chunk.
  static std::optional<Projection> projection_of(const Rewriter& rw, std::size_t n) {
    const Node& product = rw.graph().nodes[n];
    Projection proj{product.inputs[0], product.inputs[1], std::nullopt, false, product.outputs[0], 0};
    if (!rw.is_constant(proj.w) || rw.shape(proj.w).size() != 2) return std::nullopt;
    if (rw.shape(proj.x).size() != rw.shape(proj.p).size()) return std::nullopt;
    if (rw.single_use(proj.p) && !rw.is_output(proj.p)) {
      const Node& add = rw.graph().nodes[rw.readers(proj.p).front()];
      if (holds<Add>(add.op)) {
        const bool first = add.inputs[1] == proj.p;
        const ValueId bias = add.inputs[first ? 0 : 1];
        if (rw.is_constant(bias) && along_last_axis(rw.shape(bias), rw.shape(proj.p)) &&
            rw.shape(add.outputs[0]) == rw.shape(proj.p)) {
          proj.bias = bias;
          proj.bias_first = first;
          proj.p = add.outputs[0];
        }
      }
    }
    const Shape& shape = rw.shape(proj.p);
    if (rw.is_output(proj.p) || rw.readers(proj.p).empty() || shape.size() < 2) return std::nullopt;
    std::optional<std::int64_t> axis;
    for (std::size_t reader : rw.readers(proj.p)) {
      const Node& slice = rw.graph().nodes[reader];
      const auto step = unit_step(rw, slice);
      if (!step || step->axis + 1 == static_cast<std::int64_t>(shape.size())) return std::nullopt;
      if ((axis && *axis != step->axis) || rw.is_output(slice.outputs[0])) return std::nullopt;
      axis = step->axis;
    }
    proj.axis = *axis;
    if (steps_per_chunk(rw, proj) >= shape[proj.axis]) return std::nullopt;  // one chunk: nothing to split
    return proj;
  }

  /// A bias that broadcasts along the product's last axis only.
  static bool along_last_axis(const Shape& bias, const Shape& product) {
    if (bias.empty() || bias.size() > product.size() || bias.back() != product.back()) return false;
    return std::all_of(bias.begin(), bias.end() - 1, [](std::int64_t d) { return d == 1; });
  }

  static std::int64_t steps_per_chunk(const Rewriter& rw, const Projection& proj) {
    const std::int64_t steps = std::max<std::int64_t>(1, rw.shape(proj.p)[proj.axis]);
    const TensorType& type = rw.type(proj.p);
    const std::int64_t step_elements = type.elements() / steps, size = static_cast<std::int64_t>(dtype_size(type.dtype));
    if (step_elements > kChunkBytes / size) return 1;  // (a step's bytes need not fit in 64 bits)
    return std::max<std::int64_t>(1, kChunkBytes / std::max<std::int64_t>(1, step_elements * size));
  }

  static void split(Rewriter& rw, const Projection& proj) {
    const std::int64_t steps = rw.shape(proj.p)[proj.axis];
    const std::int64_t per_chunk = steps_per_chunk(rw, proj);
    std::vector<ValueId> chunks;
    for (std::int64_t t0 = 0; t0 < steps; t0 += per_chunk) {
      const std::int64_t t1 = std::min(steps, t0 + per_chunk);
      const ValueId xs = rw.add(Slice{{proj.axis}, {t0}, {t1}, {}}, {proj.x});
      ValueId chunk = rw.add(MatMul{}, {xs, proj.w});
      if (proj.bias) chunk = rw.add(Add{}, proj.bias_first ? std::vector{*proj.bias, chunk} : std::vector{chunk, *proj.bias});
      chunks.push_back(chunk);
    }
    // New slices (and new reshapes of them) replace the old ones, so that the
    // topological order places each chunk before its first step, not where
    // the exporter put the old views.
    const std::vector<std::size_t> readers = rw.readers(proj.p);
    for (std::size_t reader : readers) {
      const Node slice = rw.graph().nodes[reader];
      const std::int64_t t = unit_step(rw, slice)->index;
      const std::int64_t local = t % per_chunk;
      const ValueId piece = rw.add(Slice{{proj.axis}, {local}, {local + 1}, {}}, {chunks[t / per_chunk]});
      // The old views stay behind, dead, reading the old slice: a dead node
      // reading the new one would pull its chunk up to where the view was.
      const std::vector<std::size_t> views = rw.readers(slice.outputs[0]);
      for (std::size_t view : views) {
        const Node user = rw.graph().nodes[view];  // a copy: adding nodes moves them
        if (holds<Reshape>(user.op) && !rw.is_output(user.outputs[0])) {
          rw.replace_uses(user.outputs[0], rw.add(user.op, {piece}));
          continue;
        }
        for (std::size_t slot = 0; slot < user.inputs.size(); ++slot)
          if (user.inputs[slot] == slice.outputs[0]) rw.replace_input(view, slot, piece);
      }
    }
  }
};

}  // namespace rml::passes
