// rml::Error and rml::ExportError: every failure rml reports is one of these.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace rml {

/// A reported failure: bad input, a violated rule, an unsupported request.
/// The message names the file, op, node or value at fault.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Raised while building a graph from a framework's program (an op rml lacks,
/// a shape that disagrees with the framework's record, ...).
class ExportError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

/// Throws rml::Error with the streamed parts as its message.
template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw Error(detail::concat(parts...));
}

/// Re-throws the active exception with `context` prefixed, keeping its type.
/// Used where a lower layer's message needs the node or file it happened in.
template <class... Parts>
[[noreturn]] void rethrow_with_context(const Parts&... context) {
  try {
    throw;
  } catch (const ExportError& e) {
    throw ExportError(detail::concat(context..., ": ", e.what()));
  } catch (const Error& e) {
    throw Error(detail::concat(context..., ": ", e.what()));
  }
}

}  // namespace rml
