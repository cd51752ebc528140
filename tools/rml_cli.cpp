// The `rml` command-line program: run, inspect, validate and convert rml-graph files.
// Exit codes: 0 success, 1 a reported error, 2 bad usage.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "rml/emit/converters.hpp"
#include "rml/op_docs.hpp"
#include "rml/rml.hpp"

namespace {

constexpr int exit_error = 1;
constexpr int exit_usage = 2;

constexpr const char* usage_text = R"(usage: rml COMMAND [ARGS]

commands:
  run MODEL.json [--inputs IN.safetensors] [--output OUT.safetensors] [--seed N]
                 [--threads N] [--repeat R] [--no-fuse] [--reference] [--profile]
        run the graph through the executor (--reference: the reference
        kernels instead); without --inputs, deterministic pseudo-random
        inputs of the right dtype and shape are used; --repeat R times R runs
        (after one untimed warm-up run) and prints the median latency;
        --profile prints each kernel's median time and share (R runs, default 20)
  info MODEL.json [--threads N] [--no-fuse]
        inputs, outputs, op histogram, parameter count and bytes, and the
        executor's plan (kernels, fused groups, arena bytes)
  opt IN.json -o OUT.json [--passes a,b,...] [--print-counts]
        run the clean-up passes (all, or the listed ones) to a fixpoint and
        write the result; --print-counts shows node counts per op before and after
  validate MODEL.json    check the graph and its weights; prints "ok" or the error
  ops [--markdown | --support]
        the op table, generated from the registry; --support: which op each
        converter lowers (the support report)
  convert MODEL.json --to FORMAT -o OUT [--external-threshold BYTES]
        convert to another runtime's format, writing OUT and its weights
        sidecar, if any (OUT.data for onnx, OUT.bin for webnn), atomically
  convert MODEL.json --to FORMAT --check
        preflight: list every node the format cannot take (index, op, output,
        reason), write nothing, exit 1 if there is any
  convert --list         the formats compiled in
  dot MODEL.json -o OUT.dot
        the graph as Graphviz DOT (same as convert --to dot)
  tensors FILE.safetensors [--json]
        list (or dump as JSON) the tensors of a safetensors file
  errors [--markdown]    the error codes rml reports (docs/errors.md)

A reported error prints "rml: error [CODE]: message" and exits 1; CODE is one
of `rml errors`, the same rml::ErrorCode the C++ and Python APIs give.

run, info, opt, validate, convert and dot take --limits NAME=N,NAME=N,... to
bound what loading costs (rml::LoadOptions: max_graph_bytes, max_weights_bytes,
max_header_bytes, max_json_depth, max_nodes, max_values, max_rank,
max_tensor_elements, max_memory_bytes); a model over a limit is an error naming it.
)";

struct UsageError {
  std::string message;
};

/// Positional arguments and --flag VALUE / --switch options.
struct Arguments {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;

  Arguments(int argc, char** argv, const std::vector<std::string>& valued,
            const std::vector<std::string>& switches) {
    for (int i = 2; i < argc; ++i) {
      const std::string arg = std::string_view(argv[i]) == "-o" ? "--output" : argv[i];
      if (arg.rfind("--", 0) != 0) {
        positional.push_back(arg);
      } else if (std::find(valued.begin(), valued.end(), arg) != valued.end()) {
        if (i + 1 >= argc) throw UsageError{arg + " needs a value"};
        options[arg] = argv[++i];
      } else if (std::find(switches.begin(), switches.end(), arg) != switches.end()) {
        options[arg] = "";
      } else {
        throw UsageError{"unknown option " + arg};
      }
    }
  }
  const std::string& only_positional(const char* what) const {
    if (positional.size() != 1) throw UsageError{std::string("expected one ") + what};
    return positional[0];
  }
  std::optional<std::string> option(const std::string& name) const {
    const auto it = options.find(name);
    return it == options.end() ? std::nullopt : std::optional(it->second);
  }
};

/// splitmix64: a tiny generator with a fixed, documented sequence, so the
/// inputs `rml run` makes up are the same on every machine.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  float uniform() { return float(next() >> 40) / float(1 << 24) * 2.0f - 1.0f; }  // [-1, 1)
};

/// An i32 input that indexes a gather is drawn below the gathered axis size;
/// other i32 inputs below 8.
std::int64_t integer_bound(const rml::Graph& graph, rml::ValueId input) {
  std::int64_t bound = 8;
  for (const rml::Node& node : graph.nodes)
    if (const auto* gather = rml::get_if<rml::Gather>(&node.op);
        gather && node.inputs.size() == 2 && node.inputs[1] == input) {
      const rml::Shape& data = graph.type(node.inputs[0]).shape;
      bound = std::min(bound, data[rml::normalize_axis(gather->axis, data.size(), "gather")]);
    }
  return std::max<std::int64_t>(bound, 1);
}

rml::TensorMap made_up_inputs(const rml::Graph& graph, std::uint64_t seed) {
  rml::TensorMap inputs;
  for (std::size_t i = 0; i < graph.inputs.size(); ++i) {
    const rml::NamedValue& in = graph.inputs[i];
    SplitMix64 rng{seed * 1000003 + i};
    rml::Tensor t(graph.type(in.value));
    if (t.dtype() == rml::DType::f32) {
      for (float& v : t.values<float>()) v = rng.uniform();
    } else {
      const std::int64_t bound = integer_bound(graph, in.value);
      for (std::int32_t& v : t.values<std::int32_t>()) v = std::int32_t(rng.next() % std::uint64_t(bound));
    }
    inputs.emplace(in.name, std::move(t));
  }
  return inputs;
}

rml::TensorMap read_inputs(const std::string& path) {
  rml::TensorMap inputs;
  for (auto& [name, tensor] : rml::read_safetensors(path).tensors) inputs.emplace(name, std::move(tensor));
  return inputs;
}

std::string format_value(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

std::string format_seconds(double s) {
  if (s < 1e-3) return format_value(s * 1e6) + " us";
  if (s < 1) return format_value(s * 1e3) + " ms";
  return format_value(s) + " s";
}

void print_summary(const std::string& name, const rml::Tensor& t) {
  std::cout << "  " << name << ": " << rml::to_string(t.type());
  if (t.elements() == 0) {
    std::cout << " (empty)\n";
    return;
  }
  std::vector<double> values;
  rml::visit_dtype(t.dtype(), [&](auto zero) {
    for (auto v : t.values<decltype(zero)>()) values.push_back(double(v));
  });
  double sum = 0;
  for (double v : values) sum += v;
  std::cout << "  min " << format_value(*std::min_element(values.begin(), values.end()))
            << "  max " << format_value(*std::max_element(values.begin(), values.end()))
            << "  mean " << format_value(sum / double(values.size())) << "\n    [";
  const std::size_t shown = std::min<std::size_t>(values.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) std::cout << (i ? ", " : "") << format_value(values[i]);
  std::cout << (values.size() > shown ? ", ...]\n" : "]\n");
}

int positive_option(const Arguments& args, const std::string& name, int fallback) {
  const auto text = args.option(name);
  if (!text) return fallback;
  try {
    std::size_t used = 0;
    const int value = std::stoi(*text, &used);
    if (used == text->size() && value >= 1) return value;
  } catch (...) {
  }
  throw UsageError{name + " needs a positive integer"};
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

std::string executor_label(int threads, bool fuse) {
  return "executor, " + std::to_string(threads) + (threads == 1 ? " thread" : " threads") + (fuse ? "" : ", unfused");
}

/// Each kernel's median time and share of their sum, slowest first, with the
/// ops it runs and its description.
void print_profile(const rml::Executor& executor, const rml::TensorMap& inputs, int runs) {
  const std::vector<double> seconds = executor.profile(inputs, runs);
  const auto& kernels = executor.plan().kernels;
  double total = 0;
  for (double s : seconds) total += s;
  std::vector<std::size_t> order(seconds.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return seconds[a] > seconds[b]; });
  std::printf("profile: %zu kernels, median of %d runs each, sum %s, vector code %s\n", kernels.size(), runs,
              format_seconds(total).c_str(), std::string(rml::exec::isa_name(rml::exec::active_isa())).c_str());
  std::printf("  %10s %6s  %-4s %-28s %s\n", "time", "share", "#", "ops", "kernel");
  for (std::size_t k : order) {
    std::string ops;
    for (std::size_t n : kernels[k]->nodes) ops += (ops.empty() ? "" : "+") + std::string(rml::op_name(executor.model().graph().nodes[n].op));
    std::printf("  %10s %5.1f%%  %-4zu %-28s %s\n", format_seconds(seconds[k]).c_str(), total > 0 ? 100 * seconds[k] / total : 0.0, k,
                ops.c_str(), kernels[k]->describe().c_str());
  }
}

/// The loading limits from --limits NAME=N,... (rml::LoadOptions).
rml::LoadOptions limits_of(const Arguments& args) {
  rml::LoadOptions limits;
  if (auto text = args.option("--limits")) rml::set_limits(limits, *text);
  return limits;
}

/// The files a model is read from: its JSON and the weights file it names.
std::vector<std::filesystem::path> model_files(const std::filesystem::path& model) {
  std::vector<std::filesystem::path> files{model};
  for (const std::string& weights : rml::detail::referenced_weights(model)) files.push_back(model.parent_path() / weights);
  return files;
}

/// Refuses to write over a file the command reads: a failed write must never
/// cost the user their input.
void refuse_overwriting(const std::vector<std::filesystem::path>& inputs,
                        const std::vector<std::filesystem::path>& outputs) {
  for (const auto& out : outputs)
    for (const auto& in : inputs) {
      std::error_code ec;
      if (std::filesystem::equivalent(in, out, ec))
        rml::fail(rml::ErrorCode::invalid_argument, out.string(), ": refusing to overwrite ", in.string(), ", which this command reads");
    }
}

int run_command(int argc, char** argv) {
  const Arguments args(argc, argv, {"--inputs", "--output", "--seed", "--threads", "--repeat", "--limits"},
                       {"--no-fuse", "--reference", "--profile"});
  const std::string& model = args.only_positional("MODEL.json");
  std::uint64_t seed = 0;
  if (auto s = args.option("--seed")) {
    try {
      seed = std::stoull(*s);
    } catch (...) {
      throw UsageError{"--seed needs a non-negative integer"};
    }
  }
  const int threads = positive_option(args, "--threads", 1), repeat = positive_option(args, "--repeat", 1);
  const bool reference = args.option("--reference").has_value();
  const auto inputs_path = args.option("--inputs");
  if (auto out = args.option("--output")) {
    std::vector<std::filesystem::path> read = model_files(model);
    if (inputs_path) read.push_back(*inputs_path);
    refuse_overwriting(read, {*out});
  }
  const rml::Model loaded = rml::load(model, limits_of(args));
  const rml::Graph& graph = loaded.graph();
  const rml::TensorMap inputs = inputs_path ? read_inputs(*inputs_path) : made_up_inputs(graph, seed);
  rml::TensorMap outputs;
  std::vector<double> seconds;
  std::optional<rml::Executor> executor;
  if (!reference) executor.emplace(loaded, rml::ExecutorOptions{.threads = threads, .fuse = !args.option("--no-fuse")});
  if (args.option("--profile")) {
    if (reference) throw UsageError{"--profile times the executor's kernels: drop --reference"};
    print_profile(*executor, inputs, args.option("--repeat") ? repeat : 20);
    return 0;
  }
  if (repeat > 1) outputs = reference ? rml::evaluate(graph, inputs) : executor->run(inputs);  // warm-up, untimed
  for (int r = 0; r < repeat; ++r) {
    // The last run's outputs go first, as in a caller's loop that scopes them: the
    // allocator then hands back the same memory, not fresh pages to fault in.
    outputs.clear();
    const auto start = std::chrono::steady_clock::now();
    outputs = reference ? rml::evaluate(graph, inputs) : executor->run(inputs);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::cout << (inputs_path ? "inputs from " + *inputs_path : "pseudo-random inputs (seed " + std::to_string(seed) + ")") << ":\n";
  for (const rml::NamedValue& in : graph.inputs) print_summary(in.name, inputs.at(in.name));
  std::cout << "outputs:\n";
  for (const rml::NamedValue& out : graph.outputs) print_summary(out.name, outputs.at(out.name));
  if (repeat > 1)
    std::cout << "latency: median " << format_seconds(median(seconds)) << ", min "
              << format_seconds(*std::min_element(seconds.begin(), seconds.end())) << " over " << repeat
              << " runs (" << (reference ? "reference kernels" : executor_label(threads, !args.option("--no-fuse")))
              << ")\n";
  if (auto path = args.option("--output")) {
    rml::NamedTensors tensors;
    for (const rml::NamedValue& out : graph.outputs) tensors.emplace_back(out.name, outputs.at(out.name));
    rml::write_safetensors(*path, tensors);
    std::cout << "wrote " << *path << "\n";
  }
  return 0;
}

int info_command(int argc, char** argv) {
  const Arguments args(argc, argv, {"--threads", "--limits"}, {"--no-fuse"});
  const std::string& model = args.only_positional("MODEL.json");
  const rml::Model loaded = rml::load(model, limits_of(args));
  const rml::Graph& graph = loaded.graph();
  std::cout << model << "\ninputs:\n";
  for (const rml::NamedValue& in : graph.inputs)
    std::cout << "  " << in.name << ": " << rml::to_string(graph.type(in.value)) << "\n";
  std::cout << "outputs:\n";
  for (const rml::NamedValue& out : graph.outputs)
    std::cout << "  " << out.name << ": " << rml::to_string(graph.type(out.value)) << "\n";
  std::map<std::string_view, int> histogram;
  for (const rml::Node& node : graph.nodes) ++histogram[rml::op_name(node.op)];
  std::vector<std::pair<std::string_view, int>> ops(histogram.begin(), histogram.end());
  std::stable_sort(ops.begin(), ops.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::cout << "nodes: " << graph.nodes.size() << "\n";
  for (const auto& [name, count] : ops) std::cout << "  " << name << " x" << count << "\n";
  std::int64_t parameters = 0, bytes = 0, constants = 0;
  for (const rml::Value& v : graph.values)
    if (v.kind == rml::ValueKind::constant) {
      ++constants;
      parameters += v.data->elements();
      bytes += static_cast<std::int64_t>(v.data->bytes());
    }
  std::cout << "constants: " << constants << "\nparameters: " << parameters << " (" << bytes
            << " bytes)\n";
  const rml::Executor executor(
      loaded, {.threads = positive_option(args, "--threads", 1), .fuse = !args.option("--no-fuse")});
  std::cout << executor.describe();
  return 0;
}

std::map<std::string, int> op_histogram(const rml::Graph& graph) {
  std::map<std::string, int> counts;
  for (const rml::Node& node : graph.nodes) ++counts[std::string(rml::op_name(node.op))];
  return counts;
}

int opt_command(int argc, char** argv) {
  const Arguments args(argc, argv, {"--output", "--passes", "--limits"}, {"--print-counts"});
  const std::string& input = args.only_positional("IN.json");
  const auto output = args.option("--output");
  if (!output) throw UsageError{"opt needs -o OUT.json"};
  std::vector<std::string> passes;
  if (auto list = args.option("--passes")) {
    std::stringstream names(*list);
    for (std::string name; std::getline(names, name, ',');)
      if (!name.empty()) passes.push_back(name);
  }
  refuse_overwriting(model_files(input), {*output, std::filesystem::path(*output).replace_extension(".safetensors")});
  rml::Graph graph = rml::read_graph(input, limits_of(args));
  const auto before = op_histogram(graph);
  const std::size_t nodes_before = graph.nodes.size();
  const rml::passes::PassReport report = rml::passes::run_passes(graph, passes);
  rml::write_graph(graph, *output);
  std::cout << input << ": " << nodes_before << " nodes -> " << graph.nodes.size() << " nodes in " << report.rounds
            << (report.rounds == 1 ? " round" : " rounds") << "\n";
  for (const auto& [pass, edits] : report.edits) std::cout << "  " << pass << ": " << edits << " edits\n";
  if (args.option("--print-counts")) {
    const auto after = op_histogram(graph);
    std::set<std::string> ops;
    for (const auto& [op, _] : before) ops.insert(op);
    for (const auto& [op, _] : after) ops.insert(op);
    std::cout << "op counts (before -> after):\n";
    for (const std::string& op : ops) {
      const int b = before.count(op) ? before.at(op) : 0, a = after.count(op) ? after.at(op) : 0;
      std::cout << "  " << op << ": " << b << " -> " << a << "\n";
    }
  }
  std::cout << "wrote " << *output << "\n";
  return 0;
}

int validate_command(int argc, char** argv) {
  const Arguments args(argc, argv, {"--limits"}, {});
  const rml::Graph graph = rml::read_graph(args.only_positional("MODEL.json"), limits_of(args));
  std::cout << "ok: " << graph.nodes.size() << " nodes, " << graph.values.size() << " values\n";
  return 0;
}

int errors_command(int argc, char** argv) {
  const Arguments args(argc, argv, {}, {"--markdown"});
  if (!args.positional.empty()) throw UsageError{"errors takes no arguments"};
  if (args.option("--markdown")) {
    std::cout << rml::error_table_markdown();
    return 0;
  }
  for (const rml::ErrorCodeInfo& info : rml::error_codes)
    std::printf("%3d %-23s %s\n", static_cast<int>(info.code), std::string(info.name).c_str(),
                std::string(info.meaning).c_str());
  return 0;
}

int ops_command(int argc, char** argv) {
  const Arguments args(argc, argv, {}, {"--markdown", "--support"});
  if (!args.positional.empty()) throw UsageError{"ops takes no arguments"};
  if (args.option("--support")) {
    std::cout << rml::emit::support_report();
    return 0;
  }
  if (args.option("--markdown")) {
    std::cout << rml::op_table_markdown();
    return 0;
  }
  rml::Registry::for_each([](auto tag) {
    using Op = typename decltype(tag)::type;
    std::printf("%-13s %-6s %s\n", std::string(Op::name).c_str(),
                rml::arity_summary(Op::arity).c_str(), std::string(Op::summary).c_str());
  });
  return 0;
}

/// Converts MODEL to `format` and writes OUT and its sidecar as a pair.
int write_converted(const std::string& model_path, const std::string& format, const std::string& out,
                    std::size_t external_threshold, const rml::LoadOptions& limits) {
  refuse_overwriting(model_files(model_path), {out, out + ".data"});
  const rml::Graph graph = rml::read_graph(model_path, limits);
  rml::emit::ConvertOptions options;
  options.external_threshold = external_threshold;
  const rml::emit::ConvertedModel model = rml::emit::write_converted(format, graph, out, options);
  if (!model.package.empty()) {
    std::size_t bytes = 0;
    for (const rml::FolderFile& file : model.package) bytes += file.data.size();
    std::cout << "wrote " << out << "/ (" << format << " package, " << model.package.size() << " files, " << bytes << " bytes, "
              << model.nodes << " ops)\n";
    return 0;
  }
  std::cout << "wrote " << out << " (" << format << ", " << model.data.size() << " bytes, " << model.nodes << " nodes)";
  if (model.weights) std::cout << " and " << model.weights->file_name << " (" << model.weights->data.size() << " bytes)";
  std::cout << "\n";
  return 0;
}

int convert_command(int argc, char** argv) {
  const Arguments args(argc, argv, {"--to", "--output", "--external-threshold", "--limits"}, {"--check", "--list"});
  if (args.option("--list")) {
    if (!args.positional.empty()) throw UsageError{"convert --list takes no model"};
    rml::emit::Converters::for_each([](auto type) {
      using Backend = typename decltype(type)::type;
      std::cout << Backend::name << "  " << Backend::summary << "\n";
    });
    return 0;
  }
  const std::string& model = args.only_positional("MODEL.json");
  const auto format = args.option("--to");
  if (!format) throw UsageError{"convert needs --to FORMAT (see rml convert --list)"};
  if (!rml::emit::Converters::has(*format)) throw UsageError{"unknown format '" + *format + "' (see rml convert --list)"};
  if (args.option("--check")) {
    if (args.option("--output")) throw UsageError{"convert --check writes nothing: drop -o"};
    const auto unsupported = rml::emit::Converters::preflight(*format, rml::read_graph(model, limits_of(args)));
    for (const auto& u : unsupported) std::cout << rml::emit::describe(u) << "\n";
    std::cout << model << ": " << (unsupported.empty() ? "every node converts to " : std::to_string(unsupported.size()) + " node(s) cannot be converted to ")
              << *format << "\n";
    return unsupported.empty() ? 0 : exit_error;
  }
  const auto out = args.option("--output");
  if (!out) throw UsageError{"convert needs -o OUT (or --check)"};
  const std::size_t threshold = static_cast<std::size_t>(positive_option(args, "--external-threshold", 1024));
  return write_converted(model, *format, *out, threshold, limits_of(args));
}

int dot_command(int argc, char** argv) {
  const Arguments args(argc, argv, {"--output", "--limits"}, {});
  const auto out = args.option("--output");
  if (!out) throw UsageError{"dot needs -o OUT.dot"};
  return write_converted(args.only_positional("MODEL.json"), "dot", *out, 1024, limits_of(args));
}

int tensors_command(int argc, char** argv) {
  const Arguments args(argc, argv, {}, {"--json"});
  const auto contents = rml::read_safetensors(args.only_positional("FILE.safetensors"));
  if (args.option("--json")) {
    // Exact values: floats as their bit patterns' shortest decimal, via JSON.
    rml::Json out = rml::Json::object();
    for (const auto& [name, t] : contents.tensors) {
      rml::Json entry{{"dtype", rml::dtype_name(t.dtype())}, {"shape", t.shape()}};
      rml::Json values = rml::Json::array();
      rml::visit_dtype(t.dtype(), [&](auto zero) {
        for (auto v : t.values<decltype(zero)>()) {
          if constexpr (std::is_same_v<decltype(zero), float>) {
            if (v != v) values.push_back("nan");
            else if (v == std::numeric_limits<float>::infinity()) values.push_back("inf");
            else if (v == -std::numeric_limits<float>::infinity()) values.push_back("-inf");
            else values.push_back(double(v));
          } else {
            values.push_back(v);
          }
        }
      });
      entry["values"] = values;
      out[name] = entry;
    }
    std::cout << out.dump() << "\n";
    return 0;
  }
  for (const auto& [name, t] : contents.tensors) print_summary(name, t);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  try {
    for (int i = 1; i < argc; ++i)
      if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
        std::cout << usage_text;
        return 0;
      }
    if (command == "run") return run_command(argc, argv);
    if (command == "info") return info_command(argc, argv);
    if (command == "opt") return opt_command(argc, argv);
    if (command == "validate") return validate_command(argc, argv);
    if (command == "ops") return ops_command(argc, argv);
    if (command == "errors") return errors_command(argc, argv);
    if (command == "tensors") return tensors_command(argc, argv);
    if (command == "convert") return convert_command(argc, argv);
    if (command == "dot") return dot_command(argc, argv);
    if (command == "help") {
      std::cout << usage_text;
      return 0;
    }
    throw UsageError{command.empty() ? "no command given" : "unknown command '" + command + "'"};
  } catch (const UsageError& e) {
    std::cerr << "rml: " << e.message << "\n\n" << usage_text;
    return exit_usage;
  } catch (const rml::Error& e) {
    std::cerr << "rml: error [" << rml::error_code_name(e.code()) << "]: " << e.what() << "\n";
    return exit_error;
  } catch (const std::bad_alloc&) {
    std::cerr << "rml: error: out of memory\n";
    return exit_error;
  } catch (const std::exception& e) {
    std::cerr << "rml: error: " << e.what() << "\n";
    return exit_error;
  }
}
