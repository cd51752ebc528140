// rml::Model: a loaded, validated graph, shared cheaply between executors.
#pragma once

#include <filesystem>
#include <memory>

#include "rml/ir/graph_io.hpp"
#include "rml/ir/load_options.hpp"

namespace rml {

class Model {
 public:
  /// Validates `graph`. `limits` travel with the model: an Executor checks
  /// its working memory against max_memory_bytes.
  explicit Model(Graph graph, const LoadOptions& limits = {})
      : graph_(std::make_shared<const Graph>(std::move(graph))), limits_(limits) {
    order_ = std::make_shared<const std::vector<std::size_t>>(validate(*graph_));
  }
  /// Takes a graph already validated (rml::load validates once, while reading).
  explicit Model(ValidGraph valid, const LoadOptions& limits = {})
      : graph_(std::make_shared<const Graph>(std::move(valid.graph))),
        order_(std::make_shared<const std::vector<std::size_t>>(std::move(valid.order))),
        limits_(limits) {}
  const Graph& graph() const { return *graph_; }
  const LoadOptions& limits() const { return limits_; }
  /// A valid execution order of the nodes.
  const std::vector<std::size_t>& order() const { return *order_; }

 private:
  std::shared_ptr<const Graph> graph_;
  std::shared_ptr<const std::vector<std::size_t>> order_;
  LoadOptions limits_;
};

/// Reads and validates `path` (and its weights file) within `limits`.
inline Model load(const std::filesystem::path& path, const LoadOptions& limits = {}) {
  return Model(read_valid_graph(path, limits), limits);
}

}  // namespace rml
