// A run-only consumer: loads a model and runs it through the executor,
// including nothing but rml/run.hpp (no JSON library, no reference kernels).
// Built by the test suite so the header stays self-sufficient, and timed by
// `make compile-time`, header-only and as a split-mode file (-DRML_SPLIT,
// which sees declarations only).
#include <iostream>

#include "rml/run.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: compile_run_only MODEL.json\n";
    return 2;
  }
  try {
    const rml::Model model = rml::load(argv[1]);
    rml::Executor executor(model, {.threads = 1});
    rml::TensorMap inputs;
    for (const rml::TensorSpec& in : model.inputs()) inputs.emplace(in.name, rml::Tensor(in.type));
    for (const auto& [name, tensor] : executor.run(inputs)) std::cout << name << ": " << rml::to_string(tensor.type()) << "\n";
    return 0;
  } catch (const rml::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
