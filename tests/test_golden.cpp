// The golden fixtures, with no Python: every testdata/<route>_<model>.json runs
// through rml::Executor on the framework's own inputs (from
// <route>_<model>.golden.safetensors), fused and unfused, on 1 and 2 threads,
// and every output element must be within 1e-5 absolute of what the framework
// computed. Cases are discovered from the folder, so a new fixture is tested
// without editing this file. A second test requires a fixture for every zoo
// model (zoo/models.txt) by each of the six routes.
#include "fixture_util.hpp"

using namespace rml;
using namespace rml::test;

namespace {


/// Every fixture graph, sorted by name.
std::vector<fs::path> fixture_graphs() {
  std::vector<fs::path> graphs;
  for (const auto& entry : fs::directory_iterator(kTestdata))
    if (entry.path().extension() == ".json") graphs.push_back(entry.path());
  std::sort(graphs.begin(), graphs.end());
  return graphs;
}

/// The route of a fixture stem "<route>_<model>" (the longest route that prefixes it), or "".
std::string route_of(const std::string& stem) {
  std::string best;
  for (const std::string& route : kRoutes)
    if (stem.rfind(route + "_", 0) == 0 && route.size() > best.size()) best = route;
  return best;
}

/// Every failure for one fixture, one per line ("" when it matches).
std::string check_fixture(const fs::path& graph_path) {
  const Model model = load(graph_path);
  const Graph& graph = model.graph();
  const TensorMap golden = read_golden(graph_path);
  const TensorMap inputs = golden_inputs(graph, golden, graph_path);
  std::string failures;
  for (const NamedValue& out : graph.outputs)
    if (!golden.count(out.name)) return "golden file lacks output '" + out.name + "'\n";

  for (const RunConfig& config : all_configs()) {
    const Executor executor(model, ExecutorOptions{.threads = config.threads, .fuse = config.fuse});
    const TensorMap results = run_executor(executor, inputs, config.zero_copy);
    for (const NamedValue& out : graph.outputs) {
      const std::string wrong = mismatch(results.at(out.name), golden.at(out.name), 1e-5, 0.0);
      if (!wrong.empty()) failures += detail::concat(config_string(config), ", output '", out.name, "': ", wrong, "\n");
    }
  }
  return failures;
}

}  // namespace

TEST_CASE("every fixture runs within 1e-5 of its framework's output, fused and unfused") {
  const auto graphs = fixture_graphs();
  REQUIRE_MESSAGE(!graphs.empty(), "no fixtures in " << kTestdata);
  int checked = 0;
  for (const fs::path& graph : graphs) {
    INFO("fixture " << graph.filename().string());
    REQUIRE_MESSAGE(fs::exists(golden_path(graph)), "missing " << golden_path(graph).filename());
    std::string failures;
    try {
      failures = check_fixture(graph);
    } catch (const Error& e) {
      failures = std::string("rml::Error: ") + e.what();
    }
    CHECK_MESSAGE(failures.empty(), failures);
    ++checked;
  }
  MESSAGE(checked << " fixtures checked");
}

TEST_CASE("every fixture is named <route>_<zoo model>") {
  const auto models = zoo_models();
  for (const fs::path& graph : fixture_graphs()) {
    const std::string stem = graph.stem().string();
    const std::string route = route_of(stem);
    INFO("fixture " << graph.filename().string());
    REQUIRE_MESSAGE(!route.empty(), "no known route prefixes the name");
    const std::string model = stem.substr(route.size() + 1);
    CHECK_MESSAGE(std::find(models.begin(), models.end(), model) != models.end(), "'" << model << "' is not a zoo model");
  }
}

TEST_CASE("every zoo model has a fixture for every route") {
  const auto models = zoo_models();
  REQUIRE(models.size() == 19);
  for (const std::string& route : kRoutes)
    for (const std::string& model : models) {
      const fs::path graph = fixture_path(route, model);
      CHECK_MESSAGE(fs::exists(graph), "missing fixture " << graph.filename());
      CHECK_MESSAGE(fs::exists(golden_path(graph)), "missing golden data " << golden_path(graph).filename());
    }
}
