// Writing rml-graph files: the JSON graph (one value or node per line) and its
// safetensors weights file, replaced together; and reading them
// (ir/graph_read.hpp). The format is in docs/format.md.
#pragma once

#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>

#include "rml/core/file.hpp"
#include "rml/ir/graph.hpp"
#include "rml/ir/graph_read.hpp"
#include "rml/ir/op_json.hpp"
#include "rml/ir/safetensors.hpp"

namespace rml {

namespace detail {

using OrderedJson = nlohmann::ordered_json;

/// The shortest decimal that reads back as exactly `value` through a double.
inline OrderedJson float_json(float value) {
  char text[32];
  const auto result = std::to_chars(text, text + sizeof text, value);
  const double shortest = std::strtod(std::string(text, result.ptr).c_str(), nullptr);
  return static_cast<float>(shortest) == value ? shortest : static_cast<double>(value);
}

inline OrderedJson inline_data_json(const Tensor& t) {
  OrderedJson data = OrderedJson::array();
  if (t.dtype() == DType::f32)
    for (float v : t.values<float>()) data.push_back(float_json(v));
  else
    for (std::int32_t v : t.values<std::int32_t>()) data.push_back(v);
  return data;
}

inline bool should_inline(const Value& value) {
  if (!value.name.empty() || value.data->elements() > max_inline_elements) return false;
  if (value.data->dtype() == DType::f32)
    for (float v : value.data->values<float>())
      if (!std::isfinite(v)) return false;  // JSON has no inf or NaN
  return true;
}

}  // namespace detail

/// Values renumbered densely: inputs first, then constants in order of first
/// use, then node outputs in execution order. Returns old id -> new id.
inline Graph renumbered(const Graph& graph) {
  const std::vector<std::size_t> order = validate(graph);
  constexpr ValueId unassigned = ~ValueId{0};
  std::vector<ValueId> new_id(graph.values.size(), unassigned);
  Graph out;
  auto assign = [&](ValueId old) {
    if (new_id[old] != unassigned) return;
    new_id[old] = static_cast<ValueId>(out.values.size());
    out.values.push_back(graph.values[old]);
  };
  for (const NamedValue& in : graph.inputs) assign(in.value);
  for (std::size_t n : order)
    for (ValueId id : graph.nodes[n].inputs)
      if (graph.values[id].kind == ValueKind::constant) assign(id);
  for (std::size_t n : order) {
    Node node = graph.nodes[n];
    for (ValueId& id : node.inputs) id = new_id[id];  // inputs precede in execution order
    for (ValueId& id : node.outputs) {
      assign(id);
      id = new_id[id];
    }
    out.nodes.push_back(std::move(node));
  }
  for (NamedValue in : graph.inputs) out.inputs.push_back({in.name, new_id[in.value]});
  for (NamedValue o : graph.outputs) out.outputs.push_back({o.name, new_id[o.value]});
  return out;
}

namespace detail {

/// The weights file the graph now at `path` references, if it is a graph;
/// write_graph removes it once the new pair is in place.
inline std::vector<std::string> referenced_weights(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec))) return {};
  std::string text;
  try {
    text = read_file(path, 1ull << 31);
  } catch (const Error&) {
    return {};
  }
  const Json doc = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("weights") || !doc["weights"].is_string()) return {};
  return {doc["weights"].get<std::string>()};
}

}  // namespace detail

/// Writes `graph` as `path` (JSON) and a safetensors file beside it named
/// after it (`m.json` -> `m.safetensors`, or `m.<hash>.safetensors` while the
/// graph being replaced still uses that name): the pair is replaced together
/// (write_pair), so a failure leaves the previous graph loadable. Values are
/// renumbered densely; constants nothing reads are not written.
inline void write_graph(const Graph& graph, const std::filesystem::path& path) {
  try {
    const Graph g = renumbered(graph);
    std::filesystem::path preferred_weights = path.filename();
    preferred_weights.replace_extension(".safetensors");
    if (preferred_weights == path.filename()) fail(ErrorCode::invalid_argument, "the graph file must not end in .safetensors");

    NamedTensors stored;
    std::vector<std::string> weight_key(g.values.size());
    std::unordered_set<std::string> keys;
    for (const Value& v : g.values)
      if (v.kind == ValueKind::constant && !v.name.empty() && !keys.insert(v.name).second)
        fail(ErrorCode::duplicate_definition, "two constants are named '", v.name, "'");
    for (std::size_t id = 0; id < g.values.size(); ++id) {
      const Value& v = g.values[id];
      if (v.kind != ValueKind::constant || detail::should_inline(v)) continue;
      std::string key = v.name;
      for (int suffix = 0; key.empty() || (v.name.empty() && keys.count(key)); ++suffix)
        key = detail::concat("const.", id, suffix ? detail::concat(".", suffix) : "");
      keys.insert(key);
      weight_key[id] = key;
      stored.emplace_back(key, *v.data);
    }

    const std::string weights_bytes = serialize_safetensors(stored);
    const std::string weights_name =
        choose_sidecar_name(file_detail::folder_of(path), preferred_weights.string(), weights_bytes);

    std::string text = "{\"format\": \"rml-graph\", \"version\": " +
                       std::to_string(graph_format_version) + ",\n\"weights\": " +
                       Json(weights_name).dump() + ",\n";
    auto named_list = [](const std::vector<NamedValue>& list) {
      detail::OrderedJson out = detail::OrderedJson::array();
      for (const NamedValue& nv : list) out.push_back({{"name", nv.name}, {"value", nv.value}});
      return out.dump();
    };
    text += "\"inputs\": " + named_list(g.inputs) + ",\n";
    text += "\"outputs\": " + named_list(g.outputs) + ",\n";
    text += "\"values\": [\n";
    for (std::size_t id = 0; id < g.values.size(); ++id) {
      const Value& v = g.values[id];
      detail::OrderedJson line{{"id", id}, {"dtype", dtype_name(v.type.dtype)}, {"shape", v.type.shape}};
      if (v.kind == ValueKind::constant) {
        if (!v.name.empty()) line["name"] = v.name;
        if (weight_key[id].empty()) line["data"] = detail::inline_data_json(*v.data);
        else line["weight"] = weight_key[id];
      }
      text += line.dump() + (id + 1 < g.values.size() ? ",\n" : "\n");
    }
    text += "],\n\"nodes\": [\n";
    for (std::size_t n = 0; n < g.nodes.size(); ++n) {
      const Node& node = g.nodes[n];
      detail::OrderedJson line{{"op", op_name(node.op)},
                               {"inputs", node.inputs},
                               {"outputs", node.outputs},
                               {"attrs", detail::OrderedJson::parse(op_attributes_json(node.op).dump())}};
      text += line.dump() + (n + 1 < g.nodes.size() ? ",\n" : "\n");
    }
    text += "]}\n";

    write_pair({.primary = path,
                .primary_bytes = text,
                .sidecar_name = weights_name,
                .sidecar_bytes = weights_bytes,
                .preferred_sidecar_name = preferred_weights.string(),
                .stale_sidecars = detail::referenced_weights(path)});
  } catch (...) {
    rethrow_with_context(path.string());
  }
}

}  // namespace rml
