// UTF-8 validity: the JSON and safetensors readers reject text that breaks
// it, and a graph's names must keep it (they end up in JSON, protobuf and
// JavaScript files).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace rml {

/// Offset of the first byte that breaks UTF-8 (overlong forms, surrogates
/// and code points past U+10FFFF included), or nullopt if `text` is valid.
inline std::optional<std::size_t> first_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    unsigned char second_min = 0x80, second_max = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) second_min = 0xA0;  // overlong
      if (lead == 0xED) second_max = 0x9F;  // surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) second_min = 0x90;  // overlong
      if (lead == 0xF4) second_max = 0x8F;  // past U+10FFFF
    } else {
      return i;
    }
    if (text.size() - i < length) return i;
    for (std::size_t k = 1; k < length; ++k) {
      const auto byte = static_cast<unsigned char>(text[i + k]);
      const unsigned char min = k == 1 ? second_min : 0x80, max = k == 1 ? second_max : 0xBF;
      if (byte < min || byte > max) return i;
    }
    i += length;
  }
  return std::nullopt;
}

}  // namespace rml
