// The converters compiled in, as one list, and what the CLI and library call:
// find a converter by format name, preflight a graph, convert it (writing a
// debug dump when RML_DUMP_DIR is set), and the operator support report
// computed from the op list at compile time.
#pragma once

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "rml/core/file.hpp"
#include "rml/emit/coreml/coreml.hpp"
#include "rml/emit/dot.hpp"
#include "rml/emit/onnx/onnx.hpp"
#include "rml/emit/tflite/tflite.hpp"
#include "rml/emit/webnn/webnn.hpp"

namespace rml::emit {

/// Formats the support report lists although no converter for them is
/// compiled in, with the reason.
struct AbsentBackend {
  std::string_view name, reason;
};
inline constexpr AbsentBackend absent_backends[] = {
    {"tensorrt", "cannot run here: needs an NVIDIA GPU with TensorRT"},
    {"cann", "cannot run here: needs a Huawei Ascend NPU with CANN"},
};

namespace converters_detail {

/// RML_DUMP_DIR=dir: every conversion also writes its artifact there and
/// appends a line to dir/conversions.log (format, bytes, nodes, file).
inline void dump(std::string_view format, const ConvertedModel& model, const ConvertOptions& options) {
  const char* dir = std::getenv("RML_DUMP_DIR");
  if (!dir || !*dir) return;
  static std::atomic<int> sequence{0};
  const std::filesystem::path folder(dir);
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  const std::string stem = detail::concat(::getpid(), "-", sequence++, "-", options.model_file_name);
  if (!model.package.empty()) write_folder_atomically(folder / stem, model.package, model.package.front().path);
  else write_file_atomically(folder / stem, model.data);
  if (model.weights) write_file_atomically(folder / (stem + ".data"), model.weights->data);
  std::ofstream log(folder / "conversions.log", std::ios::app);
  log << format << " " << model.data.size() << " bytes" << (model.weights ? detail::concat(" + ", model.weights->data.size(), " bytes of weights") : "")
      << ", " << model.nodes << " nodes, " << (folder / stem).string() << "\n";
}

}  // namespace converters_detail

/// `graph` converted by `Backend` (Onnx, Tflite, WebNN, Coreml, Dot); a node
/// the converter cannot take is an error naming every such node.
template <class Backend>
ConvertedModel convert(const Graph& graph, const ConvertOptions& options = {}) {
  const std::vector<Unsupported> unsupported = preflight<Backend>(graph);
  if (!unsupported.empty()) {
    std::string message = detail::concat(Backend::name, ": ", unsupported.size(), " node(s) cannot be converted:");
    for (const Unsupported& u : unsupported) message += "\n  " + describe(u);
    fail(ErrorCode::unsupported, message);
  }
  ConvertedModel model = Backend::convert(graph, options);
  converters_detail::dump(Backend::name, model, options);
  return model;
}

template <class... Backends>
struct ConverterList {
  static constexpr std::array<std::string_view, sizeof...(Backends)> names{Backends::name...};

  template <class Fn>
  static void for_each(Fn&& fn) {
    (fn(std::type_identity<Backends>{}), ...);
  }
  static bool has(std::string_view format) { return std::find(names.begin(), names.end(), format) != names.end(); }

  /// Every node the format's converter cannot take.
  static std::vector<Unsupported> preflight(std::string_view format, const Graph& graph) {
    std::vector<Unsupported> found;
    with(format, [&]<class B>(std::type_identity<B>) { found = emit::preflight<B>(graph); });
    return found;
  }

  /// The converted model (emit::convert, for the converter named `format`).
  /// Names chosen at run time compile every converter in the list; a program
  /// that needs one format calls emit::convert<Backend> and compiles only that one.
  static ConvertedModel convert(std::string_view format, const Graph& graph, const ConvertOptions& options = {}) {
    ConvertedModel model;
    with(format, [&]<class B>(std::type_identity<B>) { model = emit::convert<B>(graph, options); });
    return model;
  }

 private:
  template <class Fn>
  static void with(std::string_view format, Fn&& fn) {
    bool found = false;
    for_each([&](auto type) {
      if (!found && decltype(type)::type::name == format) {
        found = true;
        fn(type);
      }
    });
    if (!found) {
      std::string known;
      for (std::string_view name : names) known += (known.empty() ? "" : ", ") + std::string(name);
      fail(ErrorCode::invalid_argument, "unknown format '", format, "' (converters: ", known, ")");
    }
  }
};

using Converters = ConverterList<Onnx, Tflite, WebNN, Coreml, Dot>;

/// Converts `graph` to `format` and writes it as `out`, replacing the model
/// and its sidecar as a pair (write_pair), or a folder format's whole folder
/// (write_folder_atomically): a failure leaves the previous model, or none,
/// and no temporary. Returns what was written.
inline ConvertedModel write_converted(std::string_view format, const Graph& graph, const std::filesystem::path& out,
                                      ConvertOptions options = {}) {
  options.model_file_name = out.filename().string();
  options.sidecar_file_name.clear();
  ConvertedModel model = Converters::convert(format, graph, options);
  if (!model.package.empty()) {
    write_folder_atomically(out, model.package, model.package.front().path);
    return model;
  }
  FilePair pair;
  pair.primary = out;
  if (model.weights) {
    const std::filesystem::path folder = file_detail::folder_of(out);
    pair.preferred_sidecar_name = model.weights->file_name;
    const std::string name = choose_sidecar_name(folder, pair.preferred_sidecar_name, model.weights->data);
    if (name != pair.preferred_sidecar_name) {  // the name is inside the model's bytes: convert again
      options.sidecar_file_name = name;
      model = Converters::convert(format, graph, options);
    }
    pair.sidecar_name = name;
    pair.sidecar_bytes = model.weights->data;
    pair.stale_sidecars = existing_sidecars(folder, pair.preferred_sidecar_name);
  }
  pair.primary_bytes = model.data;
  write_pair(pair);
  return model;
}

/// The op x backend support matrix as Markdown, from the registry.
inline std::string support_report() {
  std::ostringstream out;
  out << "| op |";
  Converters::for_each([&](auto type) { out << " " << decltype(type)::type::name << " |"; });
  out << "\n| --- |";
  Converters::for_each([&](auto) { out << " --- |"; });
  out << "\n";
  std::vector<std::string> rows(Registry::size);
  std::size_t i = 0;
  Registry::for_each([&](auto type) { rows[i++] = "| `" + std::string(decltype(type)::type::name) + "` |"; });
  Converters::for_each([&](auto type) {
    constexpr auto row = support_row<typename decltype(type)::type>();
    for (std::size_t op = 0; op < Registry::size; ++op) rows[op] += row[op] ? " yes |" : " no |";
  });
  for (const std::string& row : rows) out << row << "\n";
  out << "\nFormats without a converter in this build:\n\n";
  for (const AbsentBackend& b : absent_backends) out << "- `" << b.name << "`: " << b.reason << "\n";
  return out.str();
}

}  // namespace rml::emit
