// rml::Model: a loaded, validated graph, shared cheaply between executors.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "rml/core/split.hpp"
#include "rml/core/tensor.hpp"
#include "rml/ir/load_options.hpp"

namespace rml {

struct Graph;
struct ValidGraph;

/// One input or output of a model: its name and type.
struct TensorSpec {
  std::string name;
  TensorType type;
};

class Model {
 public:
  /// Validates `graph`. `limits` travel with the model: an Executor checks
  /// its working memory against max_memory_bytes.
  explicit Model(Graph graph, const LoadOptions& limits = {});
  /// Takes a graph already validated (rml::load validates once, while reading).
  explicit Model(ValidGraph valid, const LoadOptions& limits = {});

  /// The graph (complete once rml/ir/graph.hpp is included).
  const Graph& graph() const { return *graph_; }
  const LoadOptions& limits() const { return limits_; }
  /// A valid execution order of the nodes.
  const std::vector<std::size_t>& order() const { return *order_; }
  /// The graph's inputs and outputs, in order.
  const std::vector<TensorSpec>& inputs() const { return signature_->inputs; }
  const std::vector<TensorSpec>& outputs() const { return signature_->outputs; }

 private:
  struct Signature {
    std::vector<TensorSpec> inputs, outputs;
  };
  void record_signature();

  std::shared_ptr<const Graph> graph_;
  std::shared_ptr<const std::vector<std::size_t>> order_;
  std::shared_ptr<const Signature> signature_;
  LoadOptions limits_;
};

/// Reads and validates `path` (and its weights file) within `limits`.
Model load(const std::filesystem::path& path, const LoadOptions& limits = {});

}  // namespace rml

#ifndef RML_DECLARATIONS_ONLY
#include "rml/ir/graph_read.hpp"

namespace rml {

RML_SPLIT_INLINE Model::Model(Graph graph, const LoadOptions& limits)
    : graph_(std::make_shared<const Graph>(std::move(graph))), limits_(limits) {
  order_ = std::make_shared<const std::vector<std::size_t>>(validate(*graph_));
  record_signature();
}

RML_SPLIT_INLINE Model::Model(ValidGraph valid, const LoadOptions& limits)
    : graph_(std::make_shared<const Graph>(std::move(valid.graph))),
      order_(std::make_shared<const std::vector<std::size_t>>(std::move(valid.order))),
      limits_(limits) {
  record_signature();
}

RML_SPLIT_INLINE void Model::record_signature() {
  Signature signature;
  for (const NamedValue& in : graph_->inputs) signature.inputs.push_back({in.name, graph_->type(in.value)});
  for (const NamedValue& out : graph_->outputs) signature.outputs.push_back({out.name, graph_->type(out.value)});
  signature_ = std::make_shared<const Signature>(std::move(signature));
}

RML_SPLIT_INLINE Model load(const std::filesystem::path& path, const LoadOptions& limits) {
  return Model(read_valid_graph(path, limits), limits);
}

}  // namespace rml
#endif
