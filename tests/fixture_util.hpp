// Helpers of the fixture suites: where the fixtures live, the zoo's model list,
// and a fixture's golden data (the framework's inputs and outputs).
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "executor_test_util.hpp"
#include "rml/exec/model.hpp"
#include "rml/ir/safetensors.hpp"

namespace rml::test {

namespace fs = std::filesystem;

inline const fs::path kRepo = RML_SOURCE_DIR;
inline const fs::path kTestdata = kRepo / "testdata";

/// The spec's six routes: three direct exporters and StableHLO from each framework.
inline const std::vector<std::string> kRoutes{"torch", "jax", "tf", "stablehlo_torch", "stablehlo_jax", "stablehlo_tf"};

/// The 19 zoo models, in order (zoo/models.txt is the one list, Python reads it too).
inline std::vector<std::string> zoo_models() {
  std::ifstream in(kRepo / "zoo" / "models.txt");
  REQUIRE_MESSAGE(in, "cannot read zoo/models.txt");
  std::vector<std::string> models;
  for (std::string name; in >> name;) models.push_back(name);
  return models;
}

inline fs::path fixture_path(const std::string& route, const std::string& model) {
  return kTestdata / (route + "_" + model + ".json");
}

inline fs::path golden_path(const fs::path& graph) {
  return graph.parent_path() / (graph.stem().string() + ".golden.safetensors");
}

inline TensorMap read_golden(const fs::path& graph) {
  TensorMap golden;
  for (auto& [name, tensor] : read_safetensors(golden_path(graph)).tensors) golden.emplace(name, std::move(tensor));
  return golden;
}

/// The golden values of the graph's inputs, by input name.
inline TensorMap golden_inputs(const Graph& graph, const TensorMap& golden, const fs::path& where) {
  TensorMap inputs;
  for (const NamedValue& in : graph.inputs) {
    const auto found = golden.find(in.name);
    if (found == golden.end()) throw std::runtime_error(where.filename().string() + ": golden data lacks input '" + in.name + "'");
    inputs.emplace(in.name, found->second);
  }
  return inputs;
}

}  // namespace rml::test
