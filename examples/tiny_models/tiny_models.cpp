// tiny_models: a CNN, an LSTM and a transformer block, each written in PyTorch,
// JAX and TensorFlow (tools/make_tiny_models.py) and exported by rml's direct
// exporters into this folder: nine graphs. This program runs each through the
// executor, fused and unfused, on 1, 2 and 4 threads, and requires the output
// bit for bit equal to the model's literal reference (expected.hpp).
//
// The models are built so that every value inside them is exact in f32 (the
// generator's docstring says how): gates of exactly 1/2, 1 or +-1, layer-norm
// variances of exactly 1 or 4, one-hot softmax rows, GELU arguments far from
// zero. So this also proves that rml's vectorised exp, tanh, sigmoid, erf and
// rsqrt give exactly 1, +-1 and one-hot there, on whichever instruction set the
// CPU has (ctest runs it on the portable path as well).
//
//   tiny_models [FOLDER]   (default: the folder this file is in)
#include <filesystem>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "../exact.hpp"
#include "expected.hpp"

namespace {

// The inputs, by the generator's formulas.

rml::Tensor cnn_input() { return rml::Tensor::from<float>({2, 1, 6, 6}, exact::pattern(2 * 36, 6)); }

/// x[2, 12, 3]: feature 0 is 4 (0 on row 0's last step), feature 1 the row, feature 2 small values.
rml::Tensor lstm_input() {
  const std::vector<float> small = exact::pattern(2 * 12, 11);
  std::vector<float> x(2 * 12 * 3);
  for (int n = 0; n < 2; ++n)
    for (int t = 0; t < 12; ++t) {
      float* step = &x[static_cast<std::size_t>((n * 12 + t) * 3)];
      step[0] = (n == 0 && t == 11) ? 0.0f : 4.0f;
      step[1] = static_cast<float>(n);
      step[2] = small[static_cast<std::size_t>(n * 12 + t)];
    }
  return rml::Tensor::from<float>({2, 12, 3}, x);
}

/// x[2, 3, 8]: each row a mean plus 1 or 2 times a pattern of four +1 and four -1.
rml::Tensor transformer_input() {
  constexpr float kPatterns[2][3][8] = {
      {{1, 1, -1, -1, 1, -1, 1, -1}, {1, -1, 1, -1, -1, 1, 1, -1}, {-1, 1, 1, -1, 1, 1, -1, -1}},
      {{-1, -1, 1, 1, 1, 1, -1, -1}, {1, -1, -1, 1, -1, -1, 1, 1}, {1, 1, -1, -1, -1, 1, -1, 1}}};
  constexpr float kScales[2][3] = {{1, 2, 1}, {2, 1, 2}};
  const std::vector<float> means = exact::pattern(2 * 3, 17);
  std::vector<float> x;
  for (int n = 0; n < 2; ++n)
    for (int s = 0; s < 3; ++s)
      for (int d = 0; d < 8; ++d)
        x.push_back(means[static_cast<std::size_t>(n * 3 + s)] + kScales[n][s] * kPatterns[n][s][d]);
  return rml::Tensor::from<float>({2, 3, 8}, x);
}

template <class Exports>
int check_model(const char* name, const std::filesystem::path& folder, const rml::Tensor& x, std::span<const float> want,
                const Exports& exports) {
  std::cout << name << ":\n";
  int failures = 0;
  for (const auto& [stem, nodes] : exports)
    failures += exact::check_export(folder / (std::string(stem) + ".json"), x, want, nodes);
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  namespace tm = tiny_models;
  const std::filesystem::path folder = argc > 1 ? argv[1] : std::filesystem::path(__FILE__).parent_path();
  try {
    std::cout << "tiny_models: nine exports against the exact outputs, bit for bit (" << rml::exec::isa_name(rml::exec::active_isa())
              << " kernels)\n";
    int failures = check_model("cnn", folder, cnn_input(), tm::cnn::kExpected, tm::cnn::kExports);
    failures += check_model("lstm", folder, lstm_input(), tm::lstm::kExpected, tm::lstm::kExports);
    failures += check_model("transformer", folder, transformer_input(), tm::transformer::kExpected, tm::transformer::kExports);
    std::cout << (failures == 0 ? "tiny_models: every run exact\n" : "tiny_models: FAILED\n");
    return failures == 0 ? 0 : 1;
  } catch (const rml::Error& e) {
    std::cerr << "tiny_models: " << e.what() << "\n";
    return 1;
  }
}
