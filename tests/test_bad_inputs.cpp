// The bad-input catalogue (tests/bad_inputs/expected.tsv): every fixture is
// refused at its stage with its rml::ErrorCode through the C++ API and the
// CLI (tests/python/test_bad_inputs.py covers the binding) — never a signal,
// never a hang, never an allocation past a few GiB; the `ok` fixtures, graphs
// that once hung or allocated without bound, load and run at once.
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "cli_util.hpp"
#include "rml/rml.hpp"

using namespace rml;
using rml::test::quoted;
using rml::test::rml_cli;
using rml::test::Run;

namespace {

const std::filesystem::path folder = std::filesystem::path(RML_SOURCE_DIR) / "tests" / "bad_inputs";

struct Fixture {
  std::string name, stage, code, description;
  std::filesystem::path graph() const { return folder / (name + ".json"); }
  std::filesystem::path inputs() const { return folder / (name + ".inputs.safetensors"); }
  bool has_inputs() const { return std::filesystem::exists(inputs()); }
};

std::vector<Fixture> catalogue() {
  std::ifstream in(folder / "expected.tsv");
  REQUIRE(in);
  std::vector<Fixture> fixtures;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Fixture f;
    std::getline(fields, f.name, '\t');
    std::getline(fields, f.stage, '\t');
    std::getline(fields, f.code, '\t');
    std::getline(fields, f.description);
    fixtures.push_back(f);
  }
  return fixtures;
}

/// The fixture's own inputs, or zeros of each input's declared type.
TensorMap inputs_for(const Fixture& f, const Graph& graph) {
  TensorMap inputs;
  if (f.has_inputs()) {
    for (auto& [name, tensor] : read_safetensors(f.inputs()).tensors) inputs.emplace(name, std::move(tensor));
    return inputs;
  }
  for (const NamedValue& in : graph.inputs) inputs.emplace(in.name, Tensor(graph.type(in.value)));
  return inputs;
}

/// Loads, then runs the executor and the reference kernels; returns the
/// stage that failed and its code, or {"ok", "-"}.
std::pair<std::string, std::string> outcome(const Fixture& f) {
  std::string stage = "load";
  try {
    const Model model = load(f.graph());
    stage = "run";
    const TensorMap inputs = inputs_for(f, model.graph());
    Executor(model).run(inputs);
    evaluate(model.graph(), inputs);
    return {"ok", "-"};
  } catch (const Error& e) {
    MESSAGE(f.name, ": ", e.what());
    return {stage, std::string(error_code_name(e.code()))};
  }
}

}  // namespace

TEST_CASE("the catalogue lists every fixture, and every code it names exists") {
  std::set<std::string> listed;
  for (const Fixture& f : catalogue()) {
    CAPTURE(f.name);
    CHECK(listed.insert(f.name).second);
    CHECK(std::set<std::string>{"load", "run", "ok"}.count(f.stage));
    CHECK((f.stage == "ok") == (f.code == "-"));
    if (f.code != "-") CHECK(error_code_named(f.code).has_value());
    CHECK_FALSE(f.description.empty());
  }
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string file = entry.path().filename().string();
    if (entry.path().extension() != ".json") continue;
    CAPTURE(file);
    CHECK(listed.count(entry.path().stem().string()));  // a fixture without an expectation
  }
}

TEST_CASE("the catalogue holds a fixture for every class of malformed input") {
  std::set<std::string> codes;
  for (const Fixture& f : catalogue()) codes.insert(f.code);
  // Codes no file can provoke: API misuse, cancelled runs, converters, exporters, rml's own bugs.
  const std::set<std::string> not_from_files = {"invalid_argument", "run_cancelled", "run_deadline",   "unsupported",
                                                "export_unsupported", "internal",   "malformed_model_bytes"};
  for (const ErrorCodeInfo& info : error_codes) {
    const std::string name(info.name);
    CAPTURE(name);
    CHECK(codes.count(name) + not_from_files.count(name) == 1);
  }
}

TEST_CASE("every catalogue fixture yields its code through the C++ API") {
  for (const Fixture& f : catalogue()) {
    CAPTURE(f.name);
    const auto [stage, code] = outcome(f);
    CHECK(stage == f.stage);
    CHECK(code == f.code);
  }
}

TEST_CASE("every catalogue fixture yields its code through the CLI: exit 1 and [code], bounded time and memory") {
  // A time limit and, where no sanitizer reserves address space, an 8 GiB one.
#ifdef RML_SANITIZED
  const std::string limits = "timeout 60";
#else
  const std::string limits = "timeout 60 prlimit --as=8589934592";
#endif
  for (const Fixture& f : catalogue()) {
    const std::string inputs = f.has_inputs() ? " --inputs " + quoted(f.inputs()) : "";
    for (const std::string command : {"validate", "run", "run --reference"}) {
      CAPTURE(f.name);
      CAPTURE(command);
      const bool runs = command != "validate";
      const Run r = rml_cli(command + " " + quoted(f.graph()) + (runs ? inputs : ""), limits);
      CHECK_FALSE(r.signalled);
      const bool refused = f.stage == "load" || (f.stage == "run" && runs);
      CHECK_MESSAGE(r.exit_code == (refused ? 1 : 0), r.err);  // 124 would be the time limit
      if (refused) CHECK_MESSAGE(r.err.rfind("rml: error [" + f.code + "]: ", 0) == 0, r.err);
    }
  }
}
