// The rml-graph file format: exact round trips, where constants go, and a
// catalogue of malformed graphs each rejected with a named error.
#include <doctest/doctest.h>

#include <cmath>
#include <csignal>
#include <limits>
#include <map>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.hpp"

using namespace rml;
using rml::test::slurp;
using rml::test::spit;
using rml::test::TempDir;
using rml::test::Fault;
using rml::test::inject_each_fault;
using rml::test::restore;
using rml::test::Snapshot;
using rml::test::snapshot;

namespace {

bool graphs_equal(const Graph& a, const Graph& b) {
  if (a.values.size() != b.values.size() || a.nodes.size() != b.nodes.size() || a.inputs != b.inputs ||
      a.outputs != b.outputs)
    return false;
  for (std::size_t v = 0; v < a.values.size(); ++v) {
    const Value &x = a.values[v], &y = b.values[v];
    if (x.type != y.type || x.kind != y.kind || x.name != y.name || x.data.has_value() != y.data.has_value())
      return false;
    if (x.data && !x.data->bitwise_equal(*y.data)) return false;
  }
  for (std::size_t n = 0; n < a.nodes.size(); ++n) {
    const Node &x = a.nodes[n], &y = b.nodes[n];
    if (!same_op(x.op, y.op) || x.inputs != y.inputs || x.outputs != y.outputs) return false;
  }
  return true;
}

/// A minimal valid graph's JSON with one node; tests splice in faults.
std::string graph_json(const std::string& values, const std::string& nodes,
                       const std::string& outputs = R"([{"name": "y", "value": 1}])",
                       const std::string& inputs = R"([{"name": "x", "value": 0}])") {
  return R"({"format": "rml-graph", "version": 1, "inputs": )" + inputs + R"(, "outputs": )" + outputs +
         R"(, "values": )" + values + R"(, "nodes": )" + nodes + "}";
}

const std::string two_values = R"([{"id": 0, "dtype": "f32", "shape": [2]}, {"id": 1, "dtype": "f32", "shape": [2]}])";

void check_rejected(const std::string& json, const std::string& phrase) {
  TempDir dir;
  spit(dir / "g.json", json);
  CHECK_THROWS_WITH_AS(read_graph(dir / "g.json"), doctest::Contains(phrase.c_str()), Error);
}

}  // namespace

TEST_CASE("a written graph reads back equal, and writing it again gives identical bytes") {
  TempDir dir;
  const Builder b = test::small_model();
  b.write(dir / "m.json");
  const Graph first = read_graph(dir / "m.json");
  CHECK(first.nodes.size() == 4);  // matmul, add, relu, softmax
  write_graph(first, dir / "again.json");
  CHECK(graphs_equal(first, read_graph(dir / "again.json")));
  CHECK(slurp(dir / "m.safetensors") == slurp(dir / "again.safetensors"));
  std::string a = slurp(dir / "m.json"), c = slurp(dir / "again.json");
  // Only the weights file's name differs.
  a.replace(a.find("m.safetensors"), 13, "again.safetensors");
  CHECK(a == c);
}

TEST_CASE("the JSON writer puts one value or node per line") {
  TempDir dir;
  test::small_model().write(dir / "m.json");
  const Graph g = read_graph(dir / "m.json");
  const std::string text = slurp(dir / "m.json");
  std::size_t value_lines = 0, node_lines = 0, pos = 0;
  while ((pos = text.find("\n{\"id\":", pos)) != std::string::npos) ++value_lines, ++pos;
  pos = 0;
  while ((pos = text.find("\n{\"op\":", pos)) != std::string::npos) ++node_lines, ++pos;
  CHECK(value_lines == g.values.size());
  CHECK(node_lines == g.nodes.size());
  CHECK(text.find("\"version\": 1") != std::string::npos);
}

TEST_CASE("small finite unnamed constants are inlined; named, large and non-finite ones are stored") {
  TempDir dir;
  Builder b;
  const auto x = b.input("x", TensorType{DType::f32, {17}});
  const auto small = b.constant(Tensor::from<float>({2}, {0.1f, -3.5f}));
  const auto sixteen = b.constant(Tensor(DType::f32, {16}));
  const auto seventeen = b.constant(Tensor(DType::f32, {17}));
  const auto named = b.constant(Tensor::from<float>({1}, {2.0f}), "scale");
  const auto infinite = b.constant(Tensor::from<float>({1}, {std::numeric_limits<float>::infinity()}));
  const auto nan = b.constant(Tensor::from<float>({1}, {std::numeric_limits<float>::quiet_NaN()}));
  const auto ints = b.constant(Tensor::from<std::int32_t>({3}, {INT32_MIN, 0, INT32_MAX}));
  auto y = b.op(Mul{}, {x, seventeen});
  y = b.op(Add{}, {y, b.op(ReduceSum{.axes = {0}, .keep_dims = true}, {b.op(Add{}, {sixteen, sixteen})})});
  y = b.op(Mul{}, {y, b.op(ReduceSum{.axes = {0}, .keep_dims = true}, {small})});
  y = b.op(Mul{}, {b.op(Mul{}, {b.op(Mul{}, {y, named}), infinite}), nan});
  // Folded ops make new unnamed constants; only what a node reads is written.
  b.output("y", y);
  b.output("ints", ints);
  b.write(dir / "c.json", /*clean_up=*/false);  // as built: the passes would shrink the zeros
  const std::string text = slurp(dir / "c.json");
  const auto stored = read_safetensors(dir / "c.safetensors").tensors;
  std::vector<std::string> keys;
  for (const auto& [key, tensor] : stored) keys.push_back(key);
  CAPTURE(text);
  CHECK(std::find(keys.begin(), keys.end(), "scale") != keys.end());
  CHECK(text.find("\"name\":\"scale\",\"weight\":\"scale\"") != std::string::npos);
  CHECK(text.find("\"data\":[-2147483648,0,2147483647]") != std::string::npos);
  // 17 zeros, inf and NaN are stored under generated keys.
  CHECK(stored.size() == 4);
  const Graph g = read_graph(dir / "c.json");
  CHECK(graphs_equal(g, read_graph(dir / "c.json")));
  TensorMap in{{"x", Tensor(DType::f32, {17})}};
  const auto out = evaluate(g, in);
  CHECK(std::isnan(out.at("y").values<float>()[0]));  // 0 * inf * NaN
  CHECK(out.at("ints").bitwise_equal(Tensor::from<std::int32_t>({3}, {INT32_MIN, 0, INT32_MAX})));
}

TEST_CASE("inline f32 constants round-trip bit for bit, including awkward values") {
  TempDir dir;
  const std::vector<float> awkward{0.1f, -0.0f, 1e-45f, 3.4028235e38f, 1.0f / 3.0f, 16777217.0f, 2.5e-38f};
  Builder b;
  const auto x = b.input("x", TensorType{DType::f32, {7}});
  b.output("y", b.op(Add{}, {x, b.constant(Tensor::from<float>({7}, awkward))}));
  b.write(dir / "a.json");
  const Graph g = read_graph(dir / "a.json");
  CHECK(slurp(dir / "a.json").find("\"data\":[") != std::string::npos);
  const Value& c = g.values[g.nodes[0].inputs[1]];
  CHECK(c.data->bitwise_equal(Tensor::from<float>({7}, awkward)));
}

namespace {

/// small_model with its stored weight "w" scaled: the same graph, new weights.
Graph scaled_model(float scale) {
  Graph g = test::small_model().graph();
  for (Value& v : g.values)
    if (v.name == "w") {
      std::vector<float> w(v.data->values<float>().begin(), v.data->values<float>().end());
      for (float& x : w) x *= scale;
      v.data = Tensor::from<float>(v.type.shape, w);
    }
  return g;
}

}  // namespace

TEST_CASE("a fault at any step of writing a graph leaves the previous pair, or nothing, and no temporary") {
  const Graph old_graph = scaled_model(1), new_graph = scaled_model(2);
  TempDir dir;
  const auto path = dir / "m.json";
  SUBCASE("onto an existing graph: new weights under a new name, the JSON renamed last, the old weights removed") {
    write_graph(old_graph, path);
    const Snapshot before = snapshot(dir.path());
    const auto [faults, after, error] = inject_each_fault(dir.path(), before, [&] { write_graph(new_graph, path); });
    CHECK(error.empty());
    std::vector<std::string> steps;
    for (const Fault& f : faults) steps.push_back(f.step);
    CHECK(steps == std::vector<std::string>{"open", "write", "sync", "close", "rename",                 // weights
                                            "open", "write", "sync folder", "sync", "close", "rename",  // graph
                                            "sync folder"});
    for (std::size_t k = 0; k + 1 < faults.size(); ++k) {
      CAPTURE(k);
      CAPTURE(faults[k].step);
      CHECK_MESSAGE(faults[k].message.find("Input/output error") != std::string::npos, faults[k].message);
      CHECK(faults[k].left == before);
    }
    // After the commit only durability is in doubt: the new pair is complete, and the error says so.
    CHECK(faults.back().message.find("written, but not yet durable") != std::string::npos);
    CHECK(faults.back().left == after);
    CHECK(after.size() == 2);
    CHECK_FALSE(after.count("m.safetensors"));  // the old weights are gone, the new ones carry a tag
    restore(dir.path(), after);
    CHECK(graphs_equal(read_graph(path), renumbered(new_graph)));
    write_graph(old_graph, path);  // and back: the plain name again, the tagged file removed
    CHECK(snapshot(dir.path()) == before);
  }
  SUBCASE("onto nothing: a fault leaves an empty folder") {
    const auto [faults, after, error] = inject_each_fault(dir.path(), {}, [&] { write_graph(new_graph, path); });
    CHECK(error.empty());
    CHECK(faults.size() == 12);
    for (std::size_t k = 0; k + 1 < faults.size(); ++k) CHECK(faults[k].left.empty());
    CHECK(after.size() == 2);
    CHECK(after.count("m.safetensors"));
  }
  SUBCASE("rewriting the same weights keeps their file and writes only the graph") {
    write_graph(old_graph, path);
    const Snapshot before = snapshot(dir.path());
    const auto [faults, after, error] = inject_each_fault(dir.path(), before, [&] { write_graph(old_graph, path); });
    CHECK(error.empty());
    CHECK(faults.size() == 7);
    for (const Fault& f : faults) CHECK(f.left == before);
    CHECK(after == before);
  }
}

TEST_CASE("a full disk, a read-only folder and planted symlinks leave the previous graph") {
  const Graph old_graph = scaled_model(1), new_graph = scaled_model(3);
  TempDir dir;
  const auto path = dir / "m.json";
  write_graph(old_graph, path);
  const Snapshot before = snapshot(dir.path());
  SUBCASE("a full disk (a file size limit: writes fail with EFBIG)") {
    rlimit saved{};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit tight = saved;
    tight.rlim_cur = 64;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &tight) == 0);
    std::string message;
    try {
      write_graph(new_graph, path);
    } catch (const Error& e) {
      message = e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, old_handler);
    CHECK_MESSAGE(message.find("cannot write") != std::string::npos, message);
    CHECK(snapshot(dir.path()) == before);
  }
  SUBCASE("a read-only folder (written by an unprivileged child process)") {
    std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
                                                 std::filesystem::perms::group_read | std::filesystem::perms::group_exec |
                                                 std::filesystem::perms::others_read | std::filesystem::perms::others_exec);
    const pid_t child = ::fork();
    if (child == 0) {
      if (::geteuid() == 0 && ::setuid(65534) != 0) ::_exit(2);  // root ignores permissions: drop to nobody
      try {
        write_graph(new_graph, path);
      } catch (const Error& e) {
        ::_exit(std::string(e.what()).find("Permission denied") != std::string::npos ? 0 : 3);
      }
      ::_exit(1);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_all);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(snapshot(dir.path()) == before);
  }
  SUBCASE("symlinks planted at the graph's and the weights' names are replaced, never followed") {
    TempDir elsewhere;
    spit(elsewhere / "victim", "precious");
    restore(dir.path(), {});
    std::filesystem::create_symlink(elsewhere / "victim", path);
    std::filesystem::create_symlink(elsewhere / "victim", dir / "m.safetensors");
    write_graph(new_graph, path);
    CHECK(slurp(elsewhere / "victim") == "precious");
    CHECK_FALSE(std::filesystem::is_symlink(path));
    CHECK(graphs_equal(read_graph(path), renumbered(new_graph)));
    CHECK(std::filesystem::is_symlink(dir / "m.safetensors"));  // not this graph's: left alone
  }
}

TEST_CASE("LoadOptions: every limit is checked while loading and named in the error") {
  TempDir dir;
  test::small_model().write(dir / "m.json");
  CHECK(read_graph(dir / "m.json", LoadOptions{}).nodes.size() == 4);  // the defaults admit it
  const std::pair<const char*, const char*> too_tight[] = {
      {"max_graph_bytes=100", "LoadOptions::max_graph_bytes"},
      {"max_weights_bytes=100", "LoadOptions::max_weights_bytes"},
      {"max_header_bytes=10", "LoadOptions::max_header_bytes"},
      {"max_json_depth=2", "nests deeper than 2 levels"},
      {"max_nodes=3", "nodes: 4 exceeds the limit of 3 (LoadOptions::max_nodes)"},
      {"max_values=3", "LoadOptions::max_values"},
      {"max_rank=1", "rank: 2 exceeds the limit of 1 (LoadOptions::max_rank)"},
      {"max_tensor_elements=11", "value 1 elements: 12 exceeds the limit of 11 (LoadOptions::max_tensor_elements)"},
  };
  for (const auto& [limit, phrase] : too_tight) {
    CAPTURE(limit);
    LoadOptions options;
    set_limits(options, limit);
    CHECK_THROWS_WITH_AS(read_graph(dir / "m.json", options), doctest::Contains(phrase), Error);
  }
  LoadOptions options;
  set_limits(options, "max_nodes=4,max_rank=2");
  CHECK(options.max_nodes == 4);
  CHECK(options.max_rank == 2);
  CHECK(read_graph(dir / "m.json", options).nodes.size() == 4);  // limits are inclusive
  CHECK_THROWS_WITH_AS(set_limits(options, "max_bogus=1"), doctest::Contains("unknown limit 'max_bogus' (limits: max_graph_bytes"), Error);
  CHECK_THROWS_WITH_AS(set_limits(options, "max_nodes=-1"), doctest::Contains("needs a non-negative integer"), Error);
  CHECK_THROWS_WITH_AS(set_limits(options, "max_nodes"), doctest::Contains("must be NAME=VALUE"), Error);
}

TEST_CASE("writing leaves no temporary file, and a failed write leaves nothing") {
  TempDir dir;
  test::small_model().write(dir / "m.json");
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    CHECK(entry.path().string().find(".tmp") == std::string::npos);
  }
  CHECK(files == 2);
  CHECK_THROWS_AS(test::small_model().write(dir / "missing" / "m.json"), Error);
  CHECK_FALSE(std::filesystem::exists(dir / "missing"));
}

TEST_CASE("malformed graphs are rejected with an error naming the fault") {
  const std::string relu = R"([{"op": "relu", "inputs": [0], "outputs": [1]}])";
  SUBCASE("valid baseline") {
    TempDir dir;
    spit(dir / "g.json", graph_json(two_values, relu));
    CHECK(read_graph(dir / "g.json").nodes.size() == 1);
  }
  SUBCASE("malformed JSON") { check_rejected("{\"format\": ", "malformed JSON"); }
  SUBCASE("a duplicate key") {
    std::string j = graph_json(two_values, relu);
    j.insert(1, "\"nodes\": [], ");
    check_rejected(j, "has duplicate key 'nodes'");
  }
  SUBCASE("not a graph") { check_rejected("[]", "must be a JSON object"); }
  SUBCASE("wrong format name") { check_rejected(R"({"format": "onnx"})", "not an rml-graph file"); }
  SUBCASE("unsupported version") {
    std::string j = graph_json(two_values, relu);
    j.replace(j.find("\"version\": 1"), 12, "\"version\": 7");
    check_rejected(j, "unsupported format version 7");
  }
  SUBCASE("unknown op") {
    check_rejected(graph_json(two_values, R"([{"op": "launch", "inputs": [0], "outputs": [1]}])"),
                   "unknown op 'launch'");
  }
  SUBCASE("wrong arity") {
    check_rejected(graph_json(two_values, R"([{"op": "relu", "inputs": [0, 0], "outputs": [1]}])"),
                   "node 0 (relu): op 'relu' takes 1 inputs, got 2");
  }
  SUBCASE("dangling value id in a node") {
    check_rejected(graph_json(two_values, R"([{"op": "relu", "inputs": [5], "outputs": [1]}])"),
                   "node 0 (relu): inputs[0] refers to value 5, which does not exist");
  }
  SUBCASE("a value no node produces") {
    const std::string three = R"([{"id": 0, "dtype": "f32", "shape": [2]}, {"id": 1, "dtype": "f32", "shape": [2]}, {"id": 2, "dtype": "f32", "shape": [2]}])";
    check_rejected(graph_json(three, R"([{"op": "add", "inputs": [0, 2], "outputs": [1]}])"),
                   "value 2 is dangling");
  }
  SUBCASE("a cycle") {
    const std::string three = R"([{"id": 0, "dtype": "f32", "shape": [2]}, {"id": 1, "dtype": "f32", "shape": [2]}, {"id": 2, "dtype": "f32", "shape": [2]}])";
    check_rejected(graph_json(three, R"([{"op": "add", "inputs": [0, 2], "outputs": [1]},
                                          {"op": "relu", "inputs": [1], "outputs": [2]}])"),
                   "the graph has a cycle through node 0 (add)");
  }
  SUBCASE("a value produced twice") {
    check_rejected(graph_json(two_values, R"([{"op": "relu", "inputs": [0], "outputs": [1]},
                                               {"op": "neg", "inputs": [0], "outputs": [1]}])"),
                   "value 1 is produced twice");
  }
  SUBCASE("duplicate output name") {
    check_rejected(graph_json(two_values, relu, R"([{"name": "y", "value": 1}, {"name": "y", "value": 1}])"),
                   "output name 'y' is used twice");
  }
  SUBCASE("duplicate input name") {
    const std::string three = R"([{"id": 0, "dtype": "f32", "shape": [2]}, {"id": 1, "dtype": "f32", "shape": [2]}, {"id": 2, "dtype": "f32", "shape": [2]}])";
    check_rejected(graph_json(three, relu, R"([{"name": "y", "value": 1}])",
                              R"([{"name": "x", "value": 0}, {"name": "x", "value": 2}])"),
                   "input name 'x' is used twice");
  }
  SUBCASE("an output that is not computed") {
    check_rejected(graph_json(two_values, relu, R"([{"name": "y", "value": 0}])"),
                   "outputs must be computed by a node");
  }
  SUBCASE("i32 into an f32-only op") {
    const std::string ints = R"([{"id": 0, "dtype": "i32", "shape": [2]}, {"id": 1, "dtype": "i32", "shape": [2]}])";
    check_rejected(graph_json(ints, R"([{"op": "exp", "inputs": [0], "outputs": [1]}])"),
                   "node 0 (exp): op 'exp': input 0 must be f32, got i32");
  }
  SUBCASE("recorded shape disagrees with the shape rule") {
    const std::string values = R"([{"id": 0, "dtype": "f32", "shape": [2]}, {"id": 1, "dtype": "f32", "shape": [3]}])";
    check_rejected(graph_json(values, relu), "is recorded as f32[3] but the shape rule gives f32[2]");
  }
  SUBCASE("a shape rule violation") {
    const std::string values = R"([{"id": 0, "dtype": "f32", "shape": [2, 3]}, {"id": 1, "dtype": "f32", "shape": [3, 2]}])";
    check_rejected(graph_json(values, R"([{"op": "transpose", "inputs": [0], "outputs": [1], "attrs": {"perm": [0, 0]}}])"),
                   "attribute 'perm' [0, 0] is not a permutation");
  }
  SUBCASE("negative dimension") {
    check_rejected(graph_json(R"([{"id": 0, "dtype": "f32", "shape": [-2]}, {"id": 1, "dtype": "f32", "shape": [2]}])", relu),
                   "negative dimension");
  }
  SUBCASE("shape overflow") {
    check_rejected(graph_json(R"([{"id": 0, "dtype": "f32", "shape": [4294967296, 4294967296]}, {"id": 1, "dtype": "f32", "shape": [2]}])", relu),
                   "overflows");
  }
  SUBCASE("ids out of order") {
    check_rejected(graph_json(R"([{"id": 1, "dtype": "f32", "shape": [2]}, {"id": 0, "dtype": "f32", "shape": [2]}])", relu),
                   "'id' must equal its position");
  }
  SUBCASE("unknown dtype") {
    check_rejected(graph_json(R"([{"id": 0, "dtype": "f16", "shape": [2]}, {"id": 1, "dtype": "f32", "shape": [2]}])", relu),
                   "unknown dtype 'f16'");
  }
  SUBCASE("inline data of the wrong length") {
    check_rejected(graph_json(R"([{"id": 0, "dtype": "f32", "shape": [2]}, {"id": 1, "dtype": "f32", "shape": [2]}, {"id": 2, "dtype": "f32", "shape": [2], "data": [1]}])",
                              R"([{"op": "add", "inputs": [0, 2], "outputs": [1]}])"),
                   "'data' has 1 numbers, shape [2] needs 2");
  }
  SUBCASE("inline i32 data out of range") {
    check_rejected(graph_json(R"([{"id": 0, "dtype": "i32", "shape": [1]}, {"id": 1, "dtype": "i32", "shape": [1]}, {"id": 2, "dtype": "i32", "shape": [1], "data": [2147483648]}])",
                              R"([{"op": "add", "inputs": [0, 2], "outputs": [1]}])"),
                   "outside the i32 range");
  }
  SUBCASE("weights file outside the graph's folder") {
    for (const char* name : {"../w.safetensors", "/etc/passwd", "sub/w.safetensors", ".."}) {
      std::string j = graph_json(two_values, relu);
      j.insert(1, "\"weights\": \"" + std::string(name) + "\", ");
      check_rejected(j, "must be a plain file name");
    }
  }
  SUBCASE("a weight missing from the weights file") {
    TempDir dir;
    write_safetensors(dir / "w.safetensors", {});
    std::string j = graph_json(R"([{"id": 0, "dtype": "f32", "shape": [2]}, {"id": 1, "dtype": "f32", "shape": [2]}, {"id": 2, "dtype": "f32", "shape": [2], "weight": "b"}])",
                               R"([{"op": "add", "inputs": [0, 2], "outputs": [1]}])");
    j.insert(1, "\"weights\": \"w.safetensors\", ");
    spit(dir / "g.json", j);
    CHECK_THROWS_WITH_AS(read_graph(dir / "g.json"), doctest::Contains("weight 'b' is not in the weights file"), Error);
  }
  SUBCASE("a weight whose shape disagrees with the graph") {
    TempDir dir;
    write_safetensors(dir / "w.safetensors", {{"b", Tensor(DType::f32, {3})}});
    std::string j = graph_json(R"([{"id": 0, "dtype": "f32", "shape": [2]}, {"id": 1, "dtype": "f32", "shape": [2]}, {"id": 2, "dtype": "f32", "shape": [2], "weight": "b"}])",
                               R"([{"op": "add", "inputs": [0, 2], "outputs": [1]}])");
    j.insert(1, "\"weights\": \"w.safetensors\", ");
    spit(dir / "g.json", j);
    CHECK_THROWS_WITH_AS(read_graph(dir / "g.json"), doctest::Contains("is f32[3] in the weights file but the graph declares f32[2]"), Error);
  }
  SUBCASE("a weights file that is a symbolic link") {
    TempDir dir;
    write_safetensors(dir / "real.safetensors", {});
    std::filesystem::create_symlink(dir / "real.safetensors", dir / "w.safetensors");
    std::string j = graph_json(two_values, relu);
    j.insert(1, "\"weights\": \"w.safetensors\", ");
    spit(dir / "g.json", j);
    CHECK_THROWS_WITH_AS(read_graph(dir / "g.json"), doctest::Contains("'w.safetensors' is a symbolic link"), Error);
  }
  SUBCASE("a \"format\" that is not a string") {
    std::string j = graph_json(two_values, relu);
    j.replace(j.find("\"rml-graph\""), 11, "3");
    check_rejected(j, "not an rml-graph file");
  }
  SUBCASE("errors name the file") {
    TempDir dir;
    spit(dir / "named.json", "nonsense");
    CHECK_THROWS_WITH_AS(read_graph(dir / "named.json"), doctest::Contains("named.json"), Error);
  }
}

TEST_CASE("evaluate rejects missing, extra and ill-typed inputs by name") {
  const Builder b = test::small_model();
  const Graph& g = b.graph();
  CHECK_THROWS_WITH_AS(evaluate(g, {}), "input 'x' is missing", Error);
  TensorMap wrong{{"x", Tensor(DType::f32, {3, 2})}};
  CHECK_THROWS_WITH_AS(evaluate(g, wrong), "input 'x' must be f32[2, 3], got f32[3, 2]", Error);
  TensorMap extra{{"x", Tensor(DType::f32, {2, 3})}, {"z", Tensor(DType::f32, {1})}};
  CHECK_THROWS_WITH_AS(evaluate(g, extra), "the graph has no input named 'z'", Error);
}
