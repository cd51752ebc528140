// The _rml extension: binds rml::Builder, graph loading and rml::Executor.
// NumPy arrays cross the boundary through the canonical dtype mapping:
// floats and booleans become f32, integers i32 (out of range: ExportError).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "rml/rml.hpp"

namespace py = pybind11;

namespace {

rml::Shape shape_of(const py::array& a) { return rml::Shape(a.shape(), a.shape() + a.ndim()); }

template <class T>
rml::Tensor canonical_from(const py::array& a, const std::string& what) {
  const auto c = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(a);
  return rml::canonical_tensor<T>(shape_of(a), std::span<const T>(c.data(), static_cast<std::size_t>(c.size())), what);
}

/// A NumPy array as a canonical rml tensor (copied).
rml::Tensor to_tensor(const py::handle& object, const std::string& what) {
  const py::array a = py::array::ensure(object);
  if (!a) throw rml::ExportError(rml::ErrorCode::dtype_mismatch, what + ": expected an array");
  const char kind = a.dtype().kind();
  const auto size = a.dtype().itemsize();
  if (kind == 'b') return canonical_from<bool>(a, what);
  if (kind == 'f') return size == 8 ? canonical_from<double>(a, what) : canonical_from<float>(a, what);
  if (kind == 'i') return size == 8 ? canonical_from<std::int64_t>(a, what) : canonical_from<std::int32_t>(a, what);
  if (kind == 'u') return size == 8 ? canonical_from<std::uint64_t>(a, what) : canonical_from<std::uint32_t>(a, what);
  throw rml::ExportError(rml::ErrorCode::dtype_mismatch, what + ": unsupported array dtype kind '" + std::string(1, kind) + "'");
}

py::array to_numpy(const rml::Tensor& t) {
  const std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  if (t.dtype() == rml::DType::f32) {
    py::array_t<float> out(shape);
    std::copy(t.values<float>().begin(), t.values<float>().end(), out.mutable_data());
    return out;
  }
  py::array_t<std::int32_t> out(shape);
  std::copy(t.values<std::int32_t>().begin(), t.values<std::int32_t>().end(), out.mutable_data());
  return out;
}

/// Python attribute values (dicts of ints, floats, bools, strings, lists) as JSON.
rml::Json to_json(const py::handle& value) {
  if (value.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) return value.cast<std::int64_t>();
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::dict>(value)) {
    rml::Json out = rml::Json::object();
    for (const auto& [k, v] : value.cast<py::dict>()) out[py::str(k).cast<std::string>()] = to_json(v);
    return out;
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    rml::Json out = rml::Json::array();
    for (const auto& v : value) out.push_back(to_json(v));
    return out;
  }
  if (py::hasattr(value, "item")) return to_json(value.attr("item")());  // NumPy scalars
  throw rml::ExportError(rml::ErrorCode::invalid_attribute, "attribute value of type " + py::str(py::type::of(value)).cast<std::string>() +
                         " cannot be an rml attribute");
}

rml::TensorMap to_tensor_map(const py::dict& inputs) {
  rml::TensorMap out;
  for (const auto& [name, value] : inputs) {
    const std::string key = py::str(name);
    out.emplace(key, to_tensor(value, "input '" + key + "'"));
  }
  return out;
}

py::dict to_dict(const rml::TensorMap& tensors) {
  py::dict out;
  for (const auto& [name, tensor] : tensors) out[py::str(name)] = to_numpy(tensor);
  return out;
}

/// A loaded model with an executor per (threads, fuse), made on first use.
class PyModel {
 public:
  explicit PyModel(rml::Model model) : model_(std::move(model)) {}
  py::dict run(const py::dict& inputs, int threads, bool fuse) {
    const rml::TensorMap in = to_tensor_map(inputs);
    auto& executor = executors_[{threads, fuse}];
    if (!executor) executor = std::make_shared<rml::Executor>(model_, rml::ExecutorOptions{.threads = threads, .fuse = fuse});
    rml::TensorMap out;
    {
      py::gil_scoped_release release;
      out = executor->run(in);
    }
    return to_dict(out);
  }
  py::dict evaluate(const py::dict& inputs) const { return to_dict(rml::evaluate(model_.graph(), to_tensor_map(inputs))); }
  std::vector<std::string> input_names() const { return names(model_.graph().inputs); }
  std::vector<std::string> output_names() const { return names(model_.graph().outputs); }
  std::size_t node_count() const { return model_.graph().nodes.size(); }
  std::map<std::string, int> op_counts() const {
    std::map<std::string, int> counts;
    for (const rml::Node& n : model_.graph().nodes) ++counts[std::string(rml::op_name(n.op))];
    return counts;
  }

 private:
  static std::vector<std::string> names(const std::vector<rml::NamedValue>& list) {
    std::vector<std::string> out;
    for (const auto& nv : list) out.push_back(nv.name);
    return out;
  }
  rml::Model model_;
  std::map<std::pair<int, bool>, std::shared_ptr<rml::Executor>> executors_;
};

/// The registry's ops as plain Python data, generated from each op's fields():
/// exporters' tables are checked against it.
py::dict op_schema() {
  const py::object loads = py::module_::import("json").attr("loads");
  py::dict schema;
  rml::Registry::for_each([&](auto type) {
    using Op = typename decltype(type)::type;
    py::dict attributes;
    const Op defaults{};
    rml::for_each_field<Op>([&](const auto& field) {
      using T = typename std::decay_t<decltype(field)>::value_type;
      py::dict attribute;
      attribute["type"] = std::string(rml::attribute_type_name<T>());
      attribute["required"] = field.required;
      attribute["default"] = field.required ? py::object(py::none())
                                            : loads(rml::detail::attribute_to_json(defaults.*field.member).dump());
      attributes[py::str(std::string(field.name))] = attribute;
    });
    py::dict op;
    op["min_inputs"] = Op::arity.min;
    op["max_inputs"] = Op::arity.max == rml::Arity::variadic ? py::object(py::none()) : py::int_(Op::arity.max);
    op["attributes"] = attributes;
    schema[py::str(std::string(Op::name))] = op;
  });
  return schema;
}

}  // namespace

PYBIND11_MODULE(_rml, m) {
  m.doc() = "rml: the C++ Builder, graph files and Executor";
  py::enum_<rml::ErrorCode> error_code(m, "ErrorCode", "The stable code of each class of failure (docs/errors.md).");
  for (const rml::ErrorCodeInfo& info : rml::error_codes)
    error_code.value(info.name.data(), info.code, info.meaning.data());  // both are string literals

  // rml.Error(ValueError) and rml.ExportError(rml.Error); an instance raised
  // from C++ carries `code`, an rml.ErrorCode. ExportErrors raised by the
  // Python exporters take the class's code, export_unsupported. The types
  // live as long as the interpreter, so the module keeps the only references.
  static PyObject* error_type = py::exception<rml::Error>(m, "Error", PyExc_ValueError).ptr();
  static PyObject* export_error_type = py::exception<rml::ExportError>(m, "ExportError", error_type).ptr();
  py::handle(export_error_type).attr("code") = rml::ErrorCode::export_unsupported;
  py::register_exception_translator([](std::exception_ptr thrown) {
    auto raise = [](PyObject* type, const rml::Error& e) {
      py::object instance = py::reinterpret_borrow<py::object>(type)(e.what());
      instance.attr("code") = e.code();
      PyErr_SetObject(type, instance.ptr());
    };
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const rml::ExportError& e) {
      raise(export_error_type, e);
    } catch (const rml::Error& e) {
      raise(error_type, e);
    }
  });

  m.def("op_names", [] { return std::vector<std::string>(rml::Registry::names.begin(), rml::Registry::names.end()); },
        "Every op rml-graph has.");
  m.def("op_schema", &op_schema,
        "Every op in the C++ registry: {name: {'min_inputs', 'max_inputs' (None: variadic), 'attributes': "
        "{attribute: {'type', 'required', 'default' (None when required)}}}}, in registry order.");

  py::class_<rml::Builder>(m, "Builder")
      .def(py::init<>())
      .def("input", [](rml::Builder& b, const std::string& name, const py::handle& example) {
             return b.input(name, to_tensor(example, "input '" + name + "'"));
           }, py::arg("name"), py::arg("example"), "A graph input with the framework's example value.")
      .def("constant", [](rml::Builder& b, const py::handle& value, const std::string& name) {
             return b.constant(to_tensor(value, name.empty() ? "constant" : "constant '" + name + "'"), name);
           }, py::arg("value"), py::arg("name") = "", "A constant; named ones are stored under their name.")
      .def("op", [](rml::Builder& b, const std::string& name, const std::vector<rml::ValueId>& inputs, const py::dict& attrs) {
             return b.op(name, inputs, to_json(attrs));
           }, py::arg("name"), py::arg("inputs"), py::arg("attrs") = py::dict(),
           "Applies an op; returns a constant when every input is constant.")
      .def("op_multi", [](rml::Builder& b, const std::string& name, const std::vector<rml::ValueId>& inputs,
                          std::size_t count, const py::dict& attrs) { return b.op_multi(name, inputs, count, to_json(attrs)); },
           py::arg("name"), py::arg("inputs"), py::arg("count"), py::arg("attrs") = py::dict())
      .def("output", &rml::Builder::output, py::arg("name"), py::arg("value"))
      .def("shape", [](const rml::Builder& b, rml::ValueId id) { return py::tuple(py::cast(b.type(id).shape)); })
      .def("dtype", [](const rml::Builder& b, rml::ValueId id) { return std::string(rml::dtype_name(b.type(id).dtype)); })
      .def("example", [](const rml::Builder& b, rml::ValueId id) { return to_numpy(b.example(id)); })
      .def("is_constant", &rml::Builder::is_constant)
      .def("evaluate", [](const rml::Builder& b, const py::dict& inputs) { return to_dict(b.evaluate(to_tensor_map(inputs))); })
      .def("write", [](const rml::Builder& b, const std::string& path, bool clean_up) { b.write(path, clean_up); },
           py::arg("path"), py::arg("clean_up") = true,
           "Writes the graph and its weights; the clean-up passes run first unless clean_up=False.")
      .def_property_readonly("node_count", [](const rml::Builder& b) { return b.graph().nodes.size(); });

  py::class_<PyModel>(m, "Model")
      .def("run", &PyModel::run, py::arg("inputs"), py::arg("threads") = 1, py::arg("fuse") = true,
           "Runs the executor; returns {output name: array}.")
      .def("evaluate", &PyModel::evaluate, py::arg("inputs"), "Runs the reference kernels.")
      .def_property_readonly("inputs", &PyModel::input_names)
      .def_property_readonly("outputs", &PyModel::output_names)
      .def_property_readonly("node_count", &PyModel::node_count)
      .def_property_readonly("op_counts", &PyModel::op_counts);

  m.def("write_tensors", [](const std::string& path, const py::dict& tensors) {
          rml::NamedTensors named;
          for (const auto& [key, value] : tensors) {
            const auto name = py::cast<std::string>(key);
            named.emplace_back(name, to_tensor(value, "tensor '" + name + "'"));
          }
          rml::write_safetensors(path, named);
        }, py::arg("path"), py::arg("tensors"),
        "Writes {name: array} as safetensors in rml's canonical layout (dict order), atomically.");
  m.def("read_tensors", [](const std::string& path) {
          py::dict out;
          for (auto& [name, tensor] : rml::read_safetensors(path).tensors) out[py::str(name)] = to_numpy(tensor);
          return out;
        }, py::arg("path"), "Reads a safetensors file into {name: array} (f32 and i32, canonical dtypes).");
  m.def("load", [](const std::string& path, const std::optional<std::map<std::string, std::uint64_t>>& limits) {
          rml::LoadOptions options;
          for (const auto& [name, value] : limits.value_or(std::map<std::string, std::uint64_t>{}))
            rml::set_limits(options, name + "=" + std::to_string(value));
          py::gil_scoped_release release;
          return PyModel(rml::load(path, options));
        }, py::arg("path"), py::arg("limits") = py::none(),
        "Reads and validates an rml-graph file. limits: {name: bound} over rml::LoadOptions' fields "
        "(max_graph_bytes, max_nodes, max_memory_bytes, ...); a model over one raises rml.Error "
        "with code ErrorCode.limit_exceeded.");
}
