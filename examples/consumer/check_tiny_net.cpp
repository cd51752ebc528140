// A downstream program, the same source in every consumer project: it
// includes rml/run.hpp however the project gets it (an installed package,
// FetchContent, the vendored single header; header-only or in split mode), loads the tiny_net export
// given on the command line (examples/tiny_net/torch.json), runs it, and
// requires the exact output (examples/tiny_net/expected.hpp).
#include <rml/run.hpp>

#include <cstring>
#include <iostream>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: check_tiny_net examples/tiny_net/torch.json\n";
    return 2;
  }
  // The input's formula (tools/exact_examples.py's pattern with salt 1): non-zero multiples of 1/8.
  std::vector<float> x(8);
  for (int k = 0; k < 8; ++k) x[k] = ((k + 1) % 3 == 0 ? -1.0f : 1.0f) * static_cast<float>((5 * k + 1) % 8 + 1) / 8;
  const float expected[6] = {-0.96875f, 3.671875f, 2.71875f, 1.171875f, -0.59375f, 3.703125f};
  try {
    const rml::Model model = rml::load(argv[1]);
    const rml::Executor executor(model, {.threads = 2});
    const rml::TensorMap out = executor.run({{"x", rml::Tensor::from<float>({2, 4}, x)}});
    const auto y = out.at("output").values<float>();
    const bool exact = y.size() == 6 && std::memcmp(y.data(), expected, sizeof expected) == 0;
    std::cout << "check_tiny_net: " << (exact ? "exact" : "WRONG OUTPUT") << "\n";
    return exact ? 0 : 1;
  } catch (const rml::Error& e) {
    std::cerr << "check_tiny_net: " << e.what() << "\n";
    return 1;
  }
}
