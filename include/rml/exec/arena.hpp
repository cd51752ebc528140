// Arena layout: one offset per buffer, from buffer lifetimes, so buffers
// that are never alive at the same time share memory.
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <vector>

namespace rml::exec {

inline constexpr std::size_t arena_alignment = 64;

inline std::size_t align_up(std::size_t n, std::size_t alignment = arena_alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

/// A buffer alive from step `first` through step `last`, inclusive.
struct Lifetime {
  std::size_t bytes;
  std::size_t first, last;
};

struct ArenaLayout {
  std::vector<std::size_t> offsets;  // per buffer
  std::size_t bytes = 0;             // peak
};

/// Greedy best-fit: largest buffers first, each at the lowest offset that no
/// buffer with an overlapping lifetime occupies.
inline ArenaLayout plan_arena(const std::vector<Lifetime>& buffers) {
  ArenaLayout layout;
  layout.offsets.assign(buffers.size(), 0);
  std::vector<std::size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {  // ties in index order
    return buffers[a].bytes != buffers[b].bytes ? buffers[a].bytes > buffers[b].bytes : a < b;
  });
  std::vector<std::size_t> placed;
  for (std::size_t index : order) {
    const Lifetime& buffer = buffers[index];
    const std::size_t size = align_up(std::max<std::size_t>(buffer.bytes, 1));
    std::vector<std::pair<std::size_t, std::size_t>> busy;  // [begin, end) of overlapping buffers
    for (std::size_t other : placed) {
      const Lifetime& o = buffers[other];
      if (o.first <= buffer.last && buffer.first <= o.last)
        busy.emplace_back(layout.offsets[other], layout.offsets[other] + align_up(std::max<std::size_t>(o.bytes, 1)));
    }
    std::sort(busy.begin(), busy.end());
    std::size_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (begin >= offset + size) break;
      offset = std::max(offset, end);
    }
    layout.offsets[index] = offset;
    layout.bytes = std::max(layout.bytes, offset + size);
    placed.push_back(index);
  }
  return layout;
}

}  // namespace rml::exec
