// The clean-up passes, run to a fixpoint. Lowering leaves debris (identity
// reshapes, stacked transposes, explicit broadcasts, layer norms, softmaxes and
// GELUs written out op by op, an unrolled loop's per-step input products);
// these passes remove it before a graph is written. One pass orders work for
// the cache instead: a loop's large input product is computed in chunks.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "rml/passes/chunk_step_projections.hpp"
#include "rml/passes/drop_implicit_broadcasts.hpp"
#include "rml/passes/eliminate_common_subexpressions.hpp"
#include "rml/passes/eliminate_dead_code.hpp"
#include "rml/passes/fold_batch_norm.hpp"
#include "rml/passes/fuse_attention.hpp"
#include "rml/passes/fuse_gelu.hpp"
#include "rml/passes/fuse_layer_norm.hpp"
#include "rml/passes/fuse_reductions.hpp"
#include "rml/passes/hoist_step_projections.hpp"
#include "rml/passes/recognise_elementwise_functions.hpp"
#include "rml/passes/share_identical_constants.hpp"
#include "rml/passes/shrink_broadcast_constants.hpp"
#include "rml/passes/simplify_shape_ops.hpp"
#include "rml/passes/sink_reshapes.hpp"
#include "rml/passes/sink_transposes.hpp"
#include "rml/passes/unbatch_matmul_weights.hpp"

namespace rml::passes {

template <class... Passes>
struct PassList {
  static constexpr std::array<std::string_view, sizeof...(Passes)> names{Passes::name...};

  /// Runs the pass called `name` once; returns the number of edits it made.
  static std::size_t run(std::string_view name, Rewriter& rw) {
    const std::size_t before = rw.changes;
    const bool known = ((name == Passes::name ? (Passes::run(rw), true) : false) || ...);
    if (!known) fail(ErrorCode::invalid_argument, "unknown pass '", name, "' (known: ", join(), ")");
    return rw.changes - before;
  }

  static std::string join() {
    std::string text;
    for (std::string_view n : names) text += (text.empty() ? "" : ", ") + std::string(n);
    return text;
  }
};

/// In the order a round runs them.
using All = PassList<SimplifyShapeOps, SinkTransposes, SinkReshapes, DropImplicitBroadcasts, ShrinkBroadcastConstants,
                     FoldBatchNorm, UnbatchMatmulWeights, HoistStepProjections, ChunkStepProjections,
                     FuseReductions, FuseAttention,
                     EliminateCommonSubexpressions, FuseLayerNorm, FuseGelu, RecogniseElementwiseFunctions,
                     ShareIdenticalConstants, EliminateDeadCode>;

/// What run_passes did: edits per pass, and rounds until nothing changed.
struct PassReport {
  std::map<std::string, std::size_t> edits;
  int rounds = 0;
};

/// Runs `names` (every pass when empty) round after round until a round
/// changes nothing, dropping dead code and restoring a topological order after
/// every pass. The result is validated.
inline PassReport run_passes(Graph& graph, std::vector<std::string> names = {}) {
  if (names.empty()) names.assign(All::names.begin(), All::names.end());
  PassReport report;
  constexpr int kMaxRounds = 100;
  graph = without_dead_code(graph);
  for (bool changed = true; changed; ++report.rounds) {
    if (report.rounds == kMaxRounds) fail(ErrorCode::internal, "the clean-up passes did not settle after ", kMaxRounds, " rounds");
    changed = false;
    for (const std::string& name : names) {
      Rewriter rw(graph);
      const std::size_t edits = All::run(name, rw);
      if (edits == 0) continue;
      report.edits[name] += edits;
      changed = true;
      sort_topologically(graph);
      graph = without_dead_code(graph);
    }
  }
  validate(graph);
  return report;
}

}  // namespace rml::passes
