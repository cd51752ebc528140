// tiny_net: x[2, 4] -> Dense(4, 8) -> ReLU -> Dense(8, 3), written in PyTorch, JAX
// and TensorFlow (tools/make_tiny_net.py) and exported by rml's three direct
// exporters into this folder. This program runs each export through the
// executor, fused and unfused, on 1, 2 and 4 threads, and requires the output
// bit for bit equal to the literal reference (expected.hpp) and to a plain-loop
// forward pass written here.
//
// Every weight, bias and input is a non-zero multiple of 1/8, so every product
// and partial sum is exact in f32 and the output has exactly one right value,
// whatever the order of the sums.
//
//   tiny_net [FOLDER]   (default: the folder this file is in)
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <vector>

#include "../exact.hpp"
#include "expected.hpp"

namespace {

constexpr int kBatch = 2, kIn = 4, kHidden = 8, kOut = 3;

/// The forward pass as plain loops, on the parameters the generator used (the
/// same formula and salts; PyTorch's layout, weights [out, in]).
std::vector<float> reference_forward(const std::vector<float>& x) {
  const std::vector<float> w1 = exact::pattern(kHidden * kIn, 2), b1 = exact::pattern(kHidden, 3);
  const std::vector<float> w2 = exact::pattern(kOut * kHidden, 4), b2 = exact::pattern(kOut, 5);
  std::vector<float> y(kBatch * kOut);
  for (int n = 0; n < kBatch; ++n) {
    float hidden[kHidden];
    for (int h = 0; h < kHidden; ++h) {
      float sum = b1[h];
      for (int i = 0; i < kIn; ++i) sum += w1[h * kIn + i] * x[n * kIn + i];
      hidden[h] = std::max(sum, 0.0f);
    }
    for (int o = 0; o < kOut; ++o) {
      float sum = b2[o];
      for (int h = 0; h < kHidden; ++h) sum += w2[o * kHidden + h] * hidden[h];
      y[n * kOut + o] = sum;
    }
  }
  return y;
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path folder = argc > 1 ? argv[1] : std::filesystem::path(__FILE__).parent_path();
  try {
    const std::vector<float> x_values = exact::pattern(kBatch * kIn, 1);
    const rml::Tensor x = rml::Tensor::from<float>({kBatch, kIn}, x_values);
    int failures = 0;
    if (!exact::same_bits(reference_forward(x_values), tiny_net::kExpected)) {
      std::cout << "the plain-loop forward pass differs from the literal reference\n";
      ++failures;
    }
    std::cout << "tiny_net: three exports against the exact output, bit for bit ("
              << rml::exec::isa_name(rml::exec::active_isa()) << " kernels)\n";
    for (const auto& [name, nodes] : tiny_net::kExports)
      failures += exact::check_export(folder / (std::string(name) + ".json"), x, tiny_net::kExpected, nodes);
    std::cout << (failures == 0 ? "tiny_net: every run exact\n" : "tiny_net: FAILED\n");
    return failures == 0 ? 0 : 1;
  } catch (const rml::Error& e) {
    std::cerr << "tiny_net: " << e.what() << "\n";
    return 1;
  }
}
