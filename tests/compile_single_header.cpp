// The whole single header (single_include/rml/rml.hpp, compiled with no other
// rml include path): build a graph with the Builder, run it through the
// executor and the reference kernels, and convert it to ONNX and TFLite.
#include "rml/rml.hpp"

#include <iostream>

int main() {
  try {
    rml::Builder b;
    const auto x = b.input("x", rml::TensorType{rml::DType::f32, {2, 3}});
    const auto w = b.constant(rml::Tensor::from<float>({3, 2}, {0.5f, -1.0f, 0.25f, 2.0f, -0.75f, 1.0f}), "w");
    b.output("y", b.op(rml::Softmax{.axis = -1}, {b.op(rml::MatMul{}, {x, w})}));
    const rml::Tensor input = rml::Tensor::from<float>({2, 3}, {1, 2, 3, -1, 0, 1});
    const rml::TensorMap reference = rml::evaluate(b.graph(), {{"x", input}});
    const rml::Model model(b.graph(), {});
    const rml::TensorMap out = rml::Executor(model, {.threads = 2}).run({{"x", input}});
    const auto got = out.at("y").values<float>(), want = reference.at("y").values<float>();
    for (std::size_t i = 0; i < want.size(); ++i)
      if (std::abs(got[i] - want[i]) > 1e-6f) throw std::runtime_error("executor and reference kernels differ");
    // (Converters::convert("onnx", ...), a format named at run time, would compile all five converters.)
    if (rml::emit::convert<rml::emit::Onnx>(b.graph()).data.empty() ||
        rml::emit::convert<rml::emit::Tflite>(b.graph()).data.empty())
      throw std::runtime_error("empty model");
    std::cout << "single header: builder, executor, reference kernels and converters work\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "single header: " << e.what() << "\n";
    return 1;
  }
}
