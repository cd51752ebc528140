// Reading rml-graph files: the JSON graph and the safetensors weights file it
// names, checked against the schema and validated. Writing is in
// ir/graph_io.hpp. The format is in docs/format.md.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rml/core/file.hpp"
#include "rml/ir/graph.hpp"
#include "rml/ir/json_strict.hpp"
#include "rml/ir/op_from_json.hpp"
#include "rml/ir/safetensors.hpp"

namespace rml {

inline constexpr std::string_view graph_format_name = "rml-graph";
inline constexpr std::int64_t graph_format_version = 1;
/// Unnamed constants up to this many finite elements are written inline.
inline constexpr std::int64_t max_inline_elements = 16;

namespace detail {

/// A weights file named by a graph must be a plain name in the graph's folder.
inline void check_plain_file_name(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\\') != std::string::npos || name.find('\0') != std::string::npos)
    fail(ErrorCode::unsafe_weights_path, "weights file '", name, "' must be a plain file name in the graph's folder (no '/', '..' or absolute path)");
}

inline Tensor inline_data_from_json(const json::Value& data, const TensorType& type, ValueId id) {
  if (!data.is_array()) fail(ErrorCode::graph_schema, "value ", id, ": 'data' must be an array");
  if (static_cast<std::int64_t>(data.size()) != element_count(type.shape))
    fail(ErrorCode::graph_schema, "value ", id, ": 'data' has ", data.size(), " numbers, shape ", to_string(type.shape),
         " needs ", element_count(type.shape));
  Tensor t(type);
  for (std::size_t i = 0; i < data.size(); ++i) {
    const json::Value& x = data[i];
    if (type.dtype == DType::f32) {
      if (!x.is_number()) fail(ErrorCode::graph_schema, "value ", id, ": data[", i, "] is not a number");
      t.values<float>()[i] = static_cast<float>(x.as_double());
    } else {
      if (!x.is_number_integer()) fail(ErrorCode::graph_schema, "value ", id, ": data[", i, "] is not an integer");
      if (x.is_number_unsigned() && x.as_uint64() > std::uint64_t(INT32_MAX))
        fail(ErrorCode::dtype_mismatch, "value ", id, ": data[", i, "] is outside the i32 range");
      t.values<std::int32_t>()[i] = canonical_i32(x.as_int64(), detail::concat("value ", id));
    }
  }
  return t;
}

inline const json::Value& member(const json::Value& object, const char* key, std::string_view where) {
  const json::Value* found = object.find(key);
  if (!found) fail(ErrorCode::graph_schema, where, ": missing '", key, "'");
  return *found;
}

inline std::int64_t integer(const json::Value& j, std::string_view what) {
  if (!j.is_number_integer()) fail(ErrorCode::graph_schema, what, " must be an integer, got ", j.dump());
  if (j.is_number_unsigned() && j.as_uint64() > std::uint64_t(INT64_MAX))
    fail(ErrorCode::size_overflow, what, " is too large");
  return j.as_int64();
}

inline ValueId value_id(const json::Value& j, std::size_t value_count, std::string_view what) {
  const std::int64_t id = integer(j, what);
  if (id < 0 || id >= static_cast<std::int64_t>(value_count))
    fail(ErrorCode::undefined_value, what, " refers to value ", id, ", which does not exist (the graph has ", value_count,
         " values)");
  return static_cast<ValueId>(id);
}

inline std::string string_member(const json::Value& object, const char* key, std::string_view where) {
  const json::Value& j = member(object, key, where);
  if (!j.is_string()) fail(ErrorCode::graph_schema, where, ": '", key, "' must be a string");
  return j.as_string();
}

inline std::vector<NamedValue> named_values(const json::Value& list, const char* what,
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

inline ValidGraph graph_from_json(const json::Value& doc, const std::filesystem::path& folder, const LoadOptions& limits) {
  if (!doc.is_object()) fail(ErrorCode::graph_schema, "the graph must be a JSON object");
  const json::Value* format = doc.find("format");
  if (!format || !format->is_string() || format->as_string() != graph_format_name)
    fail(ErrorCode::format_version, "not an rml-graph file (\"format\" must be \"", graph_format_name, "\")");
  const std::int64_t version = integer(member(doc, "version", "graph"), "\"version\"");
  if (version != graph_format_version)
    fail(ErrorCode::format_version, "unsupported format version ", version, " (this rml reads version ",
         graph_format_version, ")");

  std::map<std::string, Tensor> weights;
  if (const json::Value* named = doc.find("weights")) {
    if (!named->is_string()) fail(ErrorCode::graph_schema, "'weights' must be a string");
    const std::string file = named->as_string();
    check_plain_file_name(file);
    // The graph names a file in its own folder; a link would let it name any file.
    std::error_code ec;
    if (std::filesystem::is_symlink(std::filesystem::symlink_status(folder / file, ec)))
      fail(ErrorCode::unsafe_weights_path, "weights file '", file, "' is a symbolic link: rml reads weights only from regular files");
    for (auto& [name, tensor] : read_safetensors(folder / file, limits).tensors)
      weights.emplace(name, std::move(tensor));
  }

  Graph graph;
  const json::Value& values = member(doc, "values", "graph");
  if (!values.is_array()) fail(ErrorCode::graph_schema, "'values' must be an array");
  check_limit(values.size(), limits.max_values, "values", "LoadOptions::max_values");
  const auto inputs = named_values(member(doc, "inputs", "graph"), "inputs", values.size());
  std::vector<bool> is_input(values.size(), false);
  for (const NamedValue& in : inputs) is_input[in.value] = true;

  for (std::size_t v = 0; v < values.size(); ++v) {
    const json::Value& entry = values[v];
    const std::string where = concat("value ", v);
    if (!entry.is_object()) fail(ErrorCode::graph_schema, where, " must be an object");
    if (integer(member(entry, "id", where), where + " id") != static_cast<std::int64_t>(v))
      fail(ErrorCode::graph_schema, where, ": 'id' must equal its position ", v, " (values are numbered densely)");
    Value value;
    value.type.dtype = parse_dtype(string_member(entry, "dtype", where));
    const json::Value& shape = member(entry, "shape", where);
    if (!shape.is_array()) fail(ErrorCode::graph_schema, where, ": 'shape' must be an array");
    check_limit(shape.size(), limits.max_rank, where + " rank", "LoadOptions::max_rank");
    for (const json::Value& d : shape) value.type.shape.push_back(integer(d, where + " dimension"));
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
      value.data = inline_data_from_json(*entry.find("data"), value.type, static_cast<ValueId>(v));
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

  const json::Value& nodes = member(doc, "nodes", "graph");
  if (!nodes.is_array()) fail(ErrorCode::graph_schema, "'nodes' must be an array");
  check_limit(nodes.size(), limits.max_nodes, "nodes", "LoadOptions::max_nodes");
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const json::Value& entry = nodes[n];
    std::string where = concat("node ", n);
    if (!entry.is_object()) fail(ErrorCode::graph_schema, where, " must be an object");
    const std::string op = string_member(entry, "op", where);
    where += " (" + op + ")";
    static const json::Value no_attributes;
    const json::Value* attrs = entry.find("attrs");
    Node node{op_from_json(op, attrs ? *attrs : no_attributes), {}, {}};
    for (const char* key : {"inputs", "outputs"}) {
      const json::Value& ids = member(entry, key, where);
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
  const int depth = static_cast<int>(std::min<std::uint64_t>(limits.max_json_depth, json::max_depth));
  const json::Value doc = parse_json_strict(json_text, "malformed JSON: the graph", depth);
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

}  // namespace rml
