// Cross-framework agreement over all six routes, with no Python. Matching each
// framework separately does not prove the three zoo definitions are one model:
// for every zoo model this requires the golden inputs of the torch, jax, tf,
// stablehlo_torch, stablehlo_jax and stablehlo_tf fixtures to be identical,
// then compares all results pairwise within 1e-5 absolute: each route's
// framework output and rml's run of its graph, fused and unfused (18 results).
// It fails if a model lacks a route or fewer than 19 are present.
#include "fixture_util.hpp"

using namespace rml;
using namespace rml::test;

namespace {


struct Result {
  std::string label;
  Tensor value;
};

/// The framework's output and rml's (fused and unfused) for one fixture; the
/// golden inputs go to `inputs`.
std::vector<Result> route_results(const std::string& route, const std::string& model, TensorMap& inputs) {
  const fs::path graph_path = fixture_path(route, model);
  const Model loaded = load(graph_path);
  const TensorMap golden = read_golden(graph_path);
  inputs = golden_inputs(loaded.graph(), golden, graph_path);
  if (loaded.graph().outputs.size() != 1 || loaded.graph().outputs[0].name != "output")
    throw std::runtime_error(graph_path.filename().string() + ": a zoo fixture has one output, named 'output'");
  std::vector<Result> results{{route + " (framework)", golden.at("output")}};
  for (const bool fuse : {true, false}) {
    const Executor executor(loaded, ExecutorOptions{.threads = 1, .fuse = fuse});
    results.push_back({detail::concat("rml on ", route, fuse ? ", fused" : ", unfused"), executor.run(inputs).at("output")});
  }
  return results;
}

/// "" when both maps hold the same names with bit-identical tensors.
std::string input_difference(const TensorMap& a, const TensorMap& b) {
  if (a.size() != b.size()) return detail::concat(a.size(), " inputs against ", b.size());
  for (const auto& [name, tensor] : a) {
    const auto other = b.find(name);
    if (other == b.end()) return "input '" + name + "' is missing";
    if (!tensor.bitwise_equal(other->second)) return "input '" + name + "' differs";
  }
  return "";
}

}  // namespace

TEST_CASE("every zoo model agrees across all six routes and rml, pairwise within 1e-5") {
  const auto models = zoo_models();
  REQUIRE(models.size() == 19);
  int compared = 0;
  for (const std::string& model : models) {
    INFO("model " << model);
    std::vector<Result> results;
    TensorMap first_inputs;
    bool complete = true;
    for (const std::string& route : kRoutes) {
      if (!fs::exists(fixture_path(route, model))) {
        FAIL_CHECK("missing fixture " << fixture_path(route, model).filename());
        complete = false;
        continue;
      }
      TensorMap inputs;
      std::vector<Result> these;
      try {
        these = route_results(route, model, inputs);
      } catch (const Error& e) {
        FAIL_CHECK(e.what());
        complete = false;
        continue;
      }
      if (first_inputs.empty()) first_inputs = inputs;
      const std::string differs = input_difference(inputs, first_inputs);
      CHECK_MESSAGE(differs.empty(), route << "'s golden inputs are not " << kRoutes[0] << "'s: " << differs);
      results.insert(results.end(), these.begin(), these.end());
    }
    if (!complete) continue;
    for (std::size_t i = 0; i < results.size(); ++i)
      for (std::size_t j = i + 1; j < results.size(); ++j) {
        const std::string wrong = mismatch(results[j].value, results[i].value, 1e-5, 0.0);
        CHECK_MESSAGE(wrong.empty(), results[j].label << " against " << results[i].label << ": " << wrong);
      }
    ++compared;
  }
  CHECK(compared == 19);
}
