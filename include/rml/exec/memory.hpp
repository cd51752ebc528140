// Where each value lives at run time: graph inputs and outputs in the caller's
// buffers (and a value reshaped into an output, in that output's buffer),
// constants in the model, reshapes and epilogue products as aliases (and a
// concat's inputs, where they can be computed there, as views into its output), every
// other intermediate in one arena laid out from lifetimes (greedy best-fit,
// exec/arena.hpp), with elementwise groups written in place where nothing
// reads their input afterwards; plus the scratch the kernels need.
#pragma once

#include "rml/exec/arena.hpp"
#include "rml/exec/fusion.hpp"

namespace rml::exec {

/// Where a value's memory comes from at run time.
enum class Storage : std::uint8_t { arena, constant, input, output, alias };

struct MemoryLayout {
  std::vector<Storage> storage;          // per value
  std::vector<std::size_t> offset;       // arena offset, per arena value
  std::vector<ValueId> alias_of;         // per alias value: the value whose memory it shares
  std::vector<std::int64_t> alias_offset;  // per alias value: where in alias_of's memory it starts, in bytes
  std::vector<ValueId> run_aliases;      // alias values to resolve at the start of each run, in order
  std::size_t arena_bytes = 0, shared_scratch_bytes = 0, thread_scratch_stride = 0;
};

namespace memory_detail {

inline std::vector<Storage> initial_storage(const Graph& graph, const GraphUses& uses) {
  std::vector<Storage> storage(graph.values.size(), Storage::arena);
  for (std::size_t v = 0; v < graph.values.size(); ++v) {
    if (graph.values[v].kind == ValueKind::constant) storage[v] = Storage::constant;
    if (graph.values[v].kind == ValueKind::input) storage[v] = Storage::input;
    if (uses.is_output[v]) storage[v] = Storage::output;
  }
  return storage;
}

/// Reshapes that re-label their input, and products written straight into
/// their epilogue's output.
inline void mark_aliases(const Graph& graph, const Fusion& fusion, const std::vector<std::unique_ptr<Kernel>>& kernels,
                         MemoryLayout& memory) {
  for (const auto& kernel : kernels) {
    if (kernel->aliases_input) {
      const ValueId out = kernel->writes[0];
      memory.storage[out] = Storage::alias;
      memory.alias_of[out] = kernel->reads[0];
      memory.alias_offset[out] = 4 * kernel->alias_offset;
    }
    for (std::size_t m : kernel->nodes)
      if (fusion.is_epilogue_producer(m)) {
        const ValueId product = graph.nodes[m].outputs[0];
        memory.storage[product] = Storage::alias;
        memory.alias_of[product] = kernel->writes[0];
        memory.run_aliases.push_back(product);
      }
  }
}

/// A reshape into a graph output copies its input unless that input is
/// computed in the output's buffer: an intermediate with its own arena
/// memory can be, since the output buffer outlives every reader. Resolved
/// first at each run, before the aliases that lead to it.
inline void compute_in_output_buffers(const std::vector<std::unique_ptr<Kernel>>& kernels, MemoryLayout& memory) {
  for (const auto& kernel : kernels) {
    if (!kernel->copies_input_to_output) continue;
    const ValueId in = kernel->reads[0], out = kernel->writes[0];
    if (memory.storage[in] != Storage::arena || memory.storage[out] != Storage::output) continue;
    memory.storage[in] = Storage::alias;
    memory.alias_of[in] = out;
    memory.run_aliases.insert(memory.run_aliases.begin(), in);
  }
}

/// A concat's inputs computed in place in its output, so that the concat
/// copies nothing for them (CopyKernel skips a copy onto itself):
/// - where every axis before the concat axis has extent 1 (as at batch 1),
///   each input fills one contiguous run of the output, and any input with
///   arena memory of its own is placed there. Safe with more readers: the
///   concat's output lives from its first input's write to its last read,
///   and nothing writes in place over memory that lives on;
/// - otherwise an input fills rows of the output, rows apart, and is placed
///   when the concat is its only reader and the kernel computing it agrees
///   to write its rows that far apart (Kernel::write_rows_apart: a matmul
///   with its epilogue, as the experts of a mixture concatenated along
///   features).
/// Through a reshape (the same bytes, the same rows when it keeps the row
/// length) its input is placed instead.
inline void concat_inputs_in_place(const Graph& graph, const GraphUses& uses,
                                   const std::vector<std::unique_ptr<Kernel>>& kernels, MemoryLayout& memory) {
  std::vector<Kernel*> writer(graph.values.size(), nullptr);
  for (const auto& kernel : kernels)
    for (ValueId v : kernel->writes) writer[v] = kernel.get();
  for (const auto& kernel : kernels) {
    if (kernel->nodes.size() != 1 || !holds<Concat>(graph.nodes[kernel->nodes[0]].op)) continue;
    const Node& node = graph.nodes[kernel->nodes[0]];
    const ValueId out = node.outputs[0];
    const Shape& y = graph.type(out).shape;
    if (memory.storage[out] != Storage::arena || element_count(y) == 0) continue;
    const std::size_t axis = normalize_axis(get<Concat>(node.op).axis, y.size(), "concat");
    const bool one_run_each =
        std::all_of(y.begin(), y.begin() + static_cast<std::ptrdiff_t>(axis), [](std::int64_t d) { return d == 1; });
    const std::int64_t inner = element_count(Shape(y.begin() + static_cast<std::ptrdiff_t>(axis) + 1, y.end()));
    std::int64_t at = 0;
    for (ValueId v : node.inputs) {
      const std::int64_t bytes_at = 4 * at * inner, row_length = graph.type(v).shape[axis] * inner;
      at += graph.type(v).shape[axis];
      if (std::count(node.inputs.begin(), node.inputs.end(), v) > 1) continue;  // one place each
      ValueId target = v;
      bool private_rows = uses.single_private_reader(v);
      for (std::int64_t p; memory.storage[target] == Storage::alias && (p = uses.producer[target]) >= 0 &&
                           holds<Reshape>(graph.nodes[p].op) && memory.alias_of[target] == graph.nodes[p].inputs[0];) {
        target = memory.alias_of[target];
        private_rows = private_rows && uses.single_private_reader(target);
      }
      if (memory.storage[target] != Storage::arena) continue;
      if (!one_run_each) {
        const Shape& t = graph.type(target).shape;
        if (!private_rows || t.empty() || t.back() != row_length || !writer[target] ||
            !writer[target]->write_rows_apart(target, row_length, y[axis] * inner))
          continue;
      }
      memory.storage[target] = Storage::alias;
      memory.alias_of[target] = out;
      memory.alias_offset[target] = bytes_at;
    }
  }
}

}  // namespace memory_detail

/// How far into its root's memory a value starts, in bytes (nonzero for views).
inline std::int64_t bytes_into_root(const MemoryLayout& memory, ValueId v) {
  std::int64_t bytes = 0;
  for (; memory.storage[v] == Storage::alias; v = memory.alias_of[v]) bytes += memory.alias_offset[v];
  return bytes;
}

inline MemoryLayout plan_memory(const Graph& graph, const GraphUses& uses, const Fusion& fusion,
                                const std::vector<std::unique_ptr<Kernel>>& kernels) {
  const std::size_t values = graph.values.size();
  MemoryLayout memory;
  memory.storage = memory_detail::initial_storage(graph, uses);
  memory.alias_of.assign(values, 0);
  memory.alias_offset.assign(values, 0);
  memory_detail::mark_aliases(graph, fusion, kernels, memory);
  memory_detail::compute_in_output_buffers(kernels, memory);
  memory_detail::concat_inputs_in_place(graph, uses, kernels, memory);
  auto root = [&](ValueId v) {
    while (memory.storage[v] == Storage::alias) v = memory.alias_of[v];
    return v;
  };

  // Lifetimes in kernel steps, of each value's root.
  constexpr std::size_t never = ~std::size_t{0};
  std::vector<std::size_t> first(values, never), last(values, 0);
  for (std::size_t step = 0; step < kernels.size(); ++step) {
    for (ValueId v : kernels[step]->writes) {
      const ValueId r = root(v);
      if (first[r] == never) first[r] = step;
      last[r] = std::max(last[r], step);
    }
    for (ValueId v : kernels[step]->reads) last[root(v)] = std::max(last[root(v)], step);
  }
  // Values read through aliases keep their root alive too.
  for (std::size_t step = 0; step < kernels.size(); ++step)
    for (std::size_t m : kernels[step]->nodes)
      for (ValueId v : graph.nodes[m].inputs) last[root(v)] = std::max(last[root(v)], step);

  // In place: an elementwise group may write its output over a leaf of the
  // same shape that nothing reads afterwards (each block reads its inputs
  // before writing the same positions).
  for (std::size_t step = 0; step < kernels.size(); ++step) {
    const auto* group = dynamic_cast<const ElementwiseKernel*>(kernels[step].get());
    if (!group) continue;
    const ValueId out = group->group().output();
    if (memory.storage[out] != Storage::arena) continue;
    const auto& leaves = group->group().leaves();
    for (const auto& leaf : leaves) {
      const ValueId r = root(leaf.value);
      if (memory.storage[r] != Storage::arena || r == out || last[r] != step || !leaf.plain() ||
          leaf.shape != graph.type(out).shape)
        continue;
      // Not while another leaf reads this memory through a view at an offset,
      // or in place as a slice (at other positions than the block written).
      const bool views_of_r = std::any_of(leaves.begin(), leaves.end(), [&](const auto& l) {
        return root(l.value) == r && (bytes_into_root(memory, l.value) != 0 || !l.plain());
      });
      if (views_of_r) continue;
      memory.storage[out] = Storage::alias;
      memory.alias_of[out] = r;
      last[r] = std::max(last[r], last[out]);
      break;
    }
  }

  std::vector<ValueId> buffers;
  std::vector<Lifetime> lifetimes;
  for (ValueId v = 0; v < values; ++v)
    if (memory.storage[v] == Storage::arena && first[v] != never) {
      buffers.push_back(v);
      lifetimes.push_back({static_cast<std::size_t>(element_count(graph.type(v).shape)) * 4, first[v], last[v]});
    }
  const ArenaLayout arena = plan_arena(lifetimes);
  memory.offset.assign(values, 0);
  for (std::size_t i = 0; i < buffers.size(); ++i) memory.offset[buffers[i]] = arena.offsets[i];
  memory.arena_bytes = arena.bytes;

  std::size_t thread_bytes = 0;
  for (const auto& kernel : kernels) {
    memory.shared_scratch_bytes = std::max(memory.shared_scratch_bytes, align_up(kernel->shared_scratch_bytes));
    thread_bytes = std::max(thread_bytes, kernel->thread_scratch_bytes);
  }
  memory.thread_scratch_stride = align_up(thread_bytes);
  return memory;
}

}  // namespace rml::exec
