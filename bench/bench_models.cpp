// Benchmarks through rml::Executor: models built with rml::Builder (seeded
// random weights), compiled once, run with caller-owned buffers through the
// zero-copy run(span<InputBuffer>, span<OutputBuffer>), so the timed loop
// allocates nothing. One untimed run first creates the run context.
//
// Models and executors are built lazily and cached: Google Benchmark calls a
// benchmark function several times (iteration-count probes, repetitions), and
// building a model evaluates every op on the reference kernels once.
//
// Also here: the per-kernel profile (rml_bench --rml_profile).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "bench_common.hpp"
#include "rml/rml.hpp"

namespace {

using rml::Builder;
using rml::DType;
using rml::Shape;
using rml::Tensor;
using rml::ValueId;
using rml_bench::flop_counters;
using rml_bench::random_floats;

// ---------------------------------------------------------------------------
// Building and running

std::int64_t elements(const Shape& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

/// A constant of seeded uniform values in [-scale, scale] (scale defaults to
/// 1/sqrt(fan_in), fan_in = the first dimension, so activations stay O(1)).
ValueId weight(Builder& b, const Shape& shape, std::uint32_t seed, float scale = 0) {
  if (scale == 0) scale = 1.0f / std::sqrt(static_cast<float>(shape.empty() ? 1 : shape.front()));
  return b.constant(Tensor::from<float>(shape, random_floats(static_cast<std::size_t>(elements(shape)), seed, scale)));
}

ValueId input(Builder& b, const std::string& name, const Shape& shape) {
  return b.input(name, rml::TensorType{DType::f32, shape});
}

/// A model to build: a cache key and the function that builds it.
struct ModelSpec {
  std::string key;
  std::function<void(Builder&)> build;
};

/// A compiled model with its caller-owned input and output buffers.
struct Prepared {
  std::unique_ptr<rml::Executor> executor;
  std::vector<std::vector<float>> input_data, output_data;
  std::vector<rml::InputBuffer> inputs;
  std::vector<rml::OutputBuffer> outputs;

  void run() const { executor->run(inputs, outputs); }
  std::size_t kernels() const { return executor->plan().kernels.size(); }
};

/// The model (built once), compiled for `threads` and `fuse` (once).
const Prepared& prepare(const ModelSpec& spec, int threads, bool fuse = true) {
  static std::map<std::string, std::shared_ptr<rml::Model>> models;
  static std::map<std::string, std::unique_ptr<Prepared>> prepared;
  const std::string full_key = spec.key + "/threads:" + std::to_string(threads) + (fuse ? "/fused" : "/unfused");
  if (auto it = prepared.find(full_key); it != prepared.end()) return *it->second;
  auto& model = models[spec.key];
  if (!model) {
    Builder b;
    spec.build(b);
    model = std::make_shared<rml::Model>(b.graph());
  }
  auto p = std::make_unique<Prepared>();
  p->executor = std::make_unique<rml::Executor>(*model, rml::ExecutorOptions{.threads = threads, .fuse = fuse});
  const rml::Graph& g = model->graph();
  std::uint32_t seed = 1000;
  for (const rml::NamedValue& in : g.inputs) {
    p->input_data.push_back(random_floats(static_cast<std::size_t>(g.type(in.value).elements()), seed++));
    p->inputs.push_back({p->input_data.back().data(), p->input_data.back().size() * sizeof(float)});
  }
  for (const rml::NamedValue& out : g.outputs) {
    p->output_data.emplace_back(static_cast<std::size_t>(g.type(out.value).elements()));
    p->outputs.push_back({p->output_data.back().data(), p->output_data.back().size() * sizeof(float)});
  }
  p->run();  // creates the run context: later runs allocate nothing
  return *prepared.emplace(full_key, std::move(p)).first->second;
}

void run_loop(benchmark::State& state, const Prepared& p) {
  const rml_bench::LoadProbe probe;
  for (auto _ : state) {
    p.run();
    benchmark::ClobberMemory();
  }
  probe.report(state);
  state.counters["kernels"] = static_cast<double>(p.kernels());
}

// ---------------------------------------------------------------------------
// The models

/// x [M, K] @ constant W [K, N] (prepacked at compile time).
ModelSpec matmul_model(std::int64_t M, std::int64_t K, std::int64_t N) {
  return {"matmul/" + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N), [=](Builder& b) {
            const ValueId x = input(b, "x", {M, K});
            b.output("y", b.op(rml::MatMul{}, {x, weight(b, {K, N}, 2)}));
          }};
}

ValueId linear(Builder& b, ValueId x, std::int64_t in, std::int64_t out, std::uint32_t seed) {
  const ValueId y = b.op(rml::MatMul{}, {x, weight(b, {in, out}, seed)});
  return b.op(rml::Add{}, {y, weight(b, {out}, seed + 1, 0.1f)});
}

/// MLP 784 -> 512 -> 256 -> 10 with ReLU.
ModelSpec mlp_model(std::int64_t batch) {
  return {"mlp/batch:" + std::to_string(batch), [=](Builder& b) {
            ValueId h = input(b, "x", {batch, 784});
            h = b.op(rml::Relu{}, {linear(b, h, 784, 512, 10)});
            h = b.op(rml::Relu{}, {linear(b, h, 512, 256, 20)});
            b.output("logits", linear(b, h, 256, 10, 30));
          }};
}
double mlp_flops(std::int64_t batch) { return 2.0 * double(batch) * (784 * 512 + 512 * 256 + 256 * 10); }

constexpr std::int64_t kSeq = 64, kDim = 256, kHeads = 4, kHeadDim = kDim / kHeads, kHidden = 1024;

/// Pre-norm transformer block, batch 1:
/// x1 = x + proj(sdpa(q, k, v)) on layer_norm(x); y = x1 + MLP_gelu(layer_norm(x1)).
ModelSpec transformer_model() {
  return {"transformer_block", [](Builder& b) {
            const ValueId x = input(b, "x", {1, kSeq, kDim});
            auto norm = [&](ValueId v, std::uint32_t seed) {
              std::vector<float> gain = random_floats(kDim, seed, 0.1f);
              for (float& g : gain) g += 1.0f;
              return b.op(rml::LayerNorm{},
                          {v, b.constant(Tensor::from<float>({kDim}, gain)), weight(b, {kDim}, seed + 1, 0.1f)});
            };
            auto split_heads = [&](ValueId v) {  // [1, seq, dim] -> [1, heads, seq, head_dim]
              const ValueId r = b.op(rml::Reshape{.shape = {1, kSeq, kHeads, kHeadDim}}, {v});
              return b.op(rml::Transpose{.perm = {0, 2, 1, 3}}, {r});
            };
            const ValueId h = norm(x, 100);
            const ValueId q = split_heads(linear(b, h, kDim, kDim, 110));
            const ValueId k = split_heads(linear(b, h, kDim, kDim, 120));
            const ValueId v = split_heads(linear(b, h, kDim, kDim, 130));
            const ValueId attention = b.op(rml::Sdpa{}, {q, k, v});
            const ValueId merged = b.op(rml::Reshape{.shape = {1, kSeq, kDim}},
                                        {b.op(rml::Transpose{.perm = {0, 2, 1, 3}}, {attention})});
            const ValueId x1 = b.op(rml::Add{}, {x, linear(b, merged, kDim, kDim, 140)});
            const ValueId m = b.op(rml::Gelu{}, {linear(b, norm(x1, 150), kDim, kHidden, 160)});
            b.output("y", b.op(rml::Add{}, {x1, linear(b, m, kHidden, kDim, 170)}));
          }};
}
double transformer_flops() {
  const double projections = 2.0 * kSeq * (4.0 * kDim * kDim + 2.0 * kDim * kHidden);
  const double attention = 2.0 * 2.0 * kHeads * kSeq * kSeq * kHeadDim;
  return projections + attention;
}

/// x = x + c, `nodes` times, on shape [4].
ModelSpec add_chain_model(std::int64_t nodes) {
  return {"add_chain/" + std::to_string(nodes), [=](Builder& b) {
            ValueId x = input(b, "x", {4});
            const ValueId c = weight(b, {4}, 7, 0.01f);
            for (std::int64_t i = 0; i < nodes; ++i) x = b.op(rml::Add{}, {x, c});
            b.output("y", x);
          }};
}

ValueId conv_relu(Builder& b, ValueId x, std::int64_t in, std::int64_t out, std::uint32_t seed) {
  const ValueId w = weight(b, {out, in, 3, 3}, seed, 1.0f / std::sqrt(float(in * 9)));
  return b.op(rml::Relu{}, {b.op(rml::Conv2d{.pads = {1, 1, 1, 1}}, {x, w, weight(b, {out}, seed + 1, 0.1f)})});
}

/// The CNN bench model's features: [N,1,28,28] -> conv 1->16 + relu -> max_pool 2
/// -> conv 16->32 + relu -> max_pool 2 -> [N,32,7,7].
ModelSpec cnn_model(std::int64_t batch) {
  return {"cnn/batch:" + std::to_string(batch), [=](Builder& b) {
            const rml::MaxPool2d pool{.kernel = {2, 2}, .strides = {2, 2}};
            ValueId h = input(b, "x", {batch, 1, 28, 28});
            h = b.op(pool, {conv_relu(b, h, 1, 16, 200)});
            h = b.op(pool, {conv_relu(b, h, 16, 32, 210)});
            b.output("features", h);
          }};
}
double cnn_flops(std::int64_t batch) { return 2.0 * batch * (16.0 * 1 * 9 * 28 * 28 + 32.0 * 16 * 9 * 14 * 14); }

/// One 3x3 pad-1 conv + bias + relu: [N, C, S, S] -> [N, O, S, S].
ModelSpec conv_model(std::int64_t batch, std::int64_t channels, std::int64_t size, std::int64_t out) {
  return {"conv/" + std::to_string(batch) + "x" + std::to_string(channels) + "x" + std::to_string(size) + "->" +
              std::to_string(out),
          [=](Builder& b) {
            b.output("y", conv_relu(b, input(b, "x", {batch, channels, size, size}), channels, out, 300));
          }};
}

/// One 3x3 pad-1 depthwise conv + bias + relu (a mobile net's block):
/// [N, C, S, S] -> [N, C, S/stride, S/stride].
ModelSpec depthwise_model(std::int64_t batch, std::int64_t channels, std::int64_t size, std::int64_t stride) {
  return {"depthwise/" + std::to_string(batch) + "x" + std::to_string(channels) + "x" + std::to_string(size) + "/s" +
              std::to_string(stride),
          [=](Builder& b) {
            const ValueId w = weight(b, {channels, 1, 3, 3}, 320, 1.0f / 3);
            const rml::Conv2d op{.strides = {stride, stride}, .pads = {1, 1, 1, 1}, .groups = channels};
            const ValueId x = input(b, "x", {batch, channels, size, size});
            b.output("y", b.op(rml::Relu{}, {b.op(op, {x, w, weight(b, {channels}, 321, 0.1f)})}));
          }};
}

/// sdpa on q, k, v [1, 4, 64, 64] (seq 64, model dim 256, 4 heads).
ModelSpec sdpa_model(bool causal) {
  return {causal ? "sdpa/causal" : "sdpa/full", [=](Builder& b) {
            const Shape shape{1, kHeads, kSeq, kHeadDim};
            b.output("y", b.op(rml::Sdpa{.causal = causal, .scale = std::nullopt},
                               {input(b, "q", shape), input(b, "k", shape), input(b, "v", shape)}));
          }};
}

constexpr std::int64_t kLstmIn = 64, kLstmHidden = 256;

/// LSTM cell: gates = x@Wx + h@Wh + b; i, f, o = sigmoid, g = tanh;
/// c' = f*c + i*g; h' = o*tanh(c').
ModelSpec lstm_model(std::int64_t batch) {
  return {"lstm/batch:" + std::to_string(batch), [=](Builder& b) {
            constexpr std::int64_t H = kLstmHidden;
            const ValueId x = input(b, "x", {batch, kLstmIn});
            const ValueId h = input(b, "h", {batch, H});
            const ValueId c = input(b, "c", {batch, H});
            const ValueId xw = b.op(rml::MatMul{}, {x, weight(b, {kLstmIn, 4 * H}, 400)});
            const ValueId hw = b.op(rml::MatMul{}, {h, weight(b, {H, 4 * H}, 401)});
            const ValueId gates = b.op(rml::Add{}, {b.op(rml::Add{}, {xw, hw}), weight(b, {4 * H}, 402, 0.1f)});
            auto gate = [&](std::int64_t i) {
              return b.op(rml::Slice{.axes = {1}, .starts = {i * H}, .ends = {(i + 1) * H}, .steps = {}}, {gates});
            };
            const ValueId i_gate = b.op(rml::Sigmoid{}, {gate(0)});
            const ValueId f_gate = b.op(rml::Sigmoid{}, {gate(1)});
            const ValueId g_gate = b.op(rml::Tanh{}, {gate(2)});
            const ValueId o_gate = b.op(rml::Sigmoid{}, {gate(3)});
            const ValueId c_next =
                b.op(rml::Add{}, {b.op(rml::Mul{}, {f_gate, c}), b.op(rml::Mul{}, {i_gate, g_gate})});
            b.output("h_next", b.op(rml::Mul{}, {o_gate, b.op(rml::Tanh{}, {c_next})}));
            b.output("c_next", c_next);
          }};
}
double lstm_flops(std::int64_t batch) { return 2.0 * batch * (kLstmIn + kLstmHidden) * 4.0 * kLstmHidden; }

// ---------------------------------------------------------------------------
// 1. GEMM through the executor

void BM_gemm_executor(benchmark::State& state) {
  const std::int64_t M = state.range(0), K = state.range(1), N = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  run_loop(state, prepare(matmul_model(M, K, N), threads));
  flop_counters(state, 2.0 * double(M) * double(K) * double(N), threads);
}
BENCHMARK(BM_gemm_executor)->Apply([](benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "K", "N", "threads"});
  for (int t : {1, 2}) {
    for (std::int64_t n : {64, 256, 512, 1024}) b->Args({n, n, n, t});
    b->Args({64, 512, 512, t});
  }
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
});

// ---------------------------------------------------------------------------
// 2. MLP and transformer block

void BM_mlp(benchmark::State& state) {
  const std::int64_t batch = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  run_loop(state, prepare(mlp_model(batch), threads));
  flop_counters(state, mlp_flops(batch), threads);
}
BENCHMARK(BM_mlp)
    ->ArgNames({"batch", "threads"})
    ->ArgsProduct({{1, 64}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_transformer_block(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  run_loop(state, prepare(transformer_model(), threads));
  flop_counters(state, transformer_flops(), threads);
}
BENCHMARK(BM_transformer_block)->ArgNames({"threads"})->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------
// 3. Per-node overhead

void BM_add_chain(benchmark::State& state) {
  const std::int64_t nodes = state.range(0);
  const bool fuse = state.range(1) != 0;
  run_loop(state, prepare(add_chain_model(nodes), 1, fuse));
  // Seconds per node shown in ns: an inverted rate over nodes x iterations x 1e-9.
  state.counters["ns/node"] = benchmark::Counter(1e-9 * double(nodes) * double(state.iterations()),
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_add_chain)
    ->ArgNames({"nodes", "fuse"})
    ->Args({1000, 0})
    ->Args({1000, 1})
    ->Args({1, 0})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------
// 4. conv2d

void BM_cnn_features(benchmark::State& state) {
  const std::int64_t batch = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  run_loop(state, prepare(cnn_model(batch), threads));
  flop_counters(state, cnn_flops(batch), threads);
}
BENCHMARK(BM_cnn_features)
    ->ArgNames({"batch", "threads"})
    ->ArgsProduct({{1, 8}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void BM_conv3x3(benchmark::State& state) {
  const std::int64_t batch = state.range(0), channels = state.range(1), size = state.range(2), out = state.range(3);
  const int threads = static_cast<int>(state.range(4));
  run_loop(state, prepare(conv_model(batch, channels, size, out), threads));
  flop_counters(state, 2.0 * batch * out * channels * 9.0 * size * size, threads);
}
BENCHMARK(BM_conv3x3)->Apply([](benchmark::internal::Benchmark* b) {
  b->ArgNames({"batch", "C", "HW", "O", "threads"});
  for (int t : {1, 2})
    for (std::int64_t n : {1, 8}) {
      b->Args({n, 3, 32, 32, t});
      b->Args({n, 64, 16, 64, t});
    }
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
});

void BM_depthwise3x3(benchmark::State& state) {
  const std::int64_t batch = state.range(0), channels = state.range(1), size = state.range(2), stride = state.range(3);
  const int threads = static_cast<int>(state.range(4));
  run_loop(state, prepare(depthwise_model(batch, channels, size, stride), threads));
  const double out = double((size - 1) / stride + 1);
  flop_counters(state, 2.0 * batch * channels * 9.0 * out * out, threads);
}
BENCHMARK(BM_depthwise3x3)->Apply([](benchmark::internal::Benchmark* b) {
  b->ArgNames({"batch", "C", "HW", "stride", "threads"});
  for (int t : {1, 2}) {
    b->Args({1, 32, 112, 1, t});
    b->Args({1, 64, 112, 2, t});
    b->Args({1, 256, 14, 1, t});
  }
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
});

// ---------------------------------------------------------------------------
// 5. sdpa

void BM_sdpa(benchmark::State& state) {
  const bool causal = state.range(0) != 0;
  const int threads = static_cast<int>(state.range(1));
  run_loop(state, prepare(sdpa_model(causal), threads));
  // q k^T and p v over the visible (query, key) pairs.
  const double pairs = causal ? kSeq * (kSeq + 1) / 2.0 : double(kSeq * kSeq);
  flop_counters(state, 2.0 * 2.0 * kHeads * pairs * kHeadDim, threads);
}
BENCHMARK(BM_sdpa)
    ->ArgNames({"causal", "threads"})
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------
// 6. LSTM cell

void BM_lstm_cell(benchmark::State& state) {
  const std::int64_t batch = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  run_loop(state, prepare(lstm_model(batch), threads));
  flop_counters(state, lstm_flops(batch), threads);
}
BENCHMARK(BM_lstm_cell)
    ->ArgNames({"batch", "threads"})
    ->ArgsProduct({{1, 8}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------
// 7. The thread pool's fork-join: parallel_for over 2 chunks that each spin
// for `work` microseconds. With 2 threads, ideal wall time = work; the excess
// is what waking the worker and joining cost.

void BM_pool_fork_join(benchmark::State& state) {
  const auto work = std::chrono::microseconds(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  rml::exec::ThreadPool pool(threads);
  const rml_bench::LoadProbe probe;
  for (auto _ : state) {
    pool.parallel_for(2, 1, [&](std::int64_t begin, std::int64_t end, int) {
      for (std::int64_t i = begin; i < end; ++i) {
        const auto until = std::chrono::steady_clock::now() + work;
        while (std::chrono::steady_clock::now() < until) {
        }
      }
    });
  }
  probe.report(state);
}
BENCHMARK(BM_pool_fork_join)
    ->ArgNames({"work_us", "threads"})
    ->ArgsProduct({{0, 20, 100}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------
// --rml_profile: every kernel of a plan timed on its own.
//
// The executor's run context is private, so this rebuilds the same one from
// the public Plan (arena offsets, scratch sizes, aliases) the way
// Executor::acquire and Executor::run do, and times each Kernel::run alone.

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class Fn>
double median_us(Fn&& fn) {
  constexpr int samples = 31, reps = 20;
  std::vector<double> t;
  for (int s = 0; s < samples; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) fn();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps);
  }
  return median(t);
}

void profile(const std::string& title, const ModelSpec& spec, int threads) {
  const Prepared& p = prepare(spec, threads);
  const rml::exec::Plan& plan = p.executor->plan();
  const rml::Graph& g = p.executor->model().graph();
  auto bytes_buffer = [](std::size_t bytes) { return Tensor(DType::f32, {static_cast<std::int64_t>((bytes + 3) / 4)}); };
  Tensor arena = bytes_buffer(plan.arena_bytes), shared = bytes_buffer(plan.shared_scratch_bytes),
         per_thread = bytes_buffer(plan.thread_scratch_stride * static_cast<std::size_t>(threads));
  rml::exec::ThreadPool pool(threads);
  std::vector<std::byte*> slots(g.values.size(), nullptr);
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    if (plan.storage[v] == rml::exec::Storage::arena) slots[v] = arena.raw() + plan.offset[v];
    if (plan.storage[v] == rml::exec::Storage::constant) slots[v] = const_cast<std::byte*>(g.values[v].data->raw());
  }
  for (std::size_t i = 0; i < g.inputs.size(); ++i)
    slots[g.inputs[i].value] = const_cast<std::byte*>(static_cast<const std::byte*>(p.inputs[i].data));
  for (std::size_t i = 0; i < g.outputs.size(); ++i)
    slots[g.outputs[i].value] = static_cast<std::byte*>(p.outputs[i].data);
  for (ValueId alias : plan.run_aliases) slots[alias] = slots[plan.alias_of[alias]];
  rml::exec::RunContext ctx{slots.data(), &pool, shared.raw(), per_thread.raw(), plan.thread_scratch_stride};
  for (const auto& k : plan.kernels) k->run(ctx);  // warm-up; sets the alias slots

  const double whole = median_us([&] { p.run(); });
  std::printf("\n%s, threads %d: Executor::run median %.2f us; %zu kernels for %zu nodes, arena %zu bytes\n",
              title.c_str(), threads, whole, plan.kernels.size(), g.nodes.size(), plan.arena_bytes);
  std::vector<double> each;
  double total = 0;
  for (const auto& k : plan.kernels) {
    each.push_back(median_us([&] { k->run(ctx); }));
    total += each.back();
  }
  for (std::size_t i = 0; i < each.size(); ++i)
    std::printf("  %9.2f us %5.1f%%  %s\n", each[i], 100.0 * each[i] / total, plan.kernels[i]->describe().c_str());
  std::printf("  %9.2f us         sum of the kernels run alone\n", total);
}

}  // namespace

namespace rml_bench {

void profile_models(int threads) {
  std::printf("Per-kernel medians (31 samples of 20 runs each), each kernel run alone on warm caches.\n");
  profile("transformer block, seq 64, dim 256", transformer_model(), threads);
  profile("MLP 784-512-256-10, batch 1", mlp_model(1), threads);
  profile("MLP 784-512-256-10, batch 64", mlp_model(64), threads);
  profile("CNN features, batch 8", cnn_model(8), threads);
  profile("conv 3->32 on 32x32, batch 8", conv_model(8, 3, 32, 32), threads);
  profile("LSTM cell, hidden 256, batch 8", lstm_model(8), threads);
}

}  // namespace rml_bench
