// What every executor kernel is: a compiled step that reads and writes value
// slots, may use scratch memory, and describes itself for `rml info`; and how
// an op declares its kernel (KernelFor<Op>, beside its family's kernels).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
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
  /// Asked while memory is laid out (exec/memory.hpp): may the kernel write
  /// `value`'s rows, `row_length` elements each, `row_stride` elements apart
  /// (into a larger tensor: a concat along its last axis)? True when it will
  /// from now on; most kernels write their outputs contiguously and say no.
  virtual bool write_rows_apart(ValueId /*value*/, std::int64_t /*row_length*/, std::int64_t /*row_stride*/) {
    return false;
  }
  /// Values it reads and writes (for lifetimes). A value read through an
  /// alias counts as its source.
  std::vector<ValueId> reads, writes;
  /// Scratch this kernel needs: once per run, and per thread.
  std::size_t shared_scratch_bytes = 0;
  std::size_t thread_scratch_bytes = 0;
  /// Set when the kernel only re-labels its input (a reshape): its output
  /// slot is the input's memory, no copy.
  bool aliases_input = false;
  /// Where in the input the output starts, in elements of 4 bytes (a
  /// contiguous slice: a view into its input).
  std::int64_t alias_offset = 0;
  /// Set when the kernel copies its input unchanged into a graph output (a
  /// reshape there): the input may then be computed in the output's buffer.
  bool copies_input_to_output = false;
  /// The graph nodes it covers (several when fused).
  std::vector<std::size_t> nodes;
};

class PackedWeightCache;  // exec/gemm.hpp

/// Consecutive channels of a conv's input taken from another value: its
/// `channels` planes, each repeated scale_h x scale_w (nearest upsampling).
/// A conv whose input is a channel concat of such values (exec/fusion.hpp
/// finds them) reads the pieces while it pads, so the concat and the
/// upsampling are never written out.
struct ChannelPiece {
  ValueId value;
  std::int64_t channels = 0, scale_h = 1, scale_w = 1;
};

/// What a kernel factory may ask about the graph while the plan is made.
struct PlanContext {
  const Graph& graph;
  const std::vector<bool>& graph_outputs;  // per value: is it a graph output?
  PackedWeightCache& packed_weights;        // constant matmul operands, packed once per plan
  /// Per node: the channel pieces its conv reads its input from (empty: the input itself).
  const std::vector<std::vector<ChannelPiece>>* conv_pieces = nullptr;
  /// Per node: the values an sdpa reads for q, k and v and the one it writes
  /// (empty: its inputs and output); one that differs from the input is the
  /// [B, L, H, D] source of a gathered transpose to [B, H, L, D], an output
  /// that differs is the [B, L, H, D] result of the transpose after it
  /// (exec/fusion.hpp).
  const std::vector<std::vector<ValueId>>* sdpa_operands = nullptr;

  const TensorType& type(ValueId v) const { return graph.values[v].type; }
  Types input_types(const Node& node) const {
    Types out;
    for (ValueId v : node.inputs) out.push_back(type(v));
    return out;
  }
  const Shape& output_shape(const Node& node) const { return type(node.outputs[0]).shape; }
  /// The value's data when it is a constant, else nullptr.
  const Tensor* constant(ValueId v) const {
    const Value& value = graph.values[v];
    return value.kind == ValueKind::constant ? &*value.data : nullptr;
  }
  bool is_graph_output(ValueId v) const { return graph_outputs[v]; }
  /// conv_pieces' entry for a node of `graph` (none for a node from elsewhere).
  const std::vector<ChannelPiece>& pieces_of(const Node& node) const { return entry_of(conv_pieces, node); }
  /// sdpa_operands' entry for a node of `graph` (none for a node from elsewhere).
  const std::vector<ValueId>& sdpa_operands_of(const Node& node) const { return entry_of(sdpa_operands, node); }

 private:
  template <class T>
  const std::vector<T>& entry_of(const std::vector<std::vector<T>>* table, const Node& node) const {
    static const std::vector<T> none;
    const std::less<const Node*> before;
    const Node* first = graph.nodes.data();
    if (!table || before(&node, first) || !before(&node, first + table->size())) return none;
    return (*table)[static_cast<std::size_t>(&node - first)];
  }
};

/// The executor kernel of an op that is not elementwise, declared beside its
/// family's kernels (exec/kernels/<family>.hpp):
///
///   template <> struct KernelFor<Softmax> {
///     static std::unique_ptr<Kernel> make(const PlanContext&, const Node&, const Softmax&);
///   };
///
/// Elementwise ops declare a block function instead (BlockFor<Op>, in
/// exec/kernels/elementwise.hpp) and run in fused groups. exec/dispatch.hpp
/// checks every registry op has one or the other, naming the op when not.
template <class Op>
struct KernelFor;

}  // namespace rml::exec
