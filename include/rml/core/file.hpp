// Whole-file reads and crash-safe writes. A write goes to a temporary created
// exclusively beside the target (never through a symlink), is fsynced,
// renamed over the target and the folder synced: a reader sees the old file
// or the whole new one. A model and the sidecar it references are replaced
// as a pair (write_pair). The steps are in docs/security.md.
#pragma once

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rml/core/error.hpp"

namespace rml {

/// Reads a whole file into memory. `limit` bounds the size accepted (checked
/// before anything is allocated); `limit_name` names it in the error.
inline std::string read_file(const std::filesystem::path& path, std::uintmax_t limit = std::uintmax_t(1) << 40,
                             std::string_view limit_name = "") {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail(ErrorCode::io_failed, path.string(), ": not a readable file");
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) fail(ErrorCode::io_failed, path.string(), ": cannot read its size: ", ec.message());
  if (size > limit)
    fail(ErrorCode::limit_exceeded, path.string(), ": file of ", size, " bytes exceeds the limit of ", limit, limit_name.empty() ? "" : " (",
         limit_name, limit_name.empty() ? "" : ")");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::io_failed, path.string(), ": cannot open for reading");
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size)) fail(ErrorCode::io_failed, path.string(), ": short read");
  return bytes;
}

namespace file_detail {

/// Test hook: called before each step of a write ("open", "write", "sync",
/// "close", "rename", "sync folder") with the step's name; a nonzero errno it
/// returns fails that step as if the system call had. Per thread.
inline thread_local std::function<int(std::string_view step)> inject_fault;

/// Runs one system call, or fails it with the injected errno.
template <class Call>
bool step(std::string_view name, Call&& call) {
  if (inject_fault)
    if (const int injected = inject_fault(name)) {
      errno = injected;
      return false;
    }
  return call();
}

[[noreturn]] inline void fail_step(const std::filesystem::path& path, std::string_view what, int error) {
  fail(ErrorCode::io_failed, path.string(), ": cannot ", what, ": ", std::strerror(error));
}

inline std::filesystem::path folder_of(const std::filesystem::path& path) {
  return path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
}

/// fsync of the folder, so a rename inside it survives a power cut.
inline void sync_folder(const std::filesystem::path& folder) {
  int fd = -1;
  const bool ok = step("sync folder", [&] {
    fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd >= 0 && ::fsync(fd) == 0;
  });
  const int error = errno;
  if (fd >= 0) ::close(fd);
  if (!ok) fail_step(folder, "sync the folder", error);
}

/// The folder sync after a commit: the new file is in place, so a failure
/// says so rather than suggesting the old one is.
inline void sync_after_commit(const std::filesystem::path& target) {
  try {
    sync_folder(folder_of(target));
  } catch (const Error& e) {
    fail(ErrorCode::io_failed, target.string(), ": written, but not yet durable: ", e.what());
  }
}

/// A temporary file beside a target, created with O_EXCL and O_NOFOLLOW under
/// an unpredictable name (`.NAME.<16 hex>.tmp`); removed unless committed.
class TempFile {
 public:
  explicit TempFile(const std::filesystem::path& target) : target_(target) {
    std::random_device entropy;
    for (int attempt = 0; fd_ < 0; ++attempt) {
      const std::uint64_t tag = (std::uint64_t(entropy()) << 32) ^ entropy();
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(tag));
      path_ = folder_of(target) / ("." + target.filename().string() + "." + hex + ".tmp");
      const bool ok = step("open", [&] {
        fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        return fd_ >= 0;
      });
      if (!ok && (errno != EEXIST || attempt == 16)) fail_step(target_, "create a temporary file beside it", errno);
    }
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }

  void write(std::string_view bytes) {
    while (!bytes.empty()) {
      const std::size_t chunk = std::min<std::size_t>(bytes.size(), std::size_t(1) << 30);
      ssize_t written = -1;
      const bool ok = step("write", [&] {
        written = ::write(fd_, bytes.data(), chunk);
        return written >= 0;
      });
      if (!ok && errno == EINTR) continue;
      if (!ok) fail_step(target_, "write", errno);
      if (written == 0) fail_step(target_, "write", ENOSPC);
      bytes.remove_prefix(static_cast<std::size_t>(written));
    }
  }

  /// fsync, close, and rename over the target: the commit point.
  void commit() {
    if (!step("sync", [&] { return ::fsync(fd_) == 0; })) fail_step(target_, "sync", errno);
    const int fd = std::exchange(fd_, -1);
    if (!step("close", [&] { return ::close(fd) == 0; })) fail_step(target_, "close", errno);
    if (!step("rename", [&] { return ::rename(path_.c_str(), target_.c_str()) == 0; }))
      fail_step(target_, "rename the temporary file into place", errno);
    committed_ = true;
  }

 private:
  std::filesystem::path target_, path_;
  int fd_ = -1;
  bool committed_ = false;
};

/// FNV-1a, 64 bits: names a sidecar after its contents.
inline std::uint64_t content_hash(std::string_view bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const char c : bytes) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return hash;
}

/// True when `path` is a regular file (not a symlink) holding exactly `bytes`.
inline bool holds(const std::filesystem::path& path, std::string_view bytes) {
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(path, ec);
  if (ec || !std::filesystem::is_regular_file(status)) return false;
  if (std::filesystem::file_size(path, ec) != bytes.size() || ec) return false;
  std::ifstream in(path, std::ios::binary);
  std::string chunk(std::size_t(1) << 20, '\0');
  for (std::size_t at = 0; at < bytes.size();) {
    in.read(chunk.data(), static_cast<std::streamsize>(std::min(chunk.size(), bytes.size() - at)));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0 || bytes.compare(at, got, chunk.data(), got) != 0) return false;
    at += got;
  }
  return true;
}

inline bool exists_or_dangles(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found;
}

}  // namespace file_detail

/// Writes `bytes` over `path` through an exclusive temporary: readers see the
/// old file or the whole new one; a failure leaves the old file (or none) and
/// no temporary. A symlink at `path` is replaced, never followed.
inline void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  file_detail::TempFile temp(path);
  temp.write(bytes);
  temp.commit();
  file_detail::sync_after_commit(path);
}

/// The tagged variant of a sidecar name: `w.safetensors` -> `w.<16 hex>.safetensors`.
inline std::string tagged_sidecar_name(const std::string& preferred, std::uint64_t tag) {
  const std::filesystem::path name(preferred);
  char hex[18];
  std::snprintf(hex, sizeof hex, ".%016llx", static_cast<unsigned long long>(tag));
  return name.stem().string() + hex + name.extension().string();
}

/// True for `preferred` and its tagged variants: the names write_pair may
/// give this model's sidecar, and so the only ones it ever removes.
inline bool is_sidecar_name(std::string_view name, const std::string& preferred) {
  if (name == preferred) return true;
  const std::filesystem::path p(preferred);
  const std::string stem = p.stem().string() + ".", ext = p.extension().string();
  if (name.size() != stem.size() + 16 + ext.size() || !name.starts_with(stem) || !name.ends_with(ext)) return false;
  for (const char c : name.substr(stem.size(), 16))
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  return true;
}

/// The names in `folder` that a sidecar named from `preferred` can have:
/// what a model whose references are not parsed may be using.
inline std::vector<std::string> existing_sidecars(const std::filesystem::path& folder, const std::string& preferred) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec))
    if (is_sidecar_name(entry.path().filename().string(), preferred)) found.push_back(entry.path().filename().string());
  return found;
}

/// The file name a new sidecar of a model in `folder` gets: `preferred` when
/// that name is free or already holds these bytes, else a tagged variant named
/// by a hash of the bytes, so the sidecar the current model references is
/// never overwritten while that model is still in place.
inline std::string choose_sidecar_name(const std::filesystem::path& folder, const std::string& preferred,
                                       std::string_view bytes) {
  const std::filesystem::path plain = folder / preferred;
  if (!file_detail::exists_or_dangles(plain) || file_detail::holds(plain, bytes)) return preferred;
  return tagged_sidecar_name(preferred, file_detail::content_hash(bytes));
}

/// A model file and the sidecar it references, replaced as a pair.
struct FilePair {
  std::filesystem::path primary;
  std::string_view primary_bytes;
  std::string sidecar_name;  // a plain name in the primary's folder, from choose_sidecar_name; empty: none
  std::string_view sidecar_bytes;
  std::string preferred_sidecar_name;  // what choose_sidecar_name started from
  /// Sidecar names the replaced primary referenced: removed once the new
  /// primary is in place, unless one is the new sidecar or is not one of the
  /// names this pair's sidecar can have (is_sidecar_name).
  std::vector<std::string> stale_sidecars;
};

/// Writes the sidecar first (skipped when its name already holds its bytes),
/// then renames the primary into place (the commit), then removes the stale
/// sidecars. A failure before the commit leaves the previous pair (or nothing)
/// and no temporary; after it, the new pair is complete and only a failed
/// folder sync is reported (a stale sidecar that cannot be removed stays).
inline void write_pair(const FilePair& pair) {
  const std::filesystem::path folder = file_detail::folder_of(pair.primary);
  const std::filesystem::path sidecar = folder / pair.sidecar_name;
  const bool sidecar_in_place = pair.sidecar_name.empty() || file_detail::holds(sidecar, pair.sidecar_bytes);
  const bool sidecar_existed = file_detail::exists_or_dangles(sidecar);
  try {
    if (!sidecar_in_place) {
      file_detail::TempFile temp(sidecar);
      temp.write(pair.sidecar_bytes);
      temp.commit();
    }
    file_detail::TempFile temp(pair.primary);
    temp.write(pair.primary_bytes);
    file_detail::sync_folder(folder);  // the sidecar's name is durable before anything references it
    temp.commit();
  } catch (const Error&) {
    // A sidecar this call created is unreferenced; one it replaced held other
    // bytes under a name no current model uses (choose_sidecar_name).
    if (!sidecar_in_place && !sidecar_existed) ::unlink(sidecar.c_str());
    throw;
  }
  for (const std::string& stale : pair.stale_sidecars)
    if (stale != pair.sidecar_name && is_sidecar_name(stale, pair.preferred_sidecar_name))
      ::unlink((folder / stale).c_str());
  file_detail::sync_after_commit(pair.primary);
}

}  // namespace rml
