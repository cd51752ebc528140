// Writing a model that is a folder of files (a CoreML .mlpackage) the way
// write_file_atomically writes one file: the files go into a fresh temporary
// folder beside the target, which then takes the target's place in one
// rename (an exchange, when a previous package is there). Readers see the old
// package or the whole new one; a failure leaves the old one (or none) and
// no temporary.
#pragma once

#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>
#include <fcntl.h>
#include <sys/stat.h>

#include "rml/core/file.hpp"

namespace rml {

/// One file of a folder being written: its path inside the folder, its bytes.
struct FolderFile {
  std::string path;
  std::string data;
};

namespace folder_detail {

/// A relative path of plain names: no "..", no root, nothing that leaves the folder.
inline bool stays_inside(const std::filesystem::path& path) {
  if (path.empty() || path.is_absolute()) return false;
  for (const auto& part : path)
    if (part == ".." || part == "." || part.empty()) return false;
  return true;
}

/// A new empty folder beside `target` (`.NAME.<16 hex>.tmp`), removed with
/// everything in it unless committed.
class TempFolder {
 public:
  explicit TempFolder(const std::filesystem::path& target) : target_(target) {
    std::random_device entropy;
    for (int attempt = 0;; ++attempt) {
      const std::uint64_t tag = (std::uint64_t(entropy()) << 32) ^ entropy();
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(tag));
      path_ = file_detail::folder_of(target) / ("." + target.filename().string() + "." + hex + ".tmp");
      if (file_detail::step("open", [&] { return ::mkdir(path_.c_str(), 0777) == 0; })) return;
      if (errno != EEXIST || attempt == 16) file_detail::fail_step(target_, "create a temporary folder beside it", errno);
    }
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  ~TempFolder() {
    std::error_code ec;
    if (!committed_) std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

  /// Renames the folder to the target, or exchanges the two when `replace`
  /// (the previous package then lies here, and is removed with this object).
  void commit(bool replace) {
    const bool ok = file_detail::step("rename", [&] {
      return replace ? ::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) == 0
                     : ::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, target_.c_str(), RENAME_NOREPLACE) == 0;
    });
    if (!ok) file_detail::fail_step(target_, "rename the temporary folder into place", errno);
    committed_ = !replace;  // after an exchange, what lies here is the old package: remove it
  }

 private:
  std::filesystem::path target_, path_;
  bool committed_ = false;
};

}  // namespace folder_detail

/// Writes `files` as the folder `path`. An existing `path` is replaced only
/// when it is a folder holding `marker` (a file every such package has, like
/// CoreML's Manifest.json): anything else there is an error, never removed.
inline void write_folder_atomically(const std::filesystem::path& given, const std::vector<FolderFile>& files,
                                    std::string_view marker) {
  const std::filesystem::path path = given.has_filename() ? given : given.parent_path();  // "out/" names "out"
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(path, ec);
  const bool replace = status.type() != std::filesystem::file_type::not_found;
  if (replace && (!std::filesystem::is_directory(status) || !std::filesystem::is_regular_file(path / marker, ec)))
    fail(ErrorCode::io_failed, path.string(), ": exists and is not a package folder (no ", marker, " in it); not replaced");
  folder_detail::TempFolder temp(path);
  std::vector<std::filesystem::path> folders{temp.path()};
  for (const FolderFile& file : files) {
    const std::filesystem::path relative(file.path);
    if (!folder_detail::stays_inside(relative))
      fail(ErrorCode::internal, "package file path '", file.path, "' leaves its folder");
    std::filesystem::path folder = temp.path();
    for (const auto& part : relative.parent_path()) {
      folder /= part;
      if (std::filesystem::create_directory(folder, ec)) folders.push_back(folder);
      if (ec) fail(ErrorCode::io_failed, folder.string(), ": cannot create the folder: ", ec.message());
    }
    file_detail::TempFile out(temp.path() / relative);
    out.write(file.data);
    out.commit();
  }
  // Deepest first, so every name is durable before the folder holding it is.
  for (auto folder = folders.rbegin(); folder != folders.rend(); ++folder) file_detail::sync_folder(*folder);
  temp.commit(replace);
  file_detail::sync_after_commit(path);
}

}  // namespace rml
