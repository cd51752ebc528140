// What every executor kernel is: a compiled step that reads and writes value
// slots, may use scratch memory, and describes itself for `rml info`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rml/exec/thread_pool.hpp"
#include "rml/ir/graph.hpp"

namespace rml::exec {

/// Per-run state a kernel sees: where every value lives, the pool, scratch.
struct RunContext {
  std::byte** slots;           // value id -> its memory (kernels that alias may set slots)
  ThreadPool* pool;
  std::byte* shared_scratch;   // for the calling thread's preparation work
  std::byte* thread_scratch;   // thread t uses thread_scratch + t * thread_scratch_stride
  std::size_t thread_scratch_stride;

  template <class T>
  T* value(ValueId id) const { return reinterpret_cast<T*>(slots[id]); }
  template <class T>
  T* scratch_of(int thread) const { return reinterpret_cast<T*>(thread_scratch + thread * thread_scratch_stride); }
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(RunContext& context) const = 0;
  /// One line for `rml info`: the kernel and what it was specialised for.
  virtual std::string describe() const = 0;
  /// Values it reads and writes (for lifetimes). A value read through an
  /// alias counts as its source.
  std::vector<ValueId> reads, writes;
  /// Scratch this kernel needs: once per run, and per thread.
  std::size_t shared_scratch_bytes = 0;
  std::size_t thread_scratch_bytes = 0;
  /// Set when the kernel only re-labels its input (a reshape): its output
  /// slot is the input's memory, no copy.
  bool aliases_input = false;
  /// The graph nodes it covers (several when fused).
  std::vector<std::size_t> nodes;
};

}  // namespace rml::exec
