// Benchmarks through rml::Executor: models built with rml::Builder (seeded
// random weights), compiled once, run with caller-owned buffers through the
// zero-copy run(span<InputBuffer>, span<OutputBuffer>), so the timed loop
// allocates nothing. One untimed run first creates the run context.
//
// Models and executors are built lazily and cached: Google Benchmark calls a
// benchmark function several times (iteration-count probes, repetitions), and
// building a model evaluates every op on the reference kernels once.
#include <cmath>
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

/// A compiled model with its caller-owned input and output buffers.
struct Prepared {
  std::unique_ptr<rml::Executor> executor;
  std::vector<std::vector<float>> input_data, output_data;
  std::vector<rml::InputBuffer> inputs;
  std::vector<rml::OutputBuffer> outputs;

  void run() const { executor->run(inputs, outputs); }
  std::size_t kernels() const { return executor->plan().kernels.size(); }
};

/// The model named `key` (built once by `build`), compiled for `threads` and `fuse`.
const Prepared& prepare(const std::string& key, int threads, bool fuse, const std::function<void(Builder&)>& build) {
  static std::map<std::string, std::shared_ptr<rml::Model>> models;
  static std::map<std::string, std::unique_ptr<Prepared>> prepared;
  const std::string full_key = key + "/threads:" + std::to_string(threads) + (fuse ? "/fused" : "/unfused");
  if (auto it = prepared.find(full_key); it != prepared.end()) return *it->second;
  auto& model = models[key];
  if (!model) {
    Builder b;
    build(b);
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
  for (auto _ : state) {
    p.run();
    benchmark::ClobberMemory();
  }
  state.counters["kernels"] = static_cast<double>(p.kernels());
}

// ---------------------------------------------------------------------------
// 1. GEMM through the executor: x [M, K] @ constant W [K, N] (prepacked).

void BM_gemm_executor(benchmark::State& state) {
  const std::int64_t M = state.range(0), K = state.range(1), N = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  const std::string key = "matmul/" + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N);
  const Prepared& p = prepare(key, threads, true, [&](Builder& b) {
    const ValueId x = input(b, "x", {M, K});
    b.output("y", b.op(rml::MatMul{}, {x, weight(b, {K, N}, 2)}));
  });
  run_loop(state, p);
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
// 2. MLP 784 -> 512 -> 256 -> 10 (ReLU), and a transformer block.

ValueId linear(Builder& b, ValueId x, std::int64_t in, std::int64_t out, std::uint32_t seed) {
  const ValueId y = b.op(rml::MatMul{}, {x, weight(b, {in, out}, seed)});
  return b.op(rml::Add{}, {y, weight(b, {out}, seed + 1, 0.1f)});
}

void BM_mlp(benchmark::State& state) {
  const std::int64_t batch = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const Prepared& p = prepare("mlp/batch:" + std::to_string(batch), threads, true, [&](Builder& b) {
    ValueId h = input(b, "x", {batch, 784});
    h = b.op(rml::Relu{}, {linear(b, h, 784, 512, 10)});
    h = b.op(rml::Relu{}, {linear(b, h, 512, 256, 20)});
    b.output("logits", linear(b, h, 256, 10, 30));
  });
  run_loop(state, p);
  flop_counters(state, 2.0 * double(batch) * (784 * 512 + 512 * 256 + 256 * 10), threads);
}
BENCHMARK(BM_mlp)
    ->ArgNames({"batch", "threads"})
    ->ArgsProduct({{1, 64}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

/// Pre-norm transformer block: x + proj(sdpa(q, k, v)) then + MLP(gelu).
void BM_transformer_block(benchmark::State& state) {
  constexpr std::int64_t seq = 64, dim = 256, heads = 4, head_dim = dim / heads, hidden = 1024;
  const int threads = static_cast<int>(state.range(0));
  const Prepared& p = prepare("transformer_block", threads, true, [&](Builder& b) {
    const ValueId x = input(b, "x", {1, seq, dim});
    auto norm = [&](ValueId v, std::uint32_t seed) {
      const ValueId gain = b.constant(Tensor::from<float>({dim}, [&] {
        std::vector<float> g = random_floats(dim, seed, 0.1f);
        for (float& value : g) value += 1.0f;
        return g;
      }()));
      return b.op(rml::LayerNorm{}, {v, gain, weight(b, {dim}, seed + 1, 0.1f)});
    };
    auto split_heads = [&](ValueId v) {  // [1, seq, dim] -> [1, heads, seq, head_dim]
      const ValueId r = b.op(rml::Reshape{.shape = {1, seq, heads, head_dim}}, {v});
      return b.op(rml::Transpose{.perm = {0, 2, 1, 3}}, {r});
    };
    const ValueId h = norm(x, 100);
    const ValueId q = split_heads(linear(b, h, dim, dim, 110));
    const ValueId k = split_heads(linear(b, h, dim, dim, 120));
    const ValueId v = split_heads(linear(b, h, dim, dim, 130));
    const ValueId attention = b.op(rml::Sdpa{}, {q, k, v});
    const ValueId merged = b.op(rml::Reshape{.shape = {1, seq, dim}},
                                {b.op(rml::Transpose{.perm = {0, 2, 1, 3}}, {attention})});
    const ValueId x1 = b.op(rml::Add{}, {x, linear(b, merged, dim, dim, 140)});
    const ValueId m = b.op(rml::Gelu{}, {linear(b, norm(x1, 150), dim, hidden, 160)});
    b.output("y", b.op(rml::Add{}, {x1, linear(b, m, hidden, dim, 170)}));
  });
  run_loop(state, p);
  const double projections = 2.0 * seq * (4.0 * dim * dim + 2.0 * dim * hidden);
  const double attention = 2.0 * 2.0 * heads * seq * seq * head_dim;
  flop_counters(state, projections + attention, threads);
}
BENCHMARK(BM_transformer_block)->ArgNames({"threads"})->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------
// 3. Per-node overhead: x = x + c, `nodes` times, on shape [4].

void BM_add_chain(benchmark::State& state) {
  const std::int64_t nodes = state.range(0);
  const bool fuse = state.range(1) != 0;
  const Prepared& p = prepare("add_chain/" + std::to_string(nodes), 1, fuse, [&](Builder& b) {
    ValueId x = input(b, "x", {4});
    const ValueId c = weight(b, {4}, 7, 0.01f);
    for (std::int64_t i = 0; i < nodes; ++i) x = b.op(rml::Add{}, {x, c});
    b.output("y", x);
  });
  run_loop(state, p);
  // seconds per node, in ns: an inverted rate over nodes x iterations.
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
// 4. conv2d: the CNN bench model's feature extractor and U-Net-sized layers.

rml::Conv2d conv3x3() { return rml::Conv2d{.pads = {1, 1, 1, 1}}; }

ValueId conv_relu(Builder& b, ValueId x, std::int64_t in, std::int64_t out, std::uint32_t seed) {
  const ValueId w = weight(b, {out, in, 3, 3}, seed, 1.0f / std::sqrt(float(in * 9)));
  return b.op(rml::Relu{}, {b.op(conv3x3(), {x, w, weight(b, {out}, seed + 1, 0.1f)})});
}

/// [N,1,28,28] -> conv 1->16 + relu -> max_pool 2 -> conv 16->32 + relu -> max_pool 2 -> [N,32,7,7].
void BM_cnn_features(benchmark::State& state) {
  const std::int64_t batch = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const Prepared& p = prepare("cnn/batch:" + std::to_string(batch), threads, true, [&](Builder& b) {
    const rml::MaxPool2d pool{.kernel = {2, 2}, .strides = {2, 2}};
    ValueId h = input(b, "x", {batch, 1, 28, 28});
    h = b.op(pool, {conv_relu(b, h, 1, 16, 200)});
    h = b.op(pool, {conv_relu(b, h, 16, 32, 210)});
    b.output("features", h);
  });
  run_loop(state, p);
  flop_counters(state, 2.0 * batch * (16.0 * 1 * 9 * 28 * 28 + 32.0 * 16 * 9 * 14 * 14), threads);
}
BENCHMARK(BM_cnn_features)
    ->ArgNames({"batch", "threads"})
    ->ArgsProduct({{1, 8}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

/// One 3x3 pad-1 conv + bias + relu: [N, C, S, S] -> [N, O, S, S].
void BM_conv3x3(benchmark::State& state) {
  const std::int64_t batch = state.range(0), channels = state.range(1), size = state.range(2), out = state.range(3);
  const int threads = static_cast<int>(state.range(4));
  const std::string key = "conv/" + std::to_string(batch) + "x" + std::to_string(channels) + "x" + std::to_string(size) +
                          "->" + std::to_string(out);
  const Prepared& p = prepare(key, threads, true, [&](Builder& b) {
    b.output("y", conv_relu(b, input(b, "x", {batch, channels, size, size}), channels, out, 300));
  });
  run_loop(state, p);
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

// ---------------------------------------------------------------------------
// 5. sdpa: q, k, v [1, 4, 64, 64] (seq 64, model dim 256, 4 heads).

void BM_sdpa(benchmark::State& state) {
  const bool causal = state.range(0) != 0;
  const int threads = static_cast<int>(state.range(1));
  const Prepared& p = prepare(causal ? "sdpa/causal" : "sdpa/full", threads, true, [&](Builder& b) {
    const Shape shape{1, 4, 64, 64};
    b.output("y", b.op(rml::Sdpa{.causal = causal},
                       {input(b, "q", shape), input(b, "k", shape), input(b, "v", shape)}));
  });
  run_loop(state, p);
  // q k^T and p v over the visible (query, key) pairs.
  const double pairs = causal ? 64.0 * 65.0 / 2.0 : 64.0 * 64.0;
  flop_counters(state, 2.0 * 2.0 * 4.0 * pairs * 64.0, threads);
}
BENCHMARK(BM_sdpa)
    ->ArgNames({"causal", "threads"})
    ->ArgsProduct({{0, 1}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------
// 6. LSTM cell, input 64, hidden 256.

void BM_lstm_cell(benchmark::State& state) {
  constexpr std::int64_t in = 64, hidden = 256;
  const std::int64_t batch = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const Prepared& p = prepare("lstm/batch:" + std::to_string(batch), threads, true, [&](Builder& b) {
    const ValueId x = input(b, "x", {batch, in});
    const ValueId h = input(b, "h", {batch, hidden});
    const ValueId c = input(b, "c", {batch, hidden});
    const ValueId gates = b.op(rml::Add{}, {b.op(rml::Add{}, {b.op(rml::MatMul{}, {x, weight(b, {in, 4 * hidden}, 400)}),
                                                              b.op(rml::MatMul{}, {h, weight(b, {hidden, 4 * hidden}, 401)})}),
                                            weight(b, {4 * hidden}, 402, 0.1f)});
    auto gate = [&](std::int64_t i) {
      return b.op(rml::Slice{.axes = {1}, .starts = {i * hidden}, .ends = {(i + 1) * hidden}}, {gates});
    };
    const ValueId i_gate = b.op(rml::Sigmoid{}, {gate(0)});
    const ValueId f_gate = b.op(rml::Sigmoid{}, {gate(1)});
    const ValueId g_gate = b.op(rml::Tanh{}, {gate(2)});
    const ValueId o_gate = b.op(rml::Sigmoid{}, {gate(3)});
    const ValueId c_next = b.op(rml::Add{}, {b.op(rml::Mul{}, {f_gate, c}), b.op(rml::Mul{}, {i_gate, g_gate})});
    b.output("h_next", b.op(rml::Mul{}, {o_gate, b.op(rml::Tanh{}, {c_next})}));
    b.output("c_next", c_next);
  });
  run_loop(state, p);
  flop_counters(state, 2.0 * batch * (in + hidden) * 4.0 * hidden, threads);
}
BENCHMARK(BM_lstm_cell)
    ->ArgNames({"batch", "threads"})
    ->ArgsProduct({{1, 8}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
