// Reading and writing the Hugging Face safetensors format: an 8-byte
// little-endian header length N, N bytes of UTF-8 JSON describing each tensor,
// then the data region that the JSON's data_offsets index into.
//
// The reader trusts nothing: every length, offset, dtype and key is checked,
// and every size is checked before anything is allocated from it.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "rml/core/error.hpp"
#include "rml/core/file.hpp"
#include "rml/core/tensor.hpp"
#include "rml/ir/json_strict.hpp"
#include "rml/ir/load_options.hpp"

namespace rml {

// The format stores little-endian data; rml copies it unswapped.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");
static_assert(std::numeric_limits<float>::is_iec559 && std::numeric_limits<double>::is_iec559);

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct SafetensorsContents {
  NamedTensors tensors;  // in data-offset order
  std::map<std::string, std::string> metadata;
};

namespace safetensors_detail {

// Limits taken from the reference (Rust) implementation.
inline constexpr std::uint64_t max_header_bytes = 100'000'000;
inline constexpr std::size_t length_prefix_bytes = 8;
inline constexpr std::size_t data_alignment = 64;
// A valid header nests at most {entry: {shape: [...]}}; anything deeper is
// rejected while parsing.
inline constexpr int max_header_depth = 3;
inline constexpr std::string_view metadata_key = "__metadata__";

// ---- element types ----

/// How a file dtype is stored and which rml dtype it becomes.
enum class StoredKind { f32, i32, f16, bf16, f64, i64, boolean };

struct StoredDType {
  std::string_view name;
  StoredKind kind;
  std::int64_t bytes;
  DType canonical;
};

inline constexpr StoredDType readable_dtypes[] = {
    {"F32", StoredKind::f32, 4, DType::f32},   {"I32", StoredKind::i32, 4, DType::i32},
    {"F16", StoredKind::f16, 2, DType::f32},   {"BF16", StoredKind::bf16, 2, DType::f32},
    {"F64", StoredKind::f64, 8, DType::f32},   {"I64", StoredKind::i64, 8, DType::i32},
    {"BOOL", StoredKind::boolean, 1, DType::f32},
};

// Dtypes the format defines that have no canonical rml mapping.
inline constexpr std::string_view unsupported_dtypes[] = {
    "U8",  "I8",  "U16",     "I16",     "U32",     "U64", "F8_E4M3",
    "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64",
};

inline const StoredDType& stored_dtype(std::string_view name, const std::string& what) {
  for (const StoredDType& dtype : readable_dtypes)
    if (dtype.name == name) return dtype;
  if (std::ranges::find(unsupported_dtypes, name) != std::end(unsupported_dtypes))
    fail(ErrorCode::weights_dtype, what, ": unsupported dtype '", name, "' (rml reads F32, I32, F16, BF16, F64, I64, BOOL)");
  fail(ErrorCode::weights_dtype, what, ": unknown dtype '", name, "'");
}

inline float f16_to_f32(std::uint16_t half) {
  const std::uint32_t sign = std::uint32_t{half} >> 15 << 31;
  const std::uint32_t exponent = (half >> 10) & 0x1F;
  const std::uint32_t mantissa = half & 0x3FF;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in f32
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1F)  // infinity or NaN; the NaN payload is kept
    return std::bit_cast<float>(sign | 0x7F800000u | mantissa << 13);
  return std::bit_cast<float>(sign | (exponent + 127 - 15) << 23 | mantissa << 13);
}

// bf16 is the top half of an f32, so widening is exact for every value.
inline float bf16_to_f32(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t{bits} << 16); }

/// Reads a T from possibly unaligned bytes.
template <class T>
T load(const char* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof value);
  return value;
}

/// Converts `bytes` (already checked to hold exactly the shape's elements)
/// into a canonical rml tensor.
inline Tensor decode_tensor(const StoredDType& dtype, const Shape& shape, std::string_view bytes,
                            const std::string& what) {
  Tensor tensor(dtype.canonical, shape);
  const auto count = static_cast<std::size_t>(tensor.elements());
  const char* in = bytes.data();
  switch (dtype.kind) {
    case StoredKind::f32:
    case StoredKind::i32:
      if (count != 0) std::memcpy(tensor.raw(), in, bytes.size());
      break;
    case StoredKind::f16:
    case StoredKind::bf16: {
      const auto widen = dtype.kind == StoredKind::f16 ? f16_to_f32 : bf16_to_f32;
      auto out = tensor.values<float>();
      for (std::size_t i = 0; i < count; ++i) out[i] = widen(load<std::uint16_t>(in + 2 * i));
      break;
    }
    case StoredKind::f64: {
      auto out = tensor.values<float>();  // rounds to nearest; overflow becomes infinity
      for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<float>(load<double>(in + 8 * i));
      break;
    }
    case StoredKind::i64: {
      auto out = tensor.values<std::int32_t>();
      for (std::size_t i = 0; i < count; ++i) {
        const auto value = load<std::int64_t>(in + 8 * i);
        if (value < INT32_MIN || value > INT32_MAX)
          fail(ErrorCode::weights_dtype, what, ": I64 value ", value, " at index ", i, " is outside the i32 range");
        out[i] = static_cast<std::int32_t>(value);
      }
      break;
    }
    case StoredKind::boolean: {
      auto out = tensor.values<float>();
      for (std::size_t i = 0; i < count; ++i) {
        const auto byte = static_cast<unsigned char>(in[i]);
        if (byte > 1) fail(ErrorCode::weights_dtype, what, ": BOOL byte ", int{byte}, " at index ", i, " is neither 0 nor 1");
        out[i] = byte;
      }
      break;
    }
  }
  return tensor;
}

// ---- header ----

/// Parses the header as strict JSON (no duplicate keys, no needless nesting).
inline json::Value parse_header_json(std::string_view header, const std::string& source) {
  if (header.empty() || header.front() != '{') fail(ErrorCode::weights_header, source, ": header does not start with '{'");
  return parse_json_strict(header, source + ": header", max_header_depth);
}

/// A JSON integer in [0, INT64_MAX]; `field` names it in messages.
inline std::int64_t non_negative_integer(const json::Value& value, const std::string& what,
                                         std::string_view field) {
  if (value.is_number_unsigned()) {
    const auto number = value.as_uint64();
    if (number > static_cast<std::uint64_t>(INT64_MAX)) fail(ErrorCode::size_overflow, what, ": ", field, " ", number, " is too large");
    return static_cast<std::int64_t>(number);
  }
  if (value.is_number_integer()) {
    const auto number = value.as_int64();
    if (number < 0) fail(ErrorCode::weights_header, what, ": ", field, " ", number, " is negative");
    return number;
  }
  fail(ErrorCode::weights_header, what, ": ", field, " must be a non-negative integer, got a ", value.type_name());
}

/// One tensor's header entry, checked on its own and against the data size.
struct TensorEntry {
  std::string name;
  const StoredDType* dtype;
  Shape shape;
  std::int64_t begin;
  std::int64_t end;
  std::size_t position = 0;  // in the header
};

inline std::string describe_tensor(const std::string& source, const std::string& name) {
  return detail::concat(source, ": tensor '", name, "'");
}

inline void check_entry_keys(const json::Value& entry, const std::string& what) {
  if (!entry.is_object()) fail(ErrorCode::weights_header, what, ": entry is not an object (it must hold dtype, shape, data_offsets)");
  for (const std::string& key : entry.keys())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      fail(ErrorCode::weights_header, what, ": unexpected key '", key, "' (an entry holds exactly dtype, shape, data_offsets)");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!entry.contains(key)) fail(ErrorCode::weights_header, what, ": missing key '", key, "'");
}

inline TensorEntry parse_entry(const std::string& name, const json::Value& entry,
                               std::uint64_t data_size, const std::string& source) {
  const std::string what = describe_tensor(source, name);
  check_entry_keys(entry, what);

  const json::Value& dtype_name = *entry.find("dtype");
  if (!dtype_name.is_string()) fail(ErrorCode::weights_header, what, ": dtype must be a string");
  const StoredDType& dtype = stored_dtype(dtype_name.as_string(), what);

  const json::Value& dims = *entry.find("shape");
  if (!dims.is_array()) fail(ErrorCode::weights_header, what, ": shape must be an array of non-negative integers");
  Shape shape;
  shape.reserve(dims.size());
  for (const json::Value& dim : dims) shape.push_back(non_negative_integer(dim, what, "shape dimension"));
  const std::string size_what = what + ": size of shape " + to_string(shape);
  const std::int64_t byte_length = checked_mul(element_count(shape, size_what), dtype.bytes, size_what);

  const json::Value& offsets = *entry.find("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2) fail(ErrorCode::weights_header, what, ": data_offsets must be [begin, end]");
  const std::int64_t begin = non_negative_integer(offsets[0], what, "data_offsets begin");
  const std::int64_t end = non_negative_integer(offsets[1], what, "data_offsets end");
  if (begin > end) fail(ErrorCode::weights_offsets, what, ": data_offsets begin ", begin, " is greater than end ", end);
  if (static_cast<std::uint64_t>(end) > data_size)
    fail(ErrorCode::weights_offsets, what, ": data_offsets end ", end, " is past the end of the data region (", data_size, " bytes)");
  if (end - begin != byte_length)
    fail(ErrorCode::weights_offsets, what, ": data_offsets span ", end - begin, " bytes but ", to_string(shape), " ", dtype.name,
         " elements need ", byte_length);
  return {name, &dtype, std::move(shape), begin, end};
}

inline std::map<std::string, std::string> parse_metadata(const json::Value& metadata,
                                                         const std::string& source) {
  if (!metadata.is_object()) fail(ErrorCode::weights_header, source, ": __metadata__ must be an object of strings");
  std::map<std::string, std::string> result;
  for (std::size_t i = 0; i < metadata.size(); ++i) {
    const std::string& key = metadata.keys()[i];
    if (!metadata[i].is_string()) fail(ErrorCode::weights_header, source, ": __metadata__ value for '", key, "' is not a string");
    result.emplace(key, metadata[i].as_string());
  }
  return result;
}

/// Sorts entries by offset and checks they tile the data region exactly:
/// from 0, no gap, no overlap, nothing after the last tensor.
inline void check_layout(std::vector<TensorEntry>& entries, std::uint64_t data_size,
                         const std::string& source) {
  std::sort(entries.begin(), entries.end(), [](const TensorEntry& a, const TensorEntry& b) {  // ties in header order
    return std::tie(a.begin, a.end, a.position) < std::tie(b.begin, b.end, b.position);
  });
  std::int64_t expected_begin = 0;
  const TensorEntry* previous = nullptr;
  for (const TensorEntry& entry : entries) {
    const std::string what = describe_tensor(source, entry.name);
    if (entry.begin < expected_begin)
      fail(ErrorCode::weights_offsets, what, ": data [", entry.begin, ", ", entry.end, ") overlaps tensor '", previous->name, "'");
    if (entry.begin > expected_begin)
      fail(ErrorCode::weights_offsets, what, ": gap of ", entry.begin - expected_begin, " bytes before its data at offset ", entry.begin);
    expected_begin = entry.end;
    previous = &entry;
  }
  if (static_cast<std::uint64_t>(expected_begin) != data_size)
    fail(ErrorCode::weights_trailing_bytes, source, ": ", data_size - static_cast<std::uint64_t>(expected_begin),
         " trailing bytes after the last tensor's data");
}

// ---- writing ----

inline std::string_view stored_name(DType dtype) { return dtype == DType::f32 ? "F32" : "I32"; }

inline void check_names(const NamedTensors& tensors) {
  std::set<std::string_view> seen;
  for (const auto& [name, tensor] : tensors) {
    if (name == metadata_key) fail(ErrorCode::invalid_argument, "safetensors: tensor name '", metadata_key, "' is reserved for metadata");
    if (!seen.insert(name).second) fail(ErrorCode::duplicate_definition, "safetensors: duplicate tensor name '", name, "'");
  }
}

/// Header JSON text, keys in the given order (metadata first, sorted).
inline std::string header_json(const NamedTensors& tensors,
                               const std::map<std::string, std::string>& metadata) {
  auto quoted = [](std::string_view text) {
    if (const auto bad = first_invalid_utf8(text))
      fail(ErrorCode::invalid_utf8, "safetensors: a tensor name or metadata string is not valid UTF-8 (bad byte at offset ",
           *bad, ")");
    return json_detail::quoted(text);
  };
  std::string text = "{";
  if (!metadata.empty()) {
    text += quoted(metadata_key) + ":{";
    for (const auto& [key, value] : metadata) text += (text.back() == '{' ? "" : ",") + quoted(key) + ':' + quoted(value);
    text += '}';
  }
  std::uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (text.size() > 1) text += ',';
    text += quoted(name) + ":{\"dtype\":\"" + std::string(stored_name(tensor.dtype())) + "\",\"shape\":[";
    for (std::size_t d = 0; d < tensor.shape().size(); ++d) text += (d ? "," : "") + std::to_string(tensor.shape()[d]);
    text += "],\"data_offsets\":[" + std::to_string(offset) + ',' + std::to_string(offset + tensor.bytes()) + "]}";
    offset += tensor.bytes();
  }
  return text + '}';
}

}  // namespace safetensors_detail

namespace safetensors_detail {

/// A file's bytes held in memory.
struct MemoryBytes {
  std::string_view bytes;
  std::uint64_t size() const { return bytes.size(); }
  void read(std::uint64_t offset, std::size_t count, char* out) const {
    if (count) std::memcpy(out, bytes.data() + offset, count);
  }
};

/// A file's bytes read piece by piece, so each tensor goes straight from the
/// file into its own buffer: loading never holds the file twice.
class FileBytes {
 public:
  FileBytes(const std::filesystem::path& path, std::uintmax_t limit, std::string_view limit_name) : name_(path.string()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) fail(ErrorCode::io_failed, name_, ": not a readable file");
    size_ = std::filesystem::file_size(path, ec);
    if (ec) fail(ErrorCode::io_failed, name_, ": cannot read its size: ", ec.message());
    if (size_ > limit)
      fail(ErrorCode::limit_exceeded, name_, ": file of ", size_, " bytes exceeds the limit of ", limit, limit_name.empty() ? "" : " (", limit_name,
           limit_name.empty() ? "" : ")");
    in_.open(path, std::ios::binary);
    if (!in_) fail(ErrorCode::io_failed, name_, ": cannot open for reading");
  }
  std::uint64_t size() const { return size_; }
  void read(std::uint64_t offset, std::size_t count, char* out) {
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(out, static_cast<std::streamsize>(count));
    if (!in_ || in_.gcount() != static_cast<std::streamsize>(count))
      fail(ErrorCode::io_failed, name_, ": short read at offset ", offset, " (did the file change while it was read?)");
  }

 private:
  std::string name_;
  std::uint64_t size_ = 0;
  std::ifstream in_;
};

/// One tensor from `count` stored bytes at `offset`: F32 and I32 are read
/// straight into the tensor; other dtypes through a buffer of their own size.
template <class Bytes>
Tensor read_tensor(Bytes& bytes, const TensorEntry& entry, std::uint64_t offset, const std::string& what) {
  const auto count = static_cast<std::size_t>(entry.end - entry.begin);
  if (entry.dtype->kind == StoredKind::f32 || entry.dtype->kind == StoredKind::i32) {
    Tensor tensor(entry.dtype->canonical, entry.shape);
    if (count) bytes.read(offset, count, reinterpret_cast<char*>(tensor.raw()));
    return tensor;
  }
  std::string stored(count, '\0');
  bytes.read(offset, count, stored.data());
  return decode_tensor(*entry.dtype, entry.shape, stored, what);
}

/// Checks the header completely, then reads each tensor's data.
template <class Bytes>
SafetensorsContents parse(Bytes& bytes, const std::string& source, std::uint64_t header_limit = max_header_bytes) {
  const std::uint64_t size = bytes.size();
  if (size < length_prefix_bytes)
    fail(ErrorCode::weights_truncated, source, ": file of ", size, " bytes is too short for the 8-byte header length");
  char prefix[length_prefix_bytes];
  bytes.read(0, length_prefix_bytes, prefix);
  const auto header_length = load<std::uint64_t>(prefix);
  if (header_length > std::min(header_limit, max_header_bytes))
    fail(ErrorCode::limit_exceeded, source, ": header length ", header_length, " exceeds the ", std::min(header_limit, max_header_bytes),
         "-byte limit (LoadOptions::max_header_bytes)");
  if (header_length > size - length_prefix_bytes)
    fail(ErrorCode::weights_truncated, source, ": header length ", header_length, " runs past the end of the file (", size, " bytes)");
  std::string header(static_cast<std::size_t>(header_length), '\0');
  bytes.read(length_prefix_bytes, header.size(), header.data());
  const std::uint64_t data_start = length_prefix_bytes + header_length, data_size = size - data_start;

  const json::Value root = parse_header_json(header, source);
  SafetensorsContents contents;
  std::vector<TensorEntry> entries;
  for (std::size_t i = 0; i < root.size(); ++i) {
    if (root.keys()[i] == metadata_key) {
      contents.metadata = parse_metadata(root[i], source);
    } else {
      entries.push_back(parse_entry(root.keys()[i], root[i], data_size, source));
      entries.back().position = i;
    }
  }
  check_layout(entries, data_size, source);

  contents.tensors.reserve(entries.size());
  for (const TensorEntry& entry : entries)
    contents.tensors.emplace_back(entry.name, read_tensor(bytes, entry, data_start + static_cast<std::uint64_t>(entry.begin),
                                                          describe_tensor(source, entry.name)));
  return contents;
}

}  // namespace safetensors_detail

/// Parses a whole safetensors file held in memory. `source_name` names the file in
/// error messages.
inline SafetensorsContents parse_safetensors(std::string_view bytes, std::string_view source_name) {
  safetensors_detail::MemoryBytes memory{bytes};
  return safetensors_detail::parse(memory, std::string(source_name));
}

/// Reads a safetensors file: the header first, then each tensor from the file
/// into its own buffer (peak memory: the tensors, not the file twice).
/// `options` bounds the file and its header (max_weights_bytes, max_header_bytes).
inline SafetensorsContents read_safetensors(const std::filesystem::path& path, const LoadOptions& options = {}) {
  safetensors_detail::FileBytes file(path, options.max_weights_bytes, "LoadOptions::max_weights_bytes");
  return safetensors_detail::parse(file, path.string(), options.max_header_bytes);
}

/// The file's bytes: f32 as F32, i32 as I32, in the given order, data region
/// 64-byte aligned. Same input, same bytes.
inline std::string serialize_safetensors(const NamedTensors& tensors,
                                         const std::map<std::string, std::string>& metadata = {}) {
  namespace sd = safetensors_detail;
  sd::check_names(tensors);
  std::string header = sd::header_json(tensors, metadata);
  // Trailing spaces are JSON whitespace; they align the data region.
  const std::size_t unaligned = (sd::length_prefix_bytes + header.size()) % sd::data_alignment;
  if (unaligned != 0) header.append(sd::data_alignment - unaligned, ' ');
  if (header.size() > sd::max_header_bytes)
    fail(ErrorCode::limit_exceeded, "safetensors: header of ", header.size(), " bytes exceeds the ", sd::max_header_bytes,
         "-byte limit");

  std::size_t data_size = 0;
  for (const auto& [name, tensor] : tensors) data_size += tensor.bytes();
  std::string file;
  file.reserve(sd::length_prefix_bytes + header.size() + data_size);
  const std::uint64_t header_length = header.size();
  file.append(reinterpret_cast<const char*>(&header_length), sizeof header_length);
  file += header;
  for (const auto& [name, tensor] : tensors)
    file.append(reinterpret_cast<const char*>(tensor.raw()), tensor.bytes());
  return file;
}

/// Writes atomically: a failure leaves no file and no temporary behind.
inline void write_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                              const std::map<std::string, std::string>& metadata = {}) {
  std::string bytes;
  try {
    bytes = serialize_safetensors(tensors, metadata);
  } catch (const Error&) {
    rethrow_with_context(path.string());
  }
  write_file_atomically(path, bytes);
}

}  // namespace rml
