// libFuzzer harness: a safetensors file parsed from memory. Any input must
// either parse, with every tensor's bytes inside the input, or raise
// rml::Error; anything else (a crash, a sanitizer report, a leak, another
// exception type) is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rml/ir/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const rml::SafetensorsContents contents = rml::parse_safetensors(bytes, "fuzz.safetensors");
    std::uint64_t stored = 0;
    for (const auto& [name, tensor] : contents.tensors) stored += tensor.bytes();
    // Every decoded element came from the data region; a stored BOOL byte widens most, to a 4-byte i32.
    if (stored > size * 4) __builtin_trap();
  } catch (const rml::Error&) {
  }
  return 0;
}
