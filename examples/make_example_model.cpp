// Builds the small classifier that `make demo` runs, with the C++ Builder:
// dense -> layer_norm -> gelu(tanh) -> dense -> softmax, on deterministic
// weights, and writes OUT.json, OUT.safetensors (weights) and
// OUT.inputs.safetensors (a batch of inputs for `rml run --inputs`).
//
//   make_example_model OUT.json
#include <cmath>
#include <filesystem>
#include <iostream>

#include "rml/rml.hpp"

namespace {

/// Weights with a fixed formula, so the files are byte-identical on every run.
rml::Tensor weights(rml::Shape shape, float phase) {
  rml::Tensor t(rml::DType::f32, std::move(shape));
  auto v = t.values<float>();
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * std::sin(0.7f * float(i) + phase);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_example_model OUT.json\n";
    return 2;
  }
  try {
    constexpr std::int64_t batch = 2, features = 6, hidden = 8, classes = 3;
    rml::Builder b;
    const auto x = b.input("x", rml::TensorType{rml::DType::f32, {batch, features}});
    const auto w1 = b.constant(weights({features, hidden}, 0.1f), "dense1.weight");
    const auto b1 = b.constant(weights({hidden}, 0.2f), "dense1.bias");
    const auto scale = b.constant(weights({hidden}, 1.3f), "norm.weight");
    const auto shift = b.constant(weights({hidden}, 0.4f), "norm.bias");
    const auto w2 = b.constant(weights({hidden, classes}, 0.5f), "dense2.weight");
    const auto b2 = b.constant(weights({classes}, 0.6f), "dense2.bias");

    auto h = b.op(rml::Add{}, {b.op(rml::MatMul{}, {x, w1}), b1});
    h = b.op(rml::LayerNorm{.eps = 1e-5}, {h, scale, shift});
    h = b.op(rml::Gelu{.approximate = "tanh"}, {h});
    const auto logits = b.op(rml::Add{}, {b.op(rml::MatMul{}, {h, w2}), b2});
    b.output("probabilities", b.op(rml::Softmax{.axis = -1}, {logits}));
    b.write(argv[1]);
    std::filesystem::path inputs_path = argv[1];
    inputs_path.replace_extension(".inputs.safetensors");
    rml::write_safetensors(inputs_path, {{"x", weights({batch, features}, 2.0f)}});
    std::cout << "wrote " << argv[1] << " (" << b.graph().nodes.size() << " nodes)\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "make_example_model: " << e.what() << "\n";
    return 1;
  }
}
