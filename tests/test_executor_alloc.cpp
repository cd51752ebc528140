// rml::Executor's promise that, after the first call, the zero-copy run
// allocates nothing. This binary replaces the global operator new/new[]
// (every variant: plain, nothrow, aligned, aligned nothrow) with versions that
// count each call in a thread-safe global counter, then checks that runs of a
// warm executor leave the counter unchanged, for 1 and 2 threads.
//
// doctest's own macros may allocate, so the counter is read into a local
// before anything is asserted.
#include <atomic>
#include <cstdlib>
#include <new>

#include "executor_test_util.hpp"

namespace {

std::atomic<std::size_t> allocations{0};

void* counted(std::size_t bytes) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(bytes == 0 ? 1 : bytes);
}

void* counted_aligned(std::size_t bytes, std::align_val_t align) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  const std::size_t alignment = std::max(static_cast<std::size_t>(align), sizeof(void*));
  const std::size_t size = (std::max<std::size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
  return std::aligned_alloc(alignment, size);
}

/// Not inlined, so the compiler does not pair it with the operator new the
/// calls come from (GCC's -Wmismatched-new-delete would otherwise object).
[[gnu::noinline]] void release(void* p) noexcept { std::free(p); }

}  // namespace

void* operator new(std::size_t bytes) {
  if (void* p = counted(bytes)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t bytes) {
  if (void* p = counted(bytes)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept { return counted(bytes); }
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept { return counted(bytes); }
void* operator new(std::size_t bytes, std::align_val_t align) {
  if (void* p = counted_aligned(bytes, align)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t bytes, std::align_val_t align) {
  if (void* p = counted_aligned(bytes, align)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t bytes, std::align_val_t align, const std::nothrow_t&) noexcept {
  return counted_aligned(bytes, align);
}
void* operator new[](std::size_t bytes, std::align_val_t align, const std::nothrow_t&) noexcept {
  return counted_aligned(bytes, align);
}

void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }

using namespace rml;
using namespace rml::test;

namespace {

/// Caller-owned buffers for every input and output, made before counting.
struct Buffers {
  TensorMap inputs;
  std::vector<Tensor> outputs;
  std::vector<InputBuffer> in;
  std::vector<OutputBuffer> out;

  explicit Buffers(const Builder& b) {
    const Graph& g = b.graph();
    for (const NamedValue& i : g.inputs) inputs.emplace(i.name, b.example(i.value));
    for (const NamedValue& i : g.inputs) in.push_back({inputs.at(i.name).raw(), inputs.at(i.name).bytes()});
    for (const NamedValue& o : g.outputs) outputs.emplace_back(g.type(o.value));
    for (Tensor& t : outputs) out.push_back({t.raw(), t.bytes()});
  }
};

struct Count {
  std::size_t allocations = 0;
  bool matches = false;  // the warm runs still give the reference results
};

/// Warms an executor with one zero-copy run, then counts the allocations of
/// 10 more runs.
Count count_warm_runs(const Builder& b, int threads, bool fuse = true) {
  const Model model(b.graph());
  const Executor executor(model, {threads, fuse});
  Buffers buffers(b);
  const TensorMap expected = evaluate(b.graph(), buffers.inputs);
  executor.run(buffers.in, buffers.out);  // the first call may allocate (its run context)
  const std::size_t before = allocations.load();
  for (int run = 0; run < 10; ++run) executor.run(buffers.in, buffers.out);
  const std::size_t after = allocations.load();
  Count count{after - before, true};
  const Graph& g = b.graph();
  for (std::size_t o = 0; o < g.outputs.size(); ++o)
    count.matches = count.matches && mismatch(buffers.outputs[o], expected.at(g.outputs[o].name)).empty();
  return count;
}

Tensor weight(Rng& rng, const Shape& s, float range) { return uniform(rng, s, -range, range); }

/// One model with every kind of kernel the executor has.
Builder full_model() {
  Rng rng(77);
  Builder b;
  const auto x = b.input("x", uniform(rng, {16, 32}, -1, 1));
  const auto residual = b.input("residual", uniform(rng, {16, 48}, -1, 1));
  // matmul + epilogue (bias, gelu, residual) with prepacked weights
  const auto h = b.op(Add{}, {b.op(Gelu{}, {b.op(Add{}, {b.op(MatMul{}, {x, b.constant(weight(rng, {32, 48}, 0.2f))}),
                                                         b.constant(weight(rng, {48}, 1))})}),
                              residual});
  b.output("mlp", h);
  // matmul packed per run: x @ x^T, then softmax
  const auto xt = b.op(Transpose{.perm = {1, 0}}, {x});
  b.output("gram", b.op(Softmax{.axis = -1}, {b.op(MatMul{}, {x, xt})}));
  b.output("softmax_mid", b.op(Softmax{.axis = 0}, {h}));
  // layer_norm with scale and bias
  const auto ln = b.op(LayerNorm{}, {h, b.constant(weight(rng, {48}, 1)), b.constant(weight(rng, {48}, 1))});
  b.output("ln", ln);
  // sdpa: causal with a mask, batch broadcasting
  const auto q = b.op(Reshape{.shape = {2, 4, 8, 12}}, {ln});
  const auto k = b.input("k", uniform(rng, {4, 6, 12}, -1, 1));
  const auto v = b.input("v", uniform(rng, {1, 4, 6, 5}, -1, 1));
  b.output("sdpa", b.op(Sdpa{.causal = true, .scale = std::nullopt}, {q, k, v, b.constant(weight(rng, {8, 6}, 1))}));
  b.output("sdpa_plain", b.op(Sdpa{}, {q, q, q}));
  // conv2d with bias and a [1, O, 1, 1] + relu epilogue; a 1x1 conv; pools
  const auto img = b.input("img", uniform(rng, {2, 3, 9, 9}, -1, 1));
  Conv2d conv;
  conv.pads = {1, 1, 1, 1};
  const auto c = b.op(conv, {img, b.constant(weight(rng, {8, 3, 3, 3}, 0.3f)), b.constant(weight(rng, {8}, 1))});
  const auto c_act = b.op(Relu{}, {b.op(Add{}, {c, b.constant(weight(rng, {1, 8, 1, 1}, 1))})});
  b.output("conv", c_act);
  Conv2d strided;
  strided.strides = {2, 2};
  strided.groups = 2;
  strided.dilations = {2, 1};
  b.output("conv_grouped", b.op(strided, {c_act, b.constant(weight(rng, {4, 4, 2, 2}, 0.3f))}));
  b.output("conv1x1", b.op(Conv2d{}, {c_act, b.constant(weight(rng, {5, 8, 1, 1}, 0.3f))}));
  MaxPool2d max_pool;
  max_pool.kernel = {3, 3};
  max_pool.strides = {2, 2};
  max_pool.pads = {1, 1, 1, 1};
  b.output("max_pool", b.op(max_pool, {c_act}));
  AvgPool2d avg_pool;
  avg_pool.kernel = {2, 3};
  avg_pool.strides = {1, 2};
  avg_pool.pads = {1, 0, 0, 1};
  avg_pool.count_include_pad = true;
  b.output("avg_pool", b.op(avg_pool, {c_act}));
  // gather and top_k
  const auto idx = b.input("idx", Tensor::from<std::int32_t>({5}, {0, 9, -1, 3, 3}));
  b.output("gather", b.op(Gather{.axis = 0}, {b.constant(weight(rng, {10, 8}, 1)), idx}));
  b.output("gather_mid", b.op(Gather{.axis = 1}, {h, idx}));
  const auto top = b.op_multi(TopK{.k = 5}, {h}, 2);
  b.output("top_values", top[0]);
  b.output("top_indices", top[1]);
  // reductions: trailing, leading, non-adjacent axes, all axes
  const auto h3 = b.op(Reshape{.shape = {4, 4, 48}}, {h});
  b.output("sum", b.op(ReduceSum{.axes = {-1}, .keep_dims = false}, {h3}));
  b.output("mean", b.op(ReduceMean{.axes = {0}, .keep_dims = true}, {h3}));
  b.output("max_02", b.op(ReduceMax{.axes = {0, 2}, .keep_dims = false}, {h3}));
  b.output("min_all", b.op(ReduceMin{.axes = {0, 1, 2}, .keep_dims = false}, {h3}));
  // layout: transpose, concat, pad, slice, broadcast_to; select and cast
  b.output("transpose", b.op(Transpose{.perm = {2, 0, 1}}, {h3}));
  b.output("concat", b.op(Concat{.axis = 1}, {x, h, x}));
  b.output("pad", b.op(Pad{.pads = {1, 2, 3, 0}, .value = -1.0}, {x}));
  b.output("slice", b.op(Slice{.axes = {0, 1}, .starts = {-1, 1}, .ends = {0, 40}, .steps = {-2, 3}}, {h}));
  b.output("broadcast", b.op(BroadcastTo{.shape = {3, 16, 32}}, {x}));
  const auto cond = b.op(Gt{}, {x, b.constant(Tensor::scalar(0.0f))});
  b.output("select", b.op(Select{}, {cond, b.op(Cast{.to = DType::i32}, {b.op(Mul{}, {x, b.constant(Tensor::scalar(9.0f))})}),
                                     b.constant(Tensor::scalar<std::int32_t>(-1))}));
  return b;
}

/// Small single-kernel models, to name the kernel that allocates.
std::vector<std::pair<std::string, Builder>> kernel_models() {
  Rng rng(78);
  std::vector<std::pair<std::string, Builder>> models;
  auto add = [&](std::string name, auto&& build) {
    Builder b;
    build(b);
    models.emplace_back(std::move(name), std::move(b));
  };
  const Shape s{4, 6, 10};
  add("elementwise group", [&](Builder& b) {
    const auto x = b.input("x", uniform(rng, s, -1, 1));
    b.output("y", b.op(Tanh{}, {b.op(Mul{}, {x, b.op(BroadcastTo{.shape = s}, {b.input("c", uniform(rng, {6, 1}, -1, 1))})})}));
  });
  add("matmul prepacked + epilogue", [&](Builder& b) {
    const auto x = b.input("x", uniform(rng, {20, 30}, -1, 1));
    b.output("y", b.op(Relu{}, {b.op(Add{}, {b.op(MatMul{}, {x, b.constant(weight(rng, {30, 40}, 0.2f))}), b.constant(weight(rng, {40}, 1))})}));
  });
  add("matmul packed per run, batched", [&](Builder& b) {
    b.output("y", b.op(MatMul{}, {b.input("a", uniform(rng, {3, 5, 7}, -1, 1)), b.input("b", uniform(rng, {3, 7, 9}, -1, 1))}));
  });
  add("matmul i32", [&](Builder& b) {
    b.output("y", b.op(MatMul{}, {b.input("a", ints(rng, {5, 7}, -9, 9)), b.input("b", ints(rng, {7, 3}, -9, 9))}));
  });
  add("conv2d im2col + epilogue", [&](Builder& b) {
    Conv2d op;
    op.pads = {1, 0, 1, 2};
    const auto y = b.op(op, {b.input("x", uniform(rng, {2, 4, 7, 7}, -1, 1)), b.constant(weight(rng, {6, 4, 3, 3}, 0.3f))});
    b.output("y", b.op(Relu{}, {b.op(Add{}, {y, b.constant(weight(rng, {1, 6, 1, 1}, 1))})}));
  });
  add("conv2d 1x1", [&](Builder& b) {
    b.output("y", b.op(Conv2d{}, {b.input("x", uniform(rng, {2, 4, 7, 7}, -1, 1)), b.constant(weight(rng, {6, 4, 1, 1}, 0.3f)),
                                  b.constant(weight(rng, {6}, 1))}));
  });
  add("pools", [&](Builder& b) {
    const auto x = b.input("x", uniform(rng, {2, 3, 8, 8}, -1, 1));
    MaxPool2d mp;
    mp.kernel = {2, 2};
    mp.strides = {2, 2};
    AvgPool2d ap;
    ap.kernel = {3, 3};
    ap.strides = {1, 1};
    ap.pads = {1, 1, 1, 1};
    b.output("max", b.op(mp, {x}));
    b.output("avg", b.op(ap, {x}));
  });
  add("softmax last and middle axis", [&](Builder& b) {
    const auto x = b.input("x", uniform(rng, s, -1, 1));
    b.output("a", b.op(Softmax{.axis = -1}, {x}));
    b.output("b", b.op(Softmax{.axis = 1}, {x}));
  });
  add("layer_norm", [&](Builder& b) {
    b.output("y", b.op(LayerNorm{}, {b.input("x", uniform(rng, s, -1, 1)), b.constant(weight(rng, {10}, 1)), b.constant(weight(rng, {10}, 1))}));
  });
  add("sdpa", [&](Builder& b) {
    const auto q = b.input("q", uniform(rng, {2, 5, 8}, -1, 1));
    b.output("y", b.op(Sdpa{.causal = true, .scale = std::nullopt}, {q, q, q, b.input("mask", uniform(rng, {5, 5}, -1, 1))}));
  });
  add("gather", [&](Builder& b) {
    b.output("y", b.op(Gather{.axis = 1}, {b.input("x", uniform(rng, s, -1, 1)), b.input("idx", Tensor::from<std::int32_t>({3}, {0, -1, 2}))}));
  });
  add("top_k", [&](Builder& b) {
    const auto out = b.op_multi(TopK{.k = 4}, {b.input("x", small_ints_f32(rng, s, -2, 2))}, 2);
    b.output("v", out[0]);
    b.output("i", out[1]);
  });
  add("reduce_sum over one axis", [&](Builder& b) {
    b.output("y", b.op(ReduceSum{.axes = {1}, .keep_dims = false}, {b.input("x", uniform(rng, s, -1, 1))}));
  });
  add("reduce_max over all axes", [&](Builder& b) {
    b.output("y", b.op(ReduceMax{.axes = {0, 1, 2}, .keep_dims = false}, {b.input("x", uniform(rng, s, -1, 1))}));
  });
  add("reduce_mean over non-adjacent axes {0, 2}", [&](Builder& b) {
    b.output("y", b.op(ReduceMean{.axes = {0, 2}, .keep_dims = true}, {b.input("x", uniform(rng, s, -1, 1))}));
  });
  add("transpose", [&](Builder& b) {
    b.output("y", b.op(Transpose{.perm = {2, 0, 1}}, {b.input("x", uniform(rng, {40, 3, 50}, -1, 1))}));
  });
  add("concat, pad, slice, broadcast_to", [&](Builder& b) {
    const auto x = b.input("x", uniform(rng, s, -1, 1));
    b.output("c", b.op(Concat{.axis = 2}, {x, x}));
    b.output("p", b.op(Pad{.pads = {0, 1, 2, 3, 0, 1}, .value = 2.0}, {x}));
    b.output("s", b.op(Slice{.axes = {2}, .starts = {-1}, .ends = {0}, .steps = {-2}}, {x}));
    b.output("b", b.op(BroadcastTo{.shape = {2, 4, 6, 10}}, {x}));
  });
  add("reshape alias and copy", [&](Builder& b) {
    const auto x = b.input("x", uniform(rng, s, -1, 1));
    const auto r = b.op(Reshape{.shape = {24, 10}}, {b.op(Exp{}, {x})});
    b.output("y", b.op(Neg{}, {r}));
    b.output("r", b.op(Reshape{.shape = {-1}}, {r}));
  });
  return models;
}

}  // namespace

TEST_CASE("after one warm-up call, zero-copy runs of a model using every kernel allocate nothing (threads 1 and 2)") {
  const Builder b = full_model();
  for (int threads : {1, 2})
    for (bool fuse : {true, false}) {
      const Count count = count_warm_runs(b, threads, fuse);
      CAPTURE(threads);
      CAPTURE(fuse);
      CHECK(count.allocations == 0);
      CHECK(count.matches);
    }
}

TEST_CASE("after one warm-up call, no kernel allocates: each kernel on its own (threads 1 and 2)") {
  const auto models = kernel_models();
  for (const auto& [name, b] : models)
    for (int threads : {1, 2}) {
      const Count count = count_warm_runs(b, threads);
      CHECK_MESSAGE(count.allocations == 0, name, " with threads = ", threads, ": ", count.allocations,
                    " allocations in 10 warm runs");
      CHECK_MESSAGE(count.matches, name, " with threads = ", threads, ": results differ from the reference");
    }
}

TEST_CASE("the allocation counter sees every operator new variant") {
  auto counts = [](auto&& fn) {
    const std::size_t before = allocations.load();
    fn();
    return allocations.load() - before;
  };
  CHECK(counts([] { delete new int(1); }) == 1);
  CHECK(counts([] { delete[] new int[3]; }) == 1);
  CHECK(counts([] { ::operator delete(::operator new(8, std::nothrow)); }) == 1);
  CHECK(counts([] { ::operator delete[](::operator new[](8, std::nothrow)); }) == 1);
  CHECK(counts([] { ::operator delete(::operator new(64, std::align_val_t{64}), std::align_val_t{64}); }) == 1);
  CHECK(counts([] { ::operator delete[](::operator new[](64, std::align_val_t{64}), std::align_val_t{64}); }) == 1);
  CHECK(counts([] { ::operator delete(::operator new(64, std::align_val_t{128}, std::nothrow), std::align_val_t{128}); }) == 1);
  CHECK(counts([] { ::operator delete[](::operator new[](64, std::align_val_t{128}, std::nothrow), std::align_val_t{128}); }) == 1);
  CHECK(counts([] { std::vector<int> v(100); }) == 1);
  CHECK(counts([] { Tensor t(DType::f32, {10}); }) == 2);  // its shape, and its 64-byte aligned storage
  void* p = ::operator new(100, std::align_val_t{256});
  CHECK(reinterpret_cast<std::uintptr_t>(p) % 256 == 0);
  ::operator delete(p, std::align_val_t{256});
}

TEST_CASE("the first call of a fresh executor does allocate (its run context), so the counter is live") {
  const Builder b = full_model();
  const Model model(b.graph());
  const Executor executor(model, {2, true});
  Buffers buffers(b);
  const std::size_t before = allocations.load();
  executor.run(buffers.in, buffers.out);
  const std::size_t first = allocations.load() - before;
  CHECK(first > 0);
}
