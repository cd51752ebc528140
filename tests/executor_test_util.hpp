// Helpers of the executor suites: seeded random tensors and shapes, a
// tolerance comparison that names the first mismatching element, and a
// harness that runs a graph through rml::Executor in every configuration
// (fused and unfused, 1 and 2 threads, named-tensor and zero-copy runs)
// against the reference interpreter rml::evaluate.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "rml/builder.hpp"
#include "rml/exec/executor.hpp"

namespace rml::test {

using Rng = std::mt19937;

inline constexpr float inf = std::numeric_limits<float>::infinity();
inline constexpr float qnan = std::numeric_limits<float>::quiet_NaN();

// ------------------------------------------------------------ random values

inline int uniform_int(Rng& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
inline bool coin(Rng& rng, double p = 0.5) { return std::bernoulli_distribution(p)(rng); }
template <class T>
T pick(Rng& rng, const std::vector<T>& options) {
  return options[static_cast<std::size_t>(uniform_int(rng, 0, static_cast<int>(options.size()) - 1))];
}

/// f32 values uniform in [lo, hi].
inline Tensor uniform(Rng& rng, const Shape& shape, float lo, float hi) {
  Tensor t(DType::f32, shape);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float& v : t.values<float>()) v = dist(rng);
  return t;
}

/// f32 values with a random sign and a magnitude in [lo, hi] (away from 0).
inline Tensor signed_magnitude(Rng& rng, const Shape& shape, float lo, float hi) {
  Tensor t = uniform(rng, shape, lo, hi);
  for (float& v : t.values<float>())
    if (coin(rng)) v = -v;
  return t;
}

/// f32 small integers in [lo, hi]: many ties, exact comparisons.
inline Tensor small_ints_f32(Rng& rng, const Shape& shape, int lo, int hi) {
  Tensor t(DType::f32, shape);
  for (float& v : t.values<float>()) v = static_cast<float>(uniform_int(rng, lo, hi));
  return t;
}

/// i32 values uniform in [lo, hi].
inline Tensor ints(Rng& rng, const Shape& shape, std::int64_t lo, std::int64_t hi) {
  Tensor t(DType::i32, shape);
  std::uniform_int_distribution<std::int64_t> dist(lo, hi);
  for (std::int32_t& v : t.values<std::int32_t>()) v = static_cast<std::int32_t>(dist(rng));
  return t;
}

/// Replaces a fraction of the elements with NaN, +inf and -inf.
inline void sprinkle_specials(Rng& rng, Tensor& t, double p = 0.15) {
  for (float& v : t.values<float>())
    if (coin(rng, p)) v = pick<float>(rng, {qnan, inf, -inf, -qnan});
}

// ------------------------------------------------------------ random shapes

inline std::int64_t random_dim(Rng& rng) {
  return pick<std::int64_t>(rng, {1, 1, 2, 3, 3, 4, 5, 7, 7, 8, 13, 16, 33, 100});
}

/// A random shape of `rank` with at most `max_elements` elements.
inline Shape random_shape(Rng& rng, std::size_t rank, std::int64_t max_elements = 3000) {
  Shape shape;
  for (std::size_t d = 0; d < rank; ++d) shape.push_back(random_dim(rng));
  while (element_count(shape) > max_elements) {
    auto largest = std::max_element(shape.begin(), shape.end());
    *largest = pick<std::int64_t>(rng, {1, 2, 3, 5, 7});
  }
  return shape;
}

/// A shape that broadcasts into `out`: some leading axes dropped, some axes 1.
inline Shape broadcast_operand(Rng& rng, const Shape& out, double ones = 0.3) {
  const std::size_t drop = coin(rng, 0.3) ? static_cast<std::size_t>(uniform_int(rng, 0, static_cast<int>(out.size()))) : 0;
  Shape s(out.begin() + static_cast<std::ptrdiff_t>(drop), out.end());
  for (auto& d : s)
    if (coin(rng, ones)) d = 1;
  return s;
}

// ------------------------------------------------------------ comparison

/// "[i, j, k]" for flat index `flat` of `shape`.
inline std::string index_string(const Shape& shape, std::int64_t flat) {
  Shape index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return to_string(index);
}

inline std::string float_string(float v) {
  std::ostringstream out;
  out.precision(9);
  out << v;
  return out.str();
}

/// The tolerance every executor result is held to: |a - b| <= 1e-5 + 1e-5 |b|.
/// NaN must match NaN, an infinity must match exactly, i32 must be exact.
inline bool close(float a, float b, double atol = 1e-5, double rtol = 1e-5) {
  if (std::isnan(b)) return std::isnan(a);
  if (std::isinf(b)) return a == b;
  return std::abs(double(a) - double(b)) <= atol + rtol * std::abs(double(b));
}

/// "" when `actual` matches `expected`; else the first mismatch, with its index.
inline std::string mismatch(const Tensor& actual, const Tensor& expected, double atol = 1e-5, double rtol = 1e-5) {
  if (actual.type() != expected.type())
    return "type " + to_string(actual.type()) + ", expected " + to_string(expected.type());
  std::int64_t bad = 0, first = -1;
  std::string what;
  if (expected.dtype() == DType::f32) {
    const auto a = actual.values<float>(), b = expected.values<float>();
    for (std::size_t i = 0; i < b.size(); ++i)
      if (!close(a[i], b[i], atol, rtol)) {
        if (first < 0) {
          first = static_cast<std::int64_t>(i);
          what = "got " + float_string(a[i]) + ", expected " + float_string(b[i]);
        }
        ++bad;
      }
  } else {
    const auto a = actual.values<std::int32_t>(), b = expected.values<std::int32_t>();
    for (std::size_t i = 0; i < b.size(); ++i)
      if (a[i] != b[i]) {
        if (first < 0) {
          first = static_cast<std::int64_t>(i);
          what = "got " + std::to_string(a[i]) + ", expected " + std::to_string(b[i]);
        }
        ++bad;
      }
  }
  if (first < 0) return "";
  return detail::concat("element ", first, " ", index_string(expected.shape(), first), " of ",
                        to_string(expected.type()), ": ", what, " (", bad, " of ", expected.elements(),
                        " elements differ)");
}

/// The graph, one node a line, for failure messages.
inline std::string graph_text(const Graph& g) {
  std::ostringstream out;
  for (const NamedValue& in : g.inputs) out << "  input " << in.name << " = v" << in.value << " " << to_string(g.type(in.value)) << "\n";
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    out << "  node " << n << ": ";
    for (ValueId v : node.outputs) out << "v" << v << " " << to_string(g.type(v)) << " ";
    out << "= " << op_name(node.op) << "(";
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      const ValueId v = node.inputs[i];
      out << (i ? ", " : "") << (g.values[v].kind == ValueKind::constant ? "const v" : "v") << v;
    }
    out << ")\n";
  }
  for (const NamedValue& o : g.outputs) out << "  output " << o.name << " = v" << o.value << "\n";
  return out.str();
}

// ------------------------------------------------------------ harness

struct RunConfig {
  int threads;
  bool fuse;
  bool zero_copy;
};
/// Every configuration a property is checked in.
inline const std::vector<RunConfig>& all_configs() {
  static const std::vector<RunConfig> configs{
      {1, true, false}, {2, true, true}, {1, false, true}, {2, false, false}};
  return configs;
}

inline std::string config_string(const RunConfig& c) {
  return detail::concat("threads=", c.threads, c.fuse ? " fused" : " unfused", c.zero_copy ? " zero-copy" : " named");
}

/// Runs `executor` on `inputs`: by name, or through caller buffers; the
/// output buffers start as NaN garbage, so an element never written shows.
inline TensorMap run_executor(const Executor& executor, const TensorMap& inputs, bool zero_copy) {
  if (!zero_copy) return executor.run(inputs);
  const Graph& g = executor.model().graph();
  std::vector<InputBuffer> in;
  for (const NamedValue& i : g.inputs) {
    const Tensor& t = inputs.at(i.name);
    in.push_back({t.raw(), t.bytes()});
  }
  TensorMap result;
  std::vector<OutputBuffer> out;
  for (const NamedValue& o : g.outputs) {
    Tensor t(g.type(o.value));
    const std::uint32_t garbage = 0x7fc0dead;
    for (std::int64_t e = 0; e < t.elements(); ++e) std::memcpy(t.raw() + 4 * e, &garbage, 4);
    Tensor& placed = result.emplace(o.name, std::move(t)).first->second;
    out.push_back({placed.raw(), placed.bytes()});
  }
  executor.run(in, out);
  return result;
}

/// Checks every output of `graph` on `inputs`, in every configuration,
/// against rml::evaluate. Returns the number of failing (config, output) pairs.
inline int check_graph(const Graph& graph, const TensorMap& inputs, const std::string& label,
                       const std::vector<RunConfig>& configs = all_configs()) {
  TensorMap expected;
  try {
    expected = evaluate(graph, inputs);
  } catch (const std::exception& e) {
    FAIL_CHECK(label << ": the reference failed: " << e.what() << "\n" << graph_text(graph));
    return 1;
  }
  const Model model(graph);
  int failures = 0;
  for (const RunConfig& config : configs) {
    std::string problem;
    std::string plan;
    try {
      const Executor executor(model, {config.threads, config.fuse});
      const TensorMap actual = run_executor(executor, inputs, config.zero_copy);
      for (const auto& [name, want] : expected) {
        const auto it = actual.find(name);
        const std::string m = it == actual.end() ? "missing from the results" : mismatch(it->second, want);
        if (!m.empty()) {
          problem += "  output '" + name + "': " + m + "\n";
          plan = executor.describe();
        }
      }
    } catch (const std::exception& e) {
      problem = std::string("  threw: ") + e.what() + "\n";
    }
    if (!problem.empty()) {
      ++failures;
      FAIL_CHECK(label << " [" << config_string(config) << "]\n" << problem << "graph:\n" << graph_text(graph) << plan);
    }
  }
  CHECK(failures == 0);  // one passing assertion per graph when all is well
  return failures;
}

/// The same for a Builder whose inputs' examples are the values to run.
inline int check_builder(const Builder& b, const std::string& label,
                         const std::vector<RunConfig>& configs = all_configs()) {
  TensorMap inputs;
  for (const NamedValue& in : b.graph().inputs) inputs.emplace(in.name, b.example(in.value));
  return check_graph(b.graph(), inputs, label, configs);
}

/// Runs `check` (returning its failure count) in a child process, so that a
/// crash in the executor fails this check instead of ending the whole suite.
/// The child reports its mismatches itself; the parent records the outcome.
template <class Fn>
void isolated(const std::string& label, Fn&& check) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The default actions, not doctest's handlers: the parent reports a crash.
    for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
    alarm(120);  // a hang is a failure too
    std::cout << std::unitbuf;  // the report gets out before any crash
    int failures = 1;
    try {
      failures = check();
    } catch (...) {
    }
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    _exit(failures == 0 ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  if (WIFSIGNALED(status))
    FAIL_CHECK(label << ": the executor CRASHED (signal " << WTERMSIG(status) << ", " << std::string(strsignal(WTERMSIG(status))) << ")");
  else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    FAIL_CHECK(label << ": results differ from the reference (details above)");
  else
    CHECK(true);
}

}  // namespace rml::test
