// Helpers shared by the graph, builder and CLI tests.
#pragma once

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "rml/builder.hpp"
#include "rml/core/file.hpp"

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

/// Every file under a folder by its path inside it (a folder: "name/" -> "",
/// a link: "-> target").
using Snapshot = std::map<std::string, std::string>;

inline void snapshot_into(Snapshot& files, const std::filesystem::path& root, const std::filesystem::path& dir) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = std::filesystem::relative(entry.path(), root).string();
    if (entry.is_symlink()) {
      files[name] = "-> " + std::filesystem::read_symlink(entry.path()).string();
    } else if (entry.is_directory()) {
      files[name + "/"] = "";
      snapshot_into(files, root, entry.path());
    } else {
      files[name] = slurp(entry.path());
    }
  }
}

inline Snapshot snapshot(const std::filesystem::path& dir) {
  Snapshot files;
  snapshot_into(files, dir, dir);
  return files;
}

inline void restore(const std::filesystem::path& dir, const Snapshot& files) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) std::filesystem::remove_all(entry.path());
  for (const auto& [name, bytes] : files) {  // a folder's name sorts before the files in it
    if (name.ends_with("/")) std::filesystem::create_directory(dir / name);
    else spit(dir / name, bytes);
  }
}

struct Fault {
  std::string step;     // the system call failed ("open", "write", "rename", ...)
  std::string message;  // the rml::Error it caused ("" if none)
  Snapshot left;        // the folder afterwards
};

struct FaultRuns {
  std::vector<Fault> faults;  // one per system call of the write, in order
  Snapshot after;             // the folder after the faultless write
  std::string faultless_error;
};

/// Runs `write` once per system call it makes, each time from the folder
/// state `before` and failing that call with `error`; then once without a
/// fault (file_detail::inject_fault counts the calls).
template <class Write>
FaultRuns inject_each_fault(const std::filesystem::path& dir, const Snapshot& before, Write write, int error = EIO) {
  FaultRuns runs;
  for (std::size_t k = 0;; ++k) {
    restore(dir, before);
    std::size_t seen = 0;
    std::string failed;
    file_detail::inject_fault = [&](std::string_view step) {
      if (seen++ != k) return 0;
      failed = step;
      return error;
    };
    std::string message;
    try {
      write();
    } catch (const Error& e) {
      message = e.what();
    }
    file_detail::inject_fault = nullptr;
    if (failed.empty()) {
      runs.after = snapshot(dir);
      runs.faultless_error = message;
      return runs;
    }
    runs.faults.push_back({failed, message, snapshot(dir)});
  }
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
