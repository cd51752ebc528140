// rml::Model: a loaded, validated graph, shared cheaply between executors.
#pragma once

#include <filesystem>
#include <memory>

#include "rml/ir/graph_io.hpp"

namespace rml {

class Model {
 public:
  /// Validates `graph`.
  explicit Model(Graph graph) : graph_(std::make_shared<const Graph>(std::move(graph))) {
    order_ = std::make_shared<const std::vector<std::size_t>>(validate(*graph_));
  }
  /// Takes a graph already validated (rml::load validates once, while reading).
  explicit Model(ValidGraph valid)
      : graph_(std::make_shared<const Graph>(std::move(valid.graph))),
        order_(std::make_shared<const std::vector<std::size_t>>(std::move(valid.order))) {}
  const Graph& graph() const { return *graph_; }
  /// A valid execution order of the nodes.
  const std::vector<std::size_t>& order() const { return *order_; }

 private:
  std::shared_ptr<const Graph> graph_;
  std::shared_ptr<const std::vector<std::size_t>> order_;
};

/// Reads and validates `path` (and its weights file).
inline Model load(const std::filesystem::path& path) { return Model(read_valid_graph(path)); }

}  // namespace rml
