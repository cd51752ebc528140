// eliminate_dead_code: nodes and constants nothing reads go. run_passes drops
// dead code after every pass; listing this pass by name runs just that.
#pragma once

#include "rml/passes/common.hpp"

namespace rml::passes {

struct EliminateDeadCode {
  static constexpr std::string_view name = "eliminate_dead_code";
  static void run(Rewriter&) {}  // run_passes drops dead code after every pass
};

}  // namespace rml::passes
