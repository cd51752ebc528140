// rml::Executor: compile a model once, run it many times.
//
// Thread safety: a compiled Executor is immutable. Each call to `run` takes a
// run context (arena, scratch, value table, worker threads) from a pool of
// idle contexts, making one only when none is idle, and returns it after.
// So concurrent calls from several threads are safe and never share memory,
// and a caller that runs again reuses its context: after the first call,
// `run` allocates nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rml/core/split.hpp"
#include "rml/exec/model.hpp"

namespace rml {

namespace exec {
struct Plan;
}

struct ExecutorOptions {
  int threads = 1;   ///< threads per run, the caller's included
  bool fuse = true;  ///< fuse elementwise chains and matmul/conv epilogues
};

/// A way to stop a run between kernels: a flag another thread sets, or a
/// deadline. A stopped run throws rml::Error; its output buffers hold partial
/// results.
struct RunControl {
  const std::atomic<bool>* cancel = nullptr;
  std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt;
};

/// A caller's buffer for one input: exactly the input's bytes, row-major.
struct InputBuffer {
  const void* data;
  std::size_t bytes;
};
/// A caller's buffer that receives one output.
struct OutputBuffer {
  void* data;
  std::size_t bytes;
};

class Executor {
 public:
  explicit Executor(const Model& model, ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const Model& model() const { return model_; }
  const ExecutorOptions& options() const { return options_; }
  /// Peak bytes of the arena holding intermediate values (per run context).
  std::size_t arena_bytes() const;
  /// Memory the plan holds in prepacked weights (on top of the model's constants).
  std::size_t packed_weight_bytes() const;
  /// What a run needs besides the model and its inputs: packed weights, a
  /// run context's arena and scratch, and the outputs (checked against
  /// LoadOptions::max_memory_bytes when the plan is made).
  /// Saturates at 2^64 - 1 (over any limit) rather than wrapping.
  std::uint64_t working_memory_bytes() const;
  /// The compiled plan (complete once rml/exec/plan.hpp is included).
  const exec::Plan& plan() const { return *plan_; }

  /// Zero-copy run: inputs and outputs in graph order, in the caller's memory.
  /// `control` may stop it between kernels.
  void run(std::span<const InputBuffer> inputs, std::span<const OutputBuffer> outputs,
           const RunControl& control = {}) const;

  /// Named tensors in, named tensors out (allocates the outputs).
  TensorMap run(const TensorMap& inputs, const RunControl& control = {}) const;

  /// Seconds each kernel of the plan takes, in plan order: the median over
  /// `runs` whole runs (after one warm-up), each kernel timed in place within
  /// the run, so caches hold what a real run leaves in them.
  std::vector<double> profile(const TensorMap& inputs, int runs) const;

  /// The plan, for `rml info`: kernels, fused groups, arena bytes.
  std::string describe() const;

 private:
  struct Context;  // everything one run needs; reused across runs
  struct Lease;

  void run_timed(std::span<const InputBuffer> inputs, std::span<const OutputBuffer> outputs,
                 std::span<double> kernel_seconds, const RunControl& control = {}) const;
  template <class Run>
  TensorMap run_buffers(const TensorMap& inputs, Run&& run) const;
  std::unique_ptr<Context> acquire() const;
  void release(std::unique_ptr<Context> context) const;
  void check_bytes(const char* what, const TensorSpec& spec, std::size_t bytes) const;

  Model model_;
  ExecutorOptions options_;
  std::unique_ptr<const exec::Plan> plan_;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<Context>> idle_;
};

}  // namespace rml

#ifndef RML_DECLARATIONS_ONLY
#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

#include "rml/exec/plan.hpp"

namespace rml {

RML_SPLIT_INLINE Executor::Executor(const Model& model, ExecutorOptions options)
    : model_(model),
      options_(options),
      plan_(std::make_unique<const exec::Plan>(exec::compile_plan(model, options.fuse))) {
  if (options_.threads < 1) fail(ErrorCode::invalid_argument, "ExecutorOptions::threads must be at least 1, got ", options_.threads);
  check_limit(working_memory_bytes(), model.limits().max_memory_bytes, "the executor's working memory in bytes",
              "LoadOptions::max_memory_bytes");
  idle_.reserve(64);
}

RML_SPLIT_INLINE Executor::~Executor() = default;

RML_SPLIT_INLINE std::size_t Executor::arena_bytes() const { return plan_->arena_bytes; }
RML_SPLIT_INLINE std::size_t Executor::packed_weight_bytes() const { return plan_->packed_weight_bytes; }

RML_SPLIT_INLINE std::uint64_t Executor::working_memory_bytes() const {
  std::uint64_t total = 0;
  auto add = [&total](std::uint64_t count, std::uint64_t size) {
    std::uint64_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes) || __builtin_add_overflow(total, bytes, &total))
      total = std::numeric_limits<std::uint64_t>::max();
  };
  for (const TensorSpec& out : model_.outputs()) add(std::uint64_t(out.type.elements()), dtype_size(out.type.dtype));
  add(plan_->packed_weight_bytes, 1);
  add(plan_->arena_bytes, 1);
  add(plan_->shared_scratch_bytes, 1);
  add(plan_->thread_scratch_stride, std::uint64_t(options_.threads));
  return total;
}

RML_SPLIT_INLINE void Executor::run(std::span<const InputBuffer> inputs, std::span<const OutputBuffer> outputs,
                                    const RunControl& control) const {
  run_timed(inputs, outputs, {}, control);
}

RML_SPLIT_INLINE TensorMap Executor::run(const TensorMap& inputs, const RunControl& control) const {
  return run_buffers(inputs, [&](auto in, auto out) { run(in, out, control); });
}

RML_SPLIT_INLINE std::vector<double> Executor::profile(const TensorMap& inputs, int runs) const {
  if (runs < 1) fail(ErrorCode::invalid_argument, "profile: runs must be at least 1, got ", runs);
  std::vector<std::vector<double>> samples(plan_->kernels.size());
  std::vector<double> seconds(plan_->kernels.size());
  for (int r = 0; r <= runs; ++r) {
    run_buffers(inputs, [&](auto in, auto out) { run_timed(in, out, seconds); });
    if (r == 0) continue;  // warm-up
    for (std::size_t k = 0; k < seconds.size(); ++k) samples[k].push_back(seconds[k]);
  }
  std::vector<double> medians;
  for (auto& s : samples) {
    std::nth_element(s.begin(), s.begin() + s.size() / 2, s.end());
    medians.push_back(s[s.size() / 2]);
  }
  return medians;
}

RML_SPLIT_INLINE std::string Executor::describe() const {
  const exec::Plan& plan = *plan_;
  std::ostringstream out;
  out << "plan: " << plan.kernels.size() << " kernels for " << model_.graph().nodes.size() << " nodes, "
      << plan.fused_groups << " fused groups, arena " << plan.arena_bytes << " bytes, packed weights "
      << plan.packed_weight_bytes << " bytes, threads " << options_.threads << (options_.fuse ? "" : ", unfused")
      << ", vector code " << exec::isa_name(exec::active_isa()) << "\n";
  for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
    out << "  " << k << ": " << plan.kernels[k]->describe() << "  [node";
    for (std::size_t n : plan.kernels[k]->nodes) out << " " << n;
    out << "]\n";
  }
  return out.str();
}

struct Executor::Context {
  Tensor arena, shared_scratch, thread_scratch;  // 64-byte aligned byte stores
  std::vector<std::byte*> slots;
  std::unique_ptr<exec::ThreadPool> pool;
};

struct Executor::Lease {
  const Executor& owner;
  std::unique_ptr<Context> context;
  explicit Lease(const Executor& e) : owner(e), context(e.acquire()) {}
  ~Lease() { owner.release(std::move(context)); }
};

/// Runs the kernels; with `kernel_seconds` (one per kernel), times each.
RML_SPLIT_INLINE void Executor::run_timed(std::span<const InputBuffer> inputs, std::span<const OutputBuffer> outputs,
                                          std::span<double> kernel_seconds, const RunControl& control) const {
  const exec::Plan& plan = *plan_;
  const Graph& g = model_.graph();
  if (inputs.size() != g.inputs.size()) fail(ErrorCode::bad_run_inputs, "run: the model has ", g.inputs.size(), " inputs, got ", inputs.size());
  if (outputs.size() != g.outputs.size()) fail(ErrorCode::bad_run_inputs, "run: the model has ", g.outputs.size(), " outputs, got ", outputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) check_bytes("input", model_.inputs()[i], inputs[i].bytes);
  for (std::size_t i = 0; i < outputs.size(); ++i) check_bytes("output", model_.outputs()[i], outputs[i].bytes);
  Lease lease(*this);
  Context& c = *lease.context;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    c.slots[g.inputs[i].value] = const_cast<std::byte*>(static_cast<const std::byte*>(inputs[i].data));
  for (std::size_t i = outputs.size(); i-- > 0;) c.slots[g.outputs[i].value] = static_cast<std::byte*>(outputs[i].data);
  for (ValueId alias : plan.run_aliases) c.slots[alias] = c.slots[plan.alias_of[alias]];
  exec::RunContext run{c.slots.data(), c.pool.get(), c.shared_scratch.raw(), c.thread_scratch.raw(),
                       plan.thread_scratch_stride};
  if (control.cancel || control.deadline) {
    for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
      if (control.cancel && control.cancel->load(std::memory_order_relaxed))
        fail(ErrorCode::run_cancelled, "run cancelled after ", k, " of ", plan.kernels.size(), " kernels");
      if (control.deadline && std::chrono::steady_clock::now() >= *control.deadline)
        fail(ErrorCode::run_deadline, "run stopped at its deadline after ", k, " of ", plan.kernels.size(), " kernels");
      plan.kernels[k]->run(run);
    }
  } else if (kernel_seconds.empty()) {
    for (const auto& kernel : plan.kernels) kernel->run(run);
  } else {
    for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
      const auto start = std::chrono::steady_clock::now();
      plan.kernels[k]->run(run);
      kernel_seconds[k] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
  }
  // A value named as several outputs was computed into the first buffer.
  for (std::size_t i = 0; i < outputs.size(); ++i)
    if (c.slots[g.outputs[i].value] != outputs[i].data && outputs[i].bytes)
      std::memcpy(outputs[i].data, c.slots[g.outputs[i].value], outputs[i].bytes);
}

/// Calls run(in, out) with buffers over `inputs` and newly allocated outputs.
template <class Run>
TensorMap Executor::run_buffers(const TensorMap& inputs, Run&& run) const {
  check_inputs(model_.graph(), inputs);
  std::vector<InputBuffer> in;
  for (const TensorSpec& i : model_.inputs()) {
    const Tensor& t = inputs.at(i.name);
    in.push_back({t.raw(), t.bytes()});
  }
  TensorMap result;
  std::vector<OutputBuffer> out;
  for (const TensorSpec& o : model_.outputs()) {
    Tensor& t = result.emplace(o.name, Tensor(o.type)).first->second;
    out.push_back({t.raw(), t.bytes()});
  }
  run(std::span<const InputBuffer>(in), std::span<const OutputBuffer>(out));
  return result;
}

RML_SPLIT_INLINE std::unique_ptr<Executor::Context> Executor::acquire() const {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  const exec::Plan& plan = *plan_;
  // Byte stores as f32 tensors: 64-byte aligned, rounded up to whole floats.
  auto bytes_buffer = [](std::size_t bytes) { return Tensor(DType::f32, {static_cast<std::int64_t>((bytes + 3) / 4)}); };
  auto c = std::make_unique<Context>();
  c->arena = bytes_buffer(plan.arena_bytes);
  c->shared_scratch = bytes_buffer(plan.shared_scratch_bytes);
  c->thread_scratch = bytes_buffer(plan.thread_scratch_stride * static_cast<std::size_t>(options_.threads));
  c->pool = std::make_unique<exec::ThreadPool>(options_.threads);
  const Graph& g = model_.graph();
  c->slots.assign(g.values.size(), nullptr);
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    if (plan.storage[v] == exec::Storage::arena) c->slots[v] = c->arena.raw() + plan.offset[v];
    if (plan.storage[v] == exec::Storage::constant) c->slots[v] = const_cast<std::byte*>(g.values[v].data->raw());
  }
  // Values sharing an arena buffer (in place) point at it from the start.
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    ValueId root = static_cast<ValueId>(v);
    while (plan.storage[root] == exec::Storage::alias) root = plan.alias_of[root];
    if (root != v && plan.storage[root] == exec::Storage::arena)
      c->slots[v] = c->arena.raw() + plan.offset[root] + exec::bytes_into_root(plan, static_cast<ValueId>(v));
  }
  return c;
}

RML_SPLIT_INLINE void Executor::release(std::unique_ptr<Context> context) const {
  std::lock_guard lock(mutex_);
  idle_.push_back(std::move(context));
}

RML_SPLIT_INLINE void Executor::check_bytes(const char* what, const TensorSpec& spec, std::size_t bytes) const {
  const std::size_t expected = static_cast<std::size_t>(spec.type.elements()) * dtype_size(spec.type.dtype);
  if (bytes != expected)
    fail(ErrorCode::bad_run_inputs, "run: ", what, " '", spec.name, "' is ", to_string(spec.type), " (", expected,
         " bytes), the buffer has ", bytes, " bytes");
}

}  // namespace rml
#endif
