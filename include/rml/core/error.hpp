// rml::Error and rml::ExportError: every failure rml reports is one of these,
// and each carries a stable rml::ErrorCode beside its message.
#pragma once

#include <array>
#include <concepts>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace rml {

// The error catalogue: X(name, number, meaning). The single source of the
// enum, its names and docs/errors.md (`rml errors --markdown`). Numbers are
// stable: a code is never renumbered or reused; a new one takes a new number.
#define RML_ERROR_CODES(X)                                                                                         \
  X(io_failed, 1, "A file could not be opened, read, written, synced or renamed; the operating system's reason follows.") \
  X(json_syntax, 10, "The graph file, or a safetensors header, is not well-formed JSON: a syntax error, a NUL byte, text after the document.") \
  X(json_duplicate_key, 11, "A JSON object names the same key twice (readers disagree on which one wins, so rml takes neither).") \
  X(invalid_utf8, 12, "A string is not valid UTF-8.")                                                           \
  X(weights_truncated, 20, "A safetensors file is shorter than its 8-byte length prefix or its header says.")    \
  X(weights_header, 21, "A safetensors header is malformed: not an object, an entry with missing, unexpected or mistyped keys, metadata that is not strings.") \
  X(weights_dtype, 22, "A safetensors dtype rml does not know, or a value its rml dtype cannot hold (an I64 beyond i32, a BOOL byte other than 0 or 1).") \
  X(weights_offsets, 23, "A tensor's data_offsets lie: reversed, past the end, overlapping another tensor, leaving a gap, or not dtype size x element count.") \
  X(weights_trailing_bytes, 24, "A safetensors file has bytes after the last tensor's data.")                     \
  X(malformed_model_bytes, 25, "An ONNX or TF Lite file read back does not decode: a field runs past the end, an unknown wire type.") \
  X(graph_schema, 30, "The graph JSON breaks the rml-graph schema: a missing key, a value of the wrong JSON type, ids that are not dense.") \
  X(format_version, 31, "Not an rml-graph file, or a format version this rml does not read.")                    \
  X(unsafe_weights_path, 32, "The weights file named by a graph is not a plain file name in the graph's folder, or is a symbolic link.") \
  X(weights_mismatch, 33, "Graph and weights disagree: a weight missing from the file, of another dtype or shape, or a tensor no value uses.") \
  X(unknown_op, 34, "A node names an op rml does not have.")                                                       \
  X(wrong_arity, 35, "A node has the wrong number of inputs or outputs for its op.")                               \
  X(undefined_value, 36, "A reference to a value that does not exist, or a value that nothing defines (dangling).") \
  X(duplicate_definition, 37, "Something defined twice: a value produced by two nodes, an input, output or constant name used twice.") \
  X(graph_cycle, 38, "The nodes form a cycle, so no order runs them.")                                             \
  X(invalid_attribute, 40, "An attribute is missing, unknown, of the wrong type, or outside its domain (zero or negative strides, windows, groups, steps).") \
  X(non_finite_number, 41, "A number in the graph JSON overflows a double (1e999): JSON has no infinities or NaNs.") \
  X(invalid_shape, 42, "Shapes or ranks an op cannot take: wrong rank, dimensions that disagree, no broadcast.")   \
  X(invalid_axis, 43, "An axis outside the rank of the tensor it names, or repeated.")                             \
  X(dtype_mismatch, 44, "A value of a dtype the op, the declaration or the reader does not accept.")               \
  X(index_out_of_range, 45, "An index (gather, top_k's k) outside the dimension it indexes.")                      \
  X(size_overflow, 46, "A size, stride or byte count overflows 64 bits, or a tensor would have more than 2^58 elements.") \
  X(limit_exceeded, 50, "A resource limit of rml::LoadOptions is exceeded (file, header or weight bytes, JSON depth, nodes, values, rank, elements, run memory).") \
  X(bad_run_inputs, 51, "The inputs given to a run are missing, extra, or of the wrong dtype or shape.")           \
  X(run_cancelled, 52, "A run was cancelled through RunControl::cancel.")                                          \
  X(run_deadline, 53, "A run reached its RunControl::deadline.")                                                   \
  X(invalid_argument, 60, "An option passed to the API or the command line is invalid: an unknown pass, format or limit, a bad thread count.") \
  X(unsupported, 61, "The request is valid but not supported here: a converter without a lowering for an op, kernels this CPU cannot run.") \
  X(export_unsupported, 62, "A framework's program uses something rml has no lowering for.")                     \
  X(internal, 70, "rml broke one of its own invariants (a pass that does not settle or makes a cycle): a bug to report.")

/// A stable code for each class of failure. Numbers never change.
enum class ErrorCode : int {
#define RML_ERROR_ENUM(name, number, meaning) name = number,
  RML_ERROR_CODES(RML_ERROR_ENUM)
#undef RML_ERROR_ENUM
};

struct ErrorCodeInfo {
  ErrorCode code;
  std::string_view name;
  std::string_view meaning;
};

/// Every code, in catalogue order.
inline constexpr std::array error_codes{
#define RML_ERROR_INFO(name, number, meaning) ErrorCodeInfo{ErrorCode::name, #name, meaning},
    RML_ERROR_CODES(RML_ERROR_INFO)
#undef RML_ERROR_INFO
};

constexpr std::string_view error_code_name(ErrorCode code) {
  for (const ErrorCodeInfo& info : error_codes)
    if (info.code == code) return info.name;
  return "unknown";
}

constexpr std::optional<ErrorCode> error_code_named(std::string_view name) {
  for (const ErrorCodeInfo& info : error_codes)
    if (info.name == name) return info.code;
  return std::nullopt;
}

/// The catalogue as a Markdown table (docs/errors.md, `rml errors --markdown`).
inline std::string error_table_markdown() {
  std::string table = "| code | name | meaning |\n| ---: | --- | --- |\n";
  for (const ErrorCodeInfo& info : error_codes)
    table += "| " + std::to_string(static_cast<int>(info.code)) + " | `" + std::string(info.name) + "` | " +
             std::string(info.meaning) + " |\n";
  return table;
}

/// A reported failure: bad input, a violated rule, an unsupported request.
/// The message names the file, op, node or value at fault; code() says which
/// class of failure it is, for programs that react to it.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

/// Raised while building a graph from a framework's program (an op rml lacks,
/// a shape that disagrees with the framework's record, ...).
class ExportError : public Error {
 public:
  using Error::Error;
};

namespace detail {

/// One part of a message: text, or a number kept as it is until the message
/// is put together. Messages are formatted by one non-template function from
/// a list of these, so each of the many call sites of fail() and concat()
/// costs a few stores instead of a string stream of its own.
class MessagePiece {
 public:
  MessagePiece(const char* text) : kind_(Kind::text), text_(text) {}
  MessagePiece(std::string_view text) : kind_(Kind::text), text_(text) {}
  MessagePiece(const std::string& text) : kind_(Kind::text), text_(text) {}
  MessagePiece(char c) : kind_(Kind::character), character_(c) {}
  MessagePiece(bool value) : kind_(Kind::text), text_(value ? "1" : "0") {}
  template <std::signed_integral T>
  MessagePiece(T value) : kind_(Kind::signed_integer), signed_(value) {}
  template <std::unsigned_integral T>
  MessagePiece(T value) : kind_(Kind::unsigned_integer), unsigned_(value) {}
  MessagePiece(double value) : kind_(Kind::real), real_(value) {}

  /// Appends the piece as `std::ostream <<` prints it (six significant
  /// digits for reals), except that bytes (signed/unsigned char) print as
  /// numbers.
  void append_to(std::string& out) const {
    char buffer[32];
    int n = 0;
    switch (kind_) {
      case Kind::text: out += text_; return;
      case Kind::character: out += character_; return;
      case Kind::signed_integer: n = std::snprintf(buffer, sizeof buffer, "%lld", signed_); break;
      case Kind::unsigned_integer: n = std::snprintf(buffer, sizeof buffer, "%llu", unsigned_); break;
      case Kind::real: n = std::snprintf(buffer, sizeof buffer, "%g", real_); break;
    }
    out.append(buffer, static_cast<std::size_t>(n));
  }

 private:
  enum class Kind : unsigned char { text, character, signed_integer, unsigned_integer, real };
  Kind kind_;
  union {
    std::string_view text_;
    char character_;
    long long signed_;
    unsigned long long unsigned_;
    double real_;
  };
};

/// A part a MessagePiece takes as it is, or, for anything else a stream can
/// print (a path, ...), that text.
template <class T>
decltype(auto) printable(const T& part) {
  if constexpr (std::is_arithmetic_v<T> || std::is_convertible_v<const T&, std::string_view>) {
    return (part);
  } else {
    std::ostringstream out;
    out << part;
    return out.str();
  }
}

inline std::string join_pieces(std::initializer_list<MessagePiece> pieces) {
  std::string out;
  for (const MessagePiece& piece : pieces) piece.append_to(out);
  return out;
}

[[noreturn]] inline void throw_error(ErrorCode code, std::initializer_list<MessagePiece> pieces) {
  throw Error(code, join_pieces(pieces));
}

template <class... Parts>
std::string concat(const Parts&... parts) {
  return join_pieces({MessagePiece(printable(parts))...});
}
}  // namespace detail

/// Throws rml::Error with the code and the parts, streamed, as its message.
template <class... Parts>
[[noreturn]] void fail(ErrorCode code, const Parts&... parts) {
  detail::throw_error(code, {detail::MessagePiece(detail::printable(parts))...});
}

/// Re-throws the active exception with `context` prefixed, keeping its type
/// and code. Used where a lower layer's message needs the node or file it
/// happened in.
template <class... Parts>
[[noreturn]] void rethrow_with_context(const Parts&... context) {
  try {
    throw;
  } catch (const ExportError& e) {
    throw ExportError(e.code(), detail::concat(context..., ": ", e.what()));
  } catch (const Error& e) {
    throw Error(e.code(), detail::concat(context..., ": ", e.what()));
  }
}

}  // namespace rml
