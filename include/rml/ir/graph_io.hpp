// Reading and writing rml-graph files: the JSON graph (one value or node per
// line) and its safetensors weights file. The format is in docs/format.md.
#pragma once

#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>

#include "rml/core/file.hpp"
#include "rml/ir/graph.hpp"
#include "rml/ir/json_strict.hpp"
#include "rml/ir/op_json.hpp"
#include "rml/ir/safetensors.hpp"

namespace rml {

inline constexpr std::string_view graph_format_name = "rml-graph";
inline constexpr std::int64_t graph_format_version = 1;
/// Unnamed constants up to this many finite elements are written inline.
inline constexpr std::int64_t max_inline_elements = 16;

namespace detail {

using OrderedJson = nlohmann::ordered_json;

/// A weights file named by a graph must be a plain name in the graph's folder.
inline void check_plain_file_name(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\\') != std::string::npos || name.find('\0') != std::string::npos)
    fail(ErrorCode::unsafe_weights_path, "weights file '", name, "' must be a plain file name in the graph's folder (no '/', '..' or absolute path)");
}

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

inline Tensor inline_data_from_json(const Json& data, const TensorType& type, ValueId id) {
  if (!data.is_array()) fail(ErrorCode::graph_schema, "value ", id, ": 'data' must be an array");
  if (static_cast<std::int64_t>(data.size()) != element_count(type.shape))
    fail(ErrorCode::graph_schema, "value ", id, ": 'data' has ", data.size(), " numbers, shape ", to_string(type.shape),
         " needs ", element_count(type.shape));
  Tensor t(type);
  for (std::size_t i = 0; i < data.size(); ++i) {
    const Json& x = data[i];
    if (type.dtype == DType::f32) {
      if (!x.is_number()) fail(ErrorCode::graph_schema, "value ", id, ": data[", i, "] is not a number");
      t.values<float>()[i] = static_cast<float>(x.get<double>());
    } else {
      if (!x.is_number_integer()) fail(ErrorCode::graph_schema, "value ", id, ": data[", i, "] is not an integer");
      if (x.is_number_unsigned() && x.get<std::uint64_t>() > std::uint64_t(INT32_MAX))
        fail(ErrorCode::dtype_mismatch, "value ", id, ": data[", i, "] is outside the i32 range");
      t.values<std::int32_t>()[i] = canonical_i32(x.get<std::int64_t>(), detail::concat("value ", id));
    }
  }
  return t;
}

inline const Json& member(const Json& object, const char* key, std::string_view where) {
  const auto it = object.find(key);
  if (it == object.end()) fail(ErrorCode::graph_schema, where, ": missing '", key, "'");
  return *it;
}

inline std::int64_t integer(const Json& j, std::string_view what) {
  if (!j.is_number_integer()) fail(ErrorCode::graph_schema, what, " must be an integer, got ", j.dump());
  if (j.is_number_unsigned() && j.get<std::uint64_t>() > std::uint64_t(INT64_MAX))
    fail(ErrorCode::size_overflow, what, " is too large");
  return j.get<std::int64_t>();
}

inline ValueId value_id(const Json& j, std::size_t value_count, std::string_view what) {
  const std::int64_t id = integer(j, what);
  if (id < 0 || id >= static_cast<std::int64_t>(value_count))
    fail(ErrorCode::undefined_value, what, " refers to value ", id, ", which does not exist (the graph has ", value_count,
         " values)");
  return static_cast<ValueId>(id);
}

inline std::string string_member(const Json& object, const char* key, std::string_view where) {
  const Json& j = member(object, key, where);
  if (!j.is_string()) fail(ErrorCode::graph_schema, where, ": '", key, "' must be a string");
  return j.get<std::string>();
}

inline std::vector<NamedValue> named_values(const Json& list, const char* what,
                                            std::size_t value_count) {
  if (!list.is_array()) fail(ErrorCode::graph_schema, "'", what, "' must be an array");
  std::vector<NamedValue> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = concat(what, "[", i, "]");
    if (!list[i].is_object()) fail(ErrorCode::graph_schema, where, " must be an object");
    out.push_back({string_member(list[i], "name", where),
                   value_id(member(list[i], "value", where), value_count, where)});
  }
  return out;
}

inline ValidGraph graph_from_json(const Json& doc, const std::filesystem::path& folder, const LoadOptions& limits) {
  if (!doc.is_object()) fail(ErrorCode::graph_schema, "the graph must be a JSON object");
  const auto format = doc.find("format");
  if (format == doc.end() || !format->is_string() || format->get<std::string>() != graph_format_name)
    fail(ErrorCode::format_version, "not an rml-graph file (\"format\" must be \"", graph_format_name, "\")");
  const std::int64_t version = integer(member(doc, "version", "graph"), "\"version\"");
  if (version != graph_format_version)
    fail(ErrorCode::format_version, "unsupported format version ", version, " (this rml reads version ",
         graph_format_version, ")");

  std::map<std::string, Tensor> weights;
  if (const auto it = doc.find("weights"); it != doc.end()) {
    if (!it->is_string()) fail(ErrorCode::graph_schema, "'weights' must be a string");
    const std::string file = it->get<std::string>();
    check_plain_file_name(file);
    // The graph names a file in its own folder; a link would let it name any file.
    std::error_code ec;
    if (std::filesystem::is_symlink(std::filesystem::symlink_status(folder / file, ec)))
      fail(ErrorCode::unsafe_weights_path, "weights file '", file, "' is a symbolic link: rml reads weights only from regular files");
    for (auto& [name, tensor] : read_safetensors(folder / file, limits).tensors)
      weights.emplace(name, std::move(tensor));
  }

  Graph graph;
  const Json& values = member(doc, "values", "graph");
  if (!values.is_array()) fail(ErrorCode::graph_schema, "'values' must be an array");
  check_limit(values.size(), limits.max_values, "values", "LoadOptions::max_values");
  const auto inputs = named_values(member(doc, "inputs", "graph"), "inputs", values.size());
  std::vector<bool> is_input(values.size(), false);
  for (const NamedValue& in : inputs) is_input[in.value] = true;

  for (std::size_t v = 0; v < values.size(); ++v) {
    const Json& entry = values[v];
    const std::string where = concat("value ", v);
    if (!entry.is_object()) fail(ErrorCode::graph_schema, where, " must be an object");
    if (integer(member(entry, "id", where), where + " id") != static_cast<std::int64_t>(v))
      fail(ErrorCode::graph_schema, where, ": 'id' must equal its position ", v, " (values are numbered densely)");
    Value value;
    value.type.dtype = parse_dtype(string_member(entry, "dtype", where));
    const Json& shape = member(entry, "shape", where);
    if (!shape.is_array()) fail(ErrorCode::graph_schema, where, ": 'shape' must be an array");
    check_limit(shape.size(), limits.max_rank, where + " rank", "LoadOptions::max_rank");
    for (const Json& d : shape) value.type.shape.push_back(integer(d, where + " dimension"));
    check_limit(static_cast<std::uint64_t>(element_count(value.type.shape, where)), limits.max_tensor_elements,
                where + " elements", "LoadOptions::max_tensor_elements");
    const bool has_weight = entry.contains("weight"), has_data = entry.contains("data");
    if (has_weight && has_data) fail(ErrorCode::graph_schema, where, ": has both 'weight' and 'data'");
    if (has_weight) {
      const std::string key = string_member(entry, "weight", where);
      const auto it = weights.find(key);
      if (it == weights.end()) fail(ErrorCode::weights_mismatch, where, ": weight '", key, "' is not in the weights file");
      if (it->second.type() != value.type)
        fail(ErrorCode::weights_mismatch, where, ": weight '", key, "' is ", to_string(it->second.type()),
             " in the weights file but the graph declares ", to_string(value.type));
      value.data = std::move(it->second);
      weights.erase(it);
      value.kind = ValueKind::constant;
      value.name = entry.contains("name") ? string_member(entry, "name", where) : "";
    } else if (has_data) {
      value.data = inline_data_from_json(entry["data"], value.type, static_cast<ValueId>(v));
      value.kind = ValueKind::constant;
    } else {
      value.kind = is_input[v] ? ValueKind::input : ValueKind::node_output;
    }
    if (value.kind == ValueKind::constant && is_input[v])
      fail(ErrorCode::graph_schema, where, " is both a constant and input");
    graph.values.push_back(std::move(value));
  }
  if (!weights.empty())
    fail(ErrorCode::weights_mismatch, "the weights file holds tensor '", weights.begin()->first, "', which no value uses");

  const Json& nodes = member(doc, "nodes", "graph");
  if (!nodes.is_array()) fail(ErrorCode::graph_schema, "'nodes' must be an array");
  check_limit(nodes.size(), limits.max_nodes, "nodes", "LoadOptions::max_nodes");
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const Json& entry = nodes[n];
    std::string where = concat("node ", n);
    if (!entry.is_object()) fail(ErrorCode::graph_schema, where, " must be an object");
    const std::string op = string_member(entry, "op", where);
    where += " (" + op + ")";
    Node node{op_from_json(op, entry.contains("attrs") ? entry["attrs"] : Json::object()), {}, {}};
    for (const char* key : {"inputs", "outputs"}) {
      const Json& ids = member(entry, key, where);
      if (!ids.is_array()) fail(ErrorCode::graph_schema, where, ": '", key, "' must be an array");
      auto& target = std::string_view(key) == "inputs" ? node.inputs : node.outputs;
      for (std::size_t i = 0; i < ids.size(); ++i)
        target.push_back(value_id(ids[i], values.size(), concat(where, ": ", key, "[", i, "]")));
    }
    graph.nodes.push_back(std::move(node));
  }
  graph.inputs = inputs;
  graph.outputs = named_values(member(doc, "outputs", "graph"), "outputs", values.size());
  std::vector<std::size_t> order = validate(graph);
  return {std::move(graph), std::move(order)};
}

}  // namespace detail

/// Parses and validates graph JSON text; a weights file it names is read
/// from `folder`. Checks the limits except the file size, which the caller has.
inline ValidGraph parse_valid_graph(std::string_view json_text, const std::filesystem::path& folder,
                                    const LoadOptions& limits = {}) {
  // Graphs nest values' shapes and attributes a few levels deep; the default 32 is ample.
  const int depth = static_cast<int>(std::min<std::uint64_t>(limits.max_json_depth, 1 << 20));
  const Json doc = parse_json_strict(json_text, "malformed JSON: the graph", depth);
  return detail::graph_from_json(doc, folder, limits);
}

/// Loads and validates a graph and its weights, keeping the execution order
/// validation found, within `limits`. Every error names the file.
inline ValidGraph read_valid_graph(const std::filesystem::path& path, const LoadOptions& limits = {}) {
  try {
    return parse_valid_graph(read_file(path, limits.max_graph_bytes, "LoadOptions::max_graph_bytes"),
                             path.parent_path(), limits);
  } catch (...) {
    rethrow_with_context(path.string());
  }
}

/// Loads and validates a graph and its weights within `limits`. Every error names the file.
inline Graph read_graph(const std::filesystem::path& path, const LoadOptions& limits = {}) {
  return read_valid_graph(path, limits).graph;
}

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
