// rml::Builder: builds a graph op by op, checking every op's dtypes and shapes,
// carrying an example value for every value, and folding ops on constants.
#pragma once

#include <filesystem>
#include <unordered_set>

#include "rml/ir/dead_code.hpp"
#include "rml/ir/graph_io.hpp"
#include "rml/passes/passes.hpp"
#include "rml/ref/evaluate.hpp"

namespace rml {

class Builder {
 public:
  /// A graph input; `example` is the value the framework traced with.
  ValueId input(const std::string& name, Tensor example) {
    check_name(name, "input");
    if (!input_names_.insert(name).second) throw ExportError(ErrorCode::duplicate_definition, "input name '" + name + "' is used twice");
    const TensorType type = example.type();  // read before `example` is moved from
    const ValueId id = add_value({type, ValueKind::input, std::nullopt, ""}, std::move(example));
    graph_.inputs.push_back({name, id});
    return id;
  }
  /// A graph input with a zero-filled example.
  ValueId input(const std::string& name, const TensorType& type) { return input(name, Tensor(type)); }

  /// A constant. Named constants (parameters, buffers) keep their name in the
  /// weights file; unnamed ones are folding results and literals.
  ValueId constant(Tensor value, const std::string& name = "") {
    check_name(name, "constant");
    if (!name.empty() && !constant_names_.insert(name).second)
      throw ExportError(ErrorCode::duplicate_definition, "constant name '" + name + "' is used twice");
    const TensorType type = value.type();
    return add_value({type, ValueKind::constant, std::move(value), name}, std::nullopt);
  }

  /// Applies a single-output op. Returns a constant instead of adding a node
  /// when every input is constant.
  template <class Op>
    requires OpTraits<Op>
  ValueId op(Op op, const std::vector<ValueId>& inputs) {
    return single(add(AnyOp(std::move(op)), inputs, std::nullopt));
  }
  /// The same, by the op's name and JSON attributes (what exporters call).
  ValueId op(std::string_view name, const std::vector<ValueId>& inputs, const Json& attrs = Json::object()) {
    return single(add(parse(name, attrs), inputs, std::nullopt));
  }

  /// An op with `count` outputs (top_k gives values and indices).
  template <class Op>
    requires OpTraits<Op>
  std::vector<ValueId> op_multi(Op op, const std::vector<ValueId>& inputs, std::size_t count) {
    return add(AnyOp(std::move(op)), inputs, count);
  }
  std::vector<ValueId> op_multi(std::string_view name, const std::vector<ValueId>& inputs,
                                std::size_t count, const Json& attrs = Json::object()) {
    return add(parse(name, attrs), inputs, count);
  }

  /// Names a graph output. Outputs must be computed, so an input or constant
  /// is routed through an identity reshape.
  void output(const std::string& name, ValueId id) {
    check_name(name, "output");
    check_id(id, "output '" + name + "'");
    for (const NamedValue& out : graph_.outputs)
      if (out.name == name) throw ExportError(ErrorCode::duplicate_definition, "output name '" + name + "' is used twice");
    if (graph_.values[id].kind != ValueKind::node_output) {
      const TensorType type = graph_.values[id].type;
      const ValueId copy = add_value({type, ValueKind::node_output, std::nullopt, ""}, example(id));
      graph_.nodes.push_back({Reshape{type.shape}, {id}, {copy}});
      id = copy;
    }
    graph_.outputs.push_back({name, id});
  }

  const TensorType& type(ValueId id) const { return graph_.values.at(id).type; }
  bool is_constant(ValueId id) const { return graph_.values.at(id).kind == ValueKind::constant; }
  /// The example value: the data of a constant, else what the reference
  /// kernels computed from the inputs' examples.
  const Tensor& example(ValueId id) const {
    check_id(id, "example");
    const Value& v = graph_.values[id];
    return v.kind == ValueKind::constant ? *v.data : *examples_[id];
  }

  const Graph& graph() const { return graph_; }

  /// The graph run on new inputs with the reference kernels.
  TensorMap evaluate(const TensorMap& inputs) const { return rml::evaluate(graph_, inputs); }

  /// Writes the graph as `path` and its weights beside it: the clean-up passes
  /// run first (unless `clean_up` is false), dead code is dropped and values
  /// are renumbered densely.
  void write(const std::filesystem::path& path, bool clean_up = true) const {
    Graph graph = without_dead_code(graph_);
    if (clean_up) passes::run_passes(graph);
    write_graph(graph, path);
  }

 private:
  ValueId add_value(Value value, std::optional<Tensor> example) {
    graph_.values.push_back(std::move(value));
    examples_.push_back(std::move(example));
    return static_cast<ValueId>(graph_.values.size() - 1);
  }

  void check_id(ValueId id, const std::string& where) const {
    if (id >= graph_.values.size())
      throw ExportError(ErrorCode::undefined_value, detail::concat(where, ": value ", id, " does not exist (the graph has ",
                                       graph_.values.size(), " values)"));
  }

  static AnyOp parse(std::string_view name, const Json& attrs) {
    try {
      return op_from_json(name, attrs);
    } catch (const ExportError&) {
      throw;
    } catch (const Error& e) {
      throw ExportError(e.code(), e.what());
    }
  }

  std::string describe_inputs(const std::vector<ValueId>& inputs) const {
    std::string text;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      text += detail::concat(i ? ", " : "", "value ", inputs[i], " ", to_string(type(inputs[i])));
    return text;
  }

  std::vector<ValueId> add(AnyOp op, const std::vector<ValueId>& inputs,
                           std::optional<std::size_t> expected_count) {
    const std::string context = detail::concat("op '", op_name(op), "'");
    for (std::size_t i = 0; i < inputs.size(); ++i) check_id(inputs[i], detail::concat(context, ": input ", i));
    std::vector<const Tensor*> args;
    bool all_constant = true;
    for (ValueId id : inputs) {
      args.push_back(&example(id));
      all_constant = all_constant && is_constant(id);
    }
    std::vector<Tensor> results;
    try {
      results = evaluate_op(op, args);
    } catch (const Error& e) {
      throw ExportError(e.code(), detail::concat(e.what(), " (inputs: ", describe_inputs(inputs), ")"));
    }
    const std::size_t count = expected_count.value_or(1);
    if (results.size() != count)
      throw ExportError(ErrorCode::wrong_arity, detail::concat(context, " gives ", results.size(), " outputs, ", count,
                                       expected_count ? " were asked for" : " expected (use op_multi)"));
    std::vector<ValueId> outputs;
    const std::string folded_name = all_constant ? derived_name(op, inputs) : "";
    for (Tensor& result : results) {
      const TensorType t = result.type();
      outputs.push_back(all_constant ? constant(std::move(result), folded_name)
                                     : add_value({t, ValueKind::node_output, std::nullopt, ""}, std::move(result)));
    }
    if (!all_constant) graph_.nodes.push_back({std::move(op), inputs, outputs});
    return outputs;
  }

  /// Names end up in JSON, protobuf and JavaScript: they must be UTF-8.
  static void check_name(const std::string& name, std::string_view role) {
    try {
      check_name_utf8(name, role);
    } catch (const Error& e) {
      throw ExportError(e.code(), e.what());
    }
  }

  static ValueId single(const std::vector<ValueId>& ids) { return ids.front(); }

  /// A layout op folded on a named parameter keeps it recognisable in the
  /// weights file: fc.weight transposed is stored as "fc.weight.transpose"
  /// (".2", ".3", ... when that is taken). Other folds stay unnamed.
  std::string derived_name(const AnyOp& op, const std::vector<ValueId>& inputs) const {
    const bool layout = holds<Reshape>(op) || holds<Transpose>(op) ||
                        holds<BroadcastTo>(op) || holds<Slice>(op);
    if (!layout || inputs.size() != 1 || graph_.values[inputs[0]].name.empty()) return "";
    const std::string base = graph_.values[inputs[0]].name + "." + std::string(op_name(op));
    std::string name = base;
    for (int n = 2; constant_names_.count(name); ++n) name = detail::concat(base, ".", n);
    return name;
  }

  Graph graph_;
  std::vector<std::optional<Tensor>> examples_;  // inputs and node outputs
  std::unordered_set<std::string> input_names_, constant_names_;
};

}  // namespace rml
