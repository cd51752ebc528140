// The `rml` program end to end: exit codes (0 ok, 1 reported error, 2 bad
// usage), never a signal, and a catalogue of malformed files.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <sstream>

#include "cli_util.hpp"
#include "test_util.hpp"

using namespace rml;
using rml::test::slurp;
using rml::test::spit;
using rml::test::TempDir;
using rml::test::quoted;
using rml::test::rml_cli;
using rml::test::Run;

namespace {

/// A safetensors file from raw header text and data bytes.
std::string raw_safetensors(const std::string& header, std::size_t data_bytes, std::uint64_t declared = 0) {
  std::uint64_t n = declared ? declared : header.size();
  std::string bytes(reinterpret_cast<const char*>(&n), 8);
  return bytes + header + std::string(data_bytes, '\0');
}

/// x [2] + b [2] with b stored in w.safetensors.
const std::string graph_with_weight =
    R"({"format": "rml-graph", "version": 1, "weights": "w.safetensors",
"inputs": [{"name": "x", "value": 0}], "outputs": [{"name": "y", "value": 2}],
"values": [{"id": 0, "dtype": "f32", "shape": [2]}, {"id": 1, "dtype": "f32", "shape": [2], "name": "b", "weight": "b"},
{"id": 2, "dtype": "f32", "shape": [2]}],
"nodes": [{"op": "add", "inputs": [0, 1], "outputs": [2]}]})";

/// Checks that validate and run both exit 1 (not a signal) naming `phrase`.
void check_reported(const TempDir& dir, const std::string& phrase) {
  for (const std::string command : {"validate", "run"}) {
    CAPTURE(command);
    const Run r = rml_cli(command + " " + quoted(dir / "g.json"));
    CHECK_FALSE(r.signalled);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("rml: error [") == 0);
    CHECK_MESSAGE(r.err.find(phrase) != std::string::npos, r.err);
  }
}

void check_bad_weights(const std::string& weights_bytes, const std::string& phrase) {
  TempDir dir;
  spit(dir / "g.json", graph_with_weight);
  spit(dir / "w.safetensors", weights_bytes);
  check_reported(dir, phrase);
}

void check_bad_graph(const std::string& json, const std::string& phrase) {
  TempDir dir;
  spit(dir / "g.json", json);
  check_reported(dir, phrase);
}

std::string simple_graph(const std::string& dtype, const std::string& nodes, const std::string& outputs = R"([{"name": "y", "value": 1}])") {
  return R"({"format": "rml-graph", "version": 1, "inputs": [{"name": "x", "value": 0}], "outputs": )" + outputs +
         R"(, "values": [{"id": 0, "dtype": ")" + dtype + R"(", "shape": [2]}, {"id": 1, "dtype": ")" + dtype +
         R"(", "shape": [2]}, {"id": 2, "dtype": ")" + dtype + R"(", "shape": [2]}], "nodes": )" + nodes + "}";
}

}  // namespace

TEST_CASE("rml run, info, validate and ops work on the shipped example model") {
  const std::string model = quoted(std::filesystem::path(RML_SOURCE_DIR) / "examples" / "tiny_classifier.json");
  const Run info = rml_cli("info " + model);
  CHECK(info.exit_code == 0);
  CHECK(info.out.find("layer_norm x1") != std::string::npos);
  CHECK(info.out.find("parameters: ") != std::string::npos);
  CHECK(info.out.find("fused groups, arena ") != std::string::npos);  // the executor's plan
  const Run validate = rml_cli("validate " + model);
  CHECK(validate.exit_code == 0);
  CHECK(validate.out.find("ok: 7 nodes") == 0);
  const Run first = rml_cli("run " + model), second = rml_cli("run " + model);
  CHECK(first.exit_code == 0);
  CHECK(first.out.find("probabilities: f32[2, 3]") != std::string::npos);
  CHECK(first.out == second.out);  // made-up inputs are deterministic
  CHECK(rml_cli("run " + model + " --seed 3").out != first.out);
  const Run ops = rml_cli("ops");
  CHECK(ops.exit_code == 0);
  CHECK(std::count(ops.out.begin(), ops.out.end(), '\n') == static_cast<long>(Registry::size));
}

TEST_CASE("every instruction set RML_ISA picks gives the same output bytes; a wrong name is an error") {
  // Models with every kind of hot loop: GEMM and GEMV, direct and strided
  // convolution, pools, exp/tanh/sigmoid/erf blocks (softmax, GELU, LSTM gates).
  const std::filesystem::path data = std::filesystem::path(RML_SOURCE_DIR) / "testdata";
  TempDir dir;
  for (const std::string model : {"torch_cnn", "torch_unet", "torch_transformer_block", "torch_lstm", "torch_vit"}) {
    CAPTURE(model);
    std::string first;
    for (const std::string isa : {"portable", "avx2", "avx512"}) {  // lowered to what the CPU runs
      const std::filesystem::path out = dir / (model + "." + isa + ".safetensors");
      const Run r = rml_cli("run " + quoted(data / (model + ".json")) + " --output " + quoted(out), "RML_ISA=" + isa);
      REQUIRE(r.exit_code == 0);
      const std::string bytes = slurp(out);
      if (first.empty()) first = bytes;
      CHECK(bytes == first);
    }
  }
  const Run wrong = rml_cli("info " + quoted(data / "torch_cnn.json"), "RML_ISA=sse9");
  CHECK(wrong.exit_code == 1);
  CHECK(wrong.err.find("RML_ISA='sse9' is not one of portable, avx2, avx512") != std::string::npos);
}

TEST_CASE("rml run --profile lists every kernel with its ops, time and share") {
  const std::string model = quoted(std::filesystem::path(RML_SOURCE_DIR) / "examples" / "tiny_classifier.json");
  const Run info = rml_cli("info " + model);
  const auto kernels_at = info.out.find("plan: ");
  REQUIRE(kernels_at != std::string::npos);
  const int kernels = std::stoi(info.out.substr(kernels_at + 6));
  const Run profile = rml_cli("run " + model + " --profile --repeat 5");
  REQUIRE(profile.exit_code == 0);
  CHECK(profile.out.find(detail::concat("profile: ", kernels, " kernels, median of 5 runs")) == 0);
  double share = 0;
  int rows = 0;
  std::istringstream lines(profile.out);
  for (std::string line; std::getline(lines, line);)
    if (const auto percent = line.find('%'); percent != std::string::npos && line.find("share") == std::string::npos) {
      share += std::stod(line.substr(line.rfind(' ', percent - 1) + 1));
      ++rows;
    }
  CHECK(rows == kernels);
  CHECK(share == doctest::Approx(100).epsilon(0.01));
  CHECK(profile.out.find("layer_norm") != std::string::npos);
  CHECK(rml_cli("run " + model + " --profile --reference").exit_code == 2);
}

TEST_CASE("rml run reads inputs from safetensors and writes outputs that match the reference") {
  TempDir dir;
  test::small_model().write(dir / "m.json");
  const Tensor x = Tensor::from<float>({2, 3}, {0.25f, -1, 2, 3, 0, -0.5f});
  write_safetensors(dir / "in.safetensors", {{"x", x}});
  const Tensor expected = evaluate(read_graph(dir / "m.json"), {{"x", x}}).at("y");
  for (const std::string mode : {"--reference", "--threads 2", "--no-fuse"}) {
    CAPTURE(mode);
    const Run r = rml_cli("run " + quoted(dir / "m.json") + " --inputs " + quoted(dir / "in.safetensors") +
                          " --output " + quoted(dir / "out.safetensors") + " " + mode);
    REQUIRE(r.exit_code == 0);
    const auto written = read_safetensors(dir / "out.safetensors").tensors;
    REQUIRE(written.size() == 1);
    CHECK(written[0].first == "y");
    if (mode == "--reference") {
      CHECK(written[0].second.bitwise_equal(expected));  // the same kernels
    } else {
      REQUIRE(written[0].second.type() == expected.type());
      const auto got = written[0].second.values<float>(), want = expected.values<float>();
      for (std::size_t i = 0; i < got.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= 1e-5f + 1e-5f * std::abs(want[i]));
    }
  }
  const Run timed = rml_cli("run " + quoted(dir / "m.json") + " --repeat 5");
  CHECK(timed.exit_code == 0);
  CHECK(timed.out.find("latency: median ") != std::string::npos);
  CHECK(rml_cli("run " + quoted(dir / "m.json") + " --threads 0").exit_code == 2);
  // Inputs of the wrong shape are a reported error naming the input.
  write_safetensors(dir / "bad.safetensors", {{"x", Tensor(DType::f32, {3})}});
  const Run bad = rml_cli("run " + quoted(dir / "m.json") + " --inputs " + quoted(dir / "bad.safetensors"));
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("input 'x' must be f32[2, 3], got f32[3]") != std::string::npos);
}

TEST_CASE("bad usage exits 2 with the usage text") {
  for (const char* args : {"", "frobnicate", "run", "run a.json b.json", "run a.json --bogus", "run a.json --seed",
                           "run a.json --seed minus", "ops extra"}) {
    CAPTURE(args);
    const Run r = rml_cli(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("usage: rml COMMAND") != std::string::npos);
  }
  for (const char* args : {"help", "--help", "run --help", "info model.json -h"}) {
    CAPTURE(args);
    const Run r = rml_cli(args);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("usage: rml COMMAND") != std::string::npos);
  }
}

TEST_CASE("a missing model file is a reported error, not a crash") {
  const Run r = rml_cli("run /nonexistent/model.json");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("/nonexistent/model.json") != std::string::npos);
}

TEST_CASE("malformed weights files: each a named error and exit 1 from validate and run") {
  const std::string good_header = R"({"b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
  SUBCASE("baseline is valid") {
    TempDir dir;
    spit(dir / "g.json", graph_with_weight);
    spit(dir / "w.safetensors", raw_safetensors(good_header, 8));
    CHECK(rml_cli("validate " + quoted(dir / "g.json")).exit_code == 0);
  }
  SUBCASE("truncated file") { check_bad_weights(std::string("\x05\x00\x00", 3), "w.safetensors"); }
  SUBCASE("header length past the end of file") {
    check_bad_weights(raw_safetensors(good_header, 8, 4096), "w.safetensors");
  }
  SUBCASE("offsets out of range") {
    check_bad_weights(raw_safetensors(R"({"b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 800]}})", 8), "'b'");
  }
  SUBCASE("overlapping tensors") {
    check_bad_weights(raw_safetensors(R"({"b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "c": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8),
                      "overlap");
  }
  SUBCASE("bad dtype") {
    check_bad_weights(raw_safetensors(R"({"b": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 8]}})", 8), "dtype");
  }
  SUBCASE("shape overflow") {
    check_bad_weights(raw_safetensors(R"({"b": {"dtype": "F32", "shape": [4294967296, 4294967296, 4], "data_offsets": [0, 8]}})", 8),
                      "overflow");
  }
}

TEST_CASE("malformed graphs: each a named error and exit 1 from validate and run") {
  SUBCASE("unknown op") {
    check_bad_graph(simple_graph("f32", R"([{"op": "teleport", "inputs": [0], "outputs": [1]}])"), "unknown op 'teleport'");
  }
  SUBCASE("wrong arity") {
    check_bad_graph(simple_graph("f32", R"([{"op": "add", "inputs": [0], "outputs": [1]}, {"op": "relu", "inputs": [1], "outputs": [2]}])"),
                    "op 'add' takes 2 inputs, got 1");
  }
  SUBCASE("dangling value id") {
    check_bad_graph(simple_graph("f32", R"([{"op": "relu", "inputs": [7], "outputs": [1]}])"), "refers to value 7, which does not exist");
  }
  SUBCASE("a cycle") {
    check_bad_graph(simple_graph("f32", R"([{"op": "add", "inputs": [0, 2], "outputs": [1]}, {"op": "relu", "inputs": [1], "outputs": [2]}])"),
                    "cycle");
  }
  SUBCASE("duplicate output name") {
    check_bad_graph(simple_graph("f32", R"([{"op": "relu", "inputs": [0], "outputs": [1]}, {"op": "relu", "inputs": [1], "outputs": [2]}])",
                                 R"([{"name": "y", "value": 1}, {"name": "y", "value": 2}])"),
                    "output name 'y' is used twice");
  }
  SUBCASE("i32 into an f32-only op") {
    check_bad_graph(simple_graph("i32", R"([{"op": "sqrt", "inputs": [0], "outputs": [1]}, {"op": "neg", "inputs": [1], "outputs": [2]}])"),
                    "op 'sqrt': input 0 must be f32, got i32");
  }
  SUBCASE("malformed JSON") { check_bad_graph("{\"format\": \"rml-graph\", ", "malformed JSON"); }
}

TEST_CASE("--limits bounds what loading may cost: over a limit is exit 1 naming it, before the allocation") {
  const std::string example = quoted(std::filesystem::path(RML_SOURCE_DIR) / "examples" / "tiny_classifier.json");
  for (const std::string command : {"validate", "run", "info", "opt -o /dev/null/never"}) {
    CAPTURE(command);
    const Run r = rml_cli(command + " " + example + " --limits max_nodes=1");
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(r.err.find("exceeds the limit of 1 (LoadOptions::max_nodes)") != std::string::npos, r.err);
  }
  CHECK(rml_cli("run " + example + " --limits max_nodes=100,max_tensor_elements=100000").exit_code == 0);
  // A 10^10-element broadcast (a 40 GB arena) refused while the plan is made, not on allocation.
  TempDir dir;
  spit(dir / "g.json", R"({"format": "rml-graph", "version": 1, "inputs": [{"name": "x", "value": 0}],
"outputs": [{"name": "y", "value": 1}], "values": [{"id": 0, "dtype": "f32", "shape": [1]},
{"id": 1, "dtype": "f32", "shape": [100000, 100000]}],
"nodes": [{"op": "broadcast_to", "inputs": [0], "outputs": [1], "attrs": {"shape": [100000, 100000]}}]})");
  const Run r = rml_cli("run " + quoted(dir / "g.json") + " --limits max_memory_bytes=1000000000");
  CHECK(r.exit_code == 1);
  CHECK_MESSAGE(r.err.find("(LoadOptions::max_memory_bytes)") != std::string::npos, r.err);
  CHECK(rml_cli("validate " + quoted(dir / "g.json") + " --limits max_tensor_elements=1000000").exit_code == 1);
  CHECK(rml_cli("validate " + example + " --limits max_bogus=1").err.find("unknown limit 'max_bogus'") != std::string::npos);
}

TEST_CASE("rml tensors dumps a safetensors file exactly as JSON") {
  TempDir dir;
  write_safetensors(dir / "t.safetensors", {{"a", Tensor::from<float>({2}, {0.1f, -2})}, {"n", Tensor::from<std::int32_t>({1}, {-7})}});
  const Run r = rml_cli("tensors " + quoted(dir / "t.safetensors") + " --json");
  REQUIRE(r.exit_code == 0);
  const Json j = Json::parse(r.out);
  CHECK(static_cast<float>(j["a"]["values"][0].get<double>()) == 0.1f);
  CHECK(j["n"]["values"][0] == -7);
  CHECK(j["a"]["dtype"] == "f32");
}

TEST_CASE("the shipped example model is what make_example_model builds, byte for byte") {
  TempDir dir;
  const std::string command = std::string(RML_MAKE_EXAMPLE) + " " + quoted(dir / "tiny_classifier.json") + " >/dev/null";
  REQUIRE(std::system(command.c_str()) == 0);
  const std::filesystem::path shipped = std::filesystem::path(RML_SOURCE_DIR) / "examples";
  for (const char* file : {"tiny_classifier.json", "tiny_classifier.safetensors", "tiny_classifier.inputs.safetensors"}) {
    CAPTURE(file);
    CHECK(slurp(dir / file) == slurp(shipped / file));
  }
}
