// Helpers shared by the graph, builder and CLI tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "rml/builder.hpp"

namespace rml::test {

/// A fresh, empty folder under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::random_device seed;
    path_ = std::filesystem::temp_directory_path() / ("rml-test-" + std::to_string(seed()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void spit(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// y = softmax(relu(x @ w + b)) on [2, 3] inputs: small but touching named,
/// inline and stored constants.
inline Builder small_model() {
  Builder b;
  const auto x = b.input("x", Tensor::from<float>({2, 3}, {1, -2, 3, 0.5f, 0.25f, -1}));
  const auto w = b.constant(Tensor::from<float>({3, 4}, {1, 0, -1, 2, 0.5f, 1, 0, -2, 0, 0.25f, 1, 1}), "w");
  const auto bias = b.constant(Tensor::from<float>({4}, {0.1f, 0.2f, 0.3f, 0.4f}));
  const auto h = b.op(Relu{}, {b.op(Add{}, {b.op(MatMul{}, {x, w}), bias})});
  b.output("y", b.op(Softmax{}, {h}));
  return b;
}

}  // namespace rml::test
