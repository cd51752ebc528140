// What the exact examples (tiny_net, tiny_models) share: the integer formula
// their inputs come from, and a bit-for-bit check of every export through the
// executor, fused and unfused, on 1, 2 and 4 threads.
//
// The formula is tools/exact_examples.py's `pattern`, written again here so the
// C++ side computes its inputs itself rather than reading them from the files
// it checks.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "rml/run.hpp"

namespace exact {

/// Non-zero multiples of `scale`: element k is sign * ((5k + salt) mod 8 + 1) * scale,
/// negative where (k + salt) mod 3 == 0.
inline std::vector<float> pattern(std::int64_t count, int salt, float scale = 0.125f) {
  std::vector<float> values(static_cast<std::size_t>(count));
  for (std::int64_t k = 0; k < count; ++k) {
    const float magnitude = static_cast<float>((5 * k + salt) % 8 + 1);
    values[static_cast<std::size_t>(k)] = ((k + salt) % 3 == 0 ? -magnitude : magnitude) * scale;
  }
  return values;
}

/// Whether two float arrays hold the same bits (so -0.0 differs from 0.0).
inline bool same_bits(std::span<const float> got, std::span<const float> want) {
  return got.size() == want.size() && std::memcmp(got.data(), want.data(), want.size_bytes()) == 0;
}

/// Runs `graph` (one input "x", one output "output") fused and unfused on 1, 2 and
/// 4 threads, prints one line and returns the number of runs that did not give
/// `want` bit for bit (or whose node count is not `nodes`).
inline int check_export(const std::filesystem::path& graph, const rml::Tensor& x, std::span<const float> want,
                        int nodes) {
  const rml::Model model = rml::load(graph);
  const int node_count = static_cast<int>(model.graph().nodes.size());
  int failures = node_count == nodes ? 0 : 1;
  std::string runs;
  for (const bool fuse : {true, false}) {
    for (const int threads : {1, 2, 4}) {
      const rml::Executor executor(model, {.threads = threads, .fuse = fuse});
      const rml::TensorMap out = executor.run({{"x", x}});
      const bool exact = same_bits(out.at("output").values<float>(), want);
      failures += exact ? 0 : 1;
      runs += std::string(" ") + (fuse ? "fused" : "unfused") + "/" + std::to_string(threads) + (exact ? " ok" : " DIFFERS");
    }
  }
  std::cout << "  " << graph.filename().string() << ": " << node_count << " nodes"
            << (node_count == nodes ? "" : " (expected " + std::to_string(nodes) + ")") << ";" << runs << "\n";
  return failures;
}

}  // namespace exact
