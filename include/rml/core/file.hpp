// Whole-file reads and atomic writes: a failed write never leaves a partial file.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <unistd.h>

#include "rml/core/error.hpp"

namespace rml {

/// Reads a whole file into memory. `limit` bounds the size accepted (checked
/// before anything is allocated).
inline std::string read_file(const std::filesystem::path& path,
                             std::uintmax_t limit = std::uintmax_t(1) << 40) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) fail(path.string(), ": not a readable file");
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) fail(path.string(), ": cannot read its size: ", ec.message());
  if (size > limit) fail(path.string(), ": file of ", size, " bytes exceeds the limit of ", limit);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), ": cannot open for reading");
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size)) fail(path.string(), ": short read");
  return bytes;
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over
/// `path`, so readers see the old file or the whole new one, never a part.
inline void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  const std::filesystem::path temp =
      path.string() + ".tmp." + std::to_string(static_cast<long>(::getpid()));
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) fail(path.string(), ": cannot open '", temp.string(), "' for writing");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::error_code ignored;
      std::filesystem::remove(temp, ignored);
      fail(path.string(), ": write failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    fail(path.string(), ": cannot rename the temporary file into place: ", ec.message());
  }
}

/// Writes several files that belong together (a model and its sidecar): all
/// to temporaries first, then renamed into place in order. A failure removes
/// every temporary and the files this call already put in place, so no set is
/// left half-written.
inline void write_files_atomically(const std::vector<std::pair<std::filesystem::path, std::string_view>>& files) {
  std::vector<std::filesystem::path> temps;
  auto remove_all = [&](std::size_t from) {
    std::error_code ignored;
    for (std::size_t i = from; i < temps.size(); ++i) std::filesystem::remove(temps[i], ignored);
  };
  for (const auto& [path, bytes] : files) {
    const std::filesystem::path temp = path.string() + ".part." + std::to_string(static_cast<long>(::getpid()));
    temps.push_back(temp);
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      remove_all(0);
      fail(path.string(), ": write failed");
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    std::filesystem::rename(temps[i], files[i].first, ec);
    if (ec) {
      remove_all(i);
      std::error_code ignored;
      for (std::size_t done = 0; done < i; ++done) std::filesystem::remove(files[done].first, ignored);
      fail(files[i].first.string(), ": cannot rename the temporary file into place: ", ec.message());
    }
  }
}

}  // namespace rml
