// The clean-up passes on small hand-built graphs: each fires where it should,
// leaves near-misses alone, and keeps the reference evaluation within 1e-6
// (bit for bit for pure shape rewrites and the step-projection hoist). Then
// every committed fixture's node count against the specification's.
#include "fixture_util.hpp"

#include <cmath>
#include <map>
#include <numbers>

#include "rml/builder.hpp"
#include "rml/passes/passes.hpp"

using namespace rml;
using namespace rml::test;

namespace {

Tensor random_tensor(const Shape& shape, unsigned seed, float lo = -2, float hi = 2) {
  Rng rng(seed);
  return uniform(rng, shape, lo, hi);
}

std::size_t count(const Graph& g, std::string_view op) {
  return static_cast<std::size_t>(
      std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return op_name(n.op) == op; }));
}

/// The builder's graph before and after `passes`, evaluated on its input examples.
struct Rewrite {
  Graph before, after;
  passes::PassReport report;
  TensorMap inputs;

  Rewrite(const Builder& b, std::vector<std::string> names) : before(without_dead_code(b.graph())), after(before) {
    report = passes::run_passes(after, std::move(names));
    for (const NamedValue& in : before.inputs) inputs.emplace(in.name, b.example(in.value));
  }

  /// "" when every output agrees within atol + rtol (both 0: bit for bit).
  std::string difference(double tolerance) const {
    const TensorMap want = evaluate(before, inputs), got = evaluate(after, inputs);
    std::string text;
    for (const auto& [name, value] : want) {
      const Tensor& other = got.at(name);
      if (tolerance == 0) {
        if (!other.bitwise_equal(value)) text += "output '" + name + "' is not bit for bit the same\n";
      } else if (auto wrong = mismatch(other, value, tolerance, tolerance); !wrong.empty()) {
        text += "output '" + name + "': " + wrong + "\n";
      }
    }
    return text;
  }
};

}  // namespace

TEST_CASE("simplify_shape_ops: identities vanish, chains collapse, reshape of a reduction keeps dims") {
  Builder b;
  const auto x = b.input("x", random_tensor({2, 3, 4}, 1));
  auto y = b.op(Reshape{{2, 3, 4}}, {x});                              // identity
  y = b.op(Reshape{{6, 4}}, {b.op(Reshape{{3, 2, 4}}, {y})});          // reshape of reshape
  y = b.op(Transpose{{1, 0}}, {b.op(Transpose{{1, 0}}, {y})});         // cancels
  y = b.op(Reshape{{2, 3, 4}}, {y});
  const auto mean = b.op(Reshape{{2, 3, 1}}, {b.op(ReduceMean{{2}}, {y})});  // keep_dims in disguise
  b.output("y", b.op(Sub{}, {y, mean}));
  const Rewrite r(b, {"simplify_shape_ops"});
  CHECK(count(r.after, "transpose") == 0);
  CHECK(count(r.after, "reshape") == 0);
  CHECK(r.after.nodes.size() == 2);
  CHECK(rml::get<ReduceMean>(r.after.nodes[0].op).keep_dims);
  CHECK(r.difference(0).empty());
}

TEST_CASE("simplify_shape_ops: near misses stay") {
  Builder b;
  const auto x = b.input("x", random_tensor({2, 3}, 2));
  b.output("copy", b.op(Reshape{{2, 3}}, {x}));  // an output must stay computed, even as an identity
  const auto sum = b.op(ReduceSum{{1}}, {x});
  b.output("moved", b.op(Reshape{{1, 2}}, {sum}));  // not the keep_dims shape [2, 1]
  const Rewrite r(b, {"simplify_shape_ops"});
  CHECK(r.after.nodes.size() == r.before.nodes.size());
  CHECK_FALSE(rml::get<ReduceSum>(r.after.nodes[1].op).keep_dims);
}

TEST_CASE("sink_transposes: a convolution's NHWC round trip cancels across bias and relu") {
  Builder b;
  const auto x = b.input("x", random_tensor({1, 4, 4, 2}, 3));  // NHWC, as TensorFlow hands it over
  const auto w1 = b.constant(random_tensor({3, 2, 3, 3}, 4)), w2 = b.constant(random_tensor({2, 3, 1, 1}, 5));
  const auto bias = b.constant(random_tensor({3}, 6));
  auto conv = [&](ValueId nhwc, ValueId w) {
    const auto nchw = b.op(Conv2d{.pads = {1, 1, 1, 1}}, {b.op(Transpose{{0, 3, 1, 2}}, {nhwc}), w});
    return b.op(Transpose{{0, 2, 3, 1}}, {nchw});
  };
  auto h = b.op(Relu{}, {b.op(Add{}, {conv(x, w1), bias})});
  b.output("y", conv(h, w2));
  const Rewrite r(b, {});
  CHECK(count(r.before, "transpose") == 4);
  CHECK(count(r.after, "transpose") == 2);  // only the graph's own NHWC entry and exit remain
  // Next to the conv, the bias add then folds into it (fold_batch_norm): the
  // reference conv adds its bias before rounding the sum, so not bit for bit.
  CHECK(count(r.after, "add") == 0);
  CHECK(r.difference(1e-6).empty());
}

TEST_CASE("sink_transposes: a transpose with two readers stays put") {
  Builder b;
  const auto x = b.input("x", random_tensor({2, 3}, 7));
  const auto t = b.op(Transpose{{1, 0}}, {x});
  b.output("a", b.op(Relu{}, {t}));
  b.output("b", b.op(Tanh{}, {t}));
  const Rewrite r(b, {"sink_transposes"});
  CHECK(r.report.edits.empty());
}

TEST_CASE("sink_reshapes: a 3-D linear layer's activation moves next to its bias add; a shared reshape stays") {
  Builder b;
  const auto x = b.input("x", random_tensor({2, 4, 3}, 8));
  // As exporters lower nn.Linear on [batch, tokens, features]: flatten, matmul, bias, unflatten.
  const auto flat = b.op(Reshape{{8, 3}}, {x});
  const auto biased = b.op(Add{}, {b.op(MatMul{}, {flat, b.constant(random_tensor({3, 5}, 9))}),
                                   b.constant(random_tensor({5}, 10))});
  b.output("y", b.op(Gelu{.approximate = "tanh"}, {b.op(Reshape{{2, 4, 5}}, {biased})}));
  const auto shared = b.op(Reshape{{2, 12}}, {x});
  b.output("a", b.op(Relu{}, {shared}));
  b.output("b", b.op(Tanh{}, {shared}));
  const Rewrite r(b, {"sink_reshapes"});
  CHECK(r.report.edits.count("sink_reshapes") == 1);
  CHECK(count(r.after, "reshape") == count(r.before, "reshape"));
  auto producer_of_input = [&](std::string_view op) -> std::string_view {
    for (const Node& n : r.after.nodes)
      if (op_name(n.op) == op)
        for (const Node& m : r.after.nodes)
          if (m.outputs[0] == n.inputs[0]) return op_name(m.op);
    return "";
  };
  CHECK(producer_of_input("gelu") == "add");  // so the executor can run it as the matmul's epilogue
  CHECK(producer_of_input("relu") == "reshape");
  CHECK(producer_of_input("tanh") == "reshape");
  CHECK(r.difference(0).empty());
}

TEST_CASE("sink_reshapes: a binary op whose other operand has the reshape's input shape; broadcasting ones stay") {
  Builder b;
  const auto h = b.input("h", random_tensor({4, 3}, 40));
  const auto step = b.input("step", random_tensor({4, 5}, 41));
  // As PyTorch's LSTM step writes it: the product reshaped to [1, B, 4H], plus the step's [B, 4H] projection.
  const auto product = b.op(MatMul{}, {h, b.constant(random_tensor({3, 5}, 42))});
  b.output("sum", b.op(Add{}, {step, b.op(Reshape{{1, 4, 5}}, {product})}));
  // Near misses: the other operand broadcasts along an axis the reshape made, or has the reshape's shape.
  const auto row = b.input("row", random_tensor({5}, 43));
  b.output("broadcast", b.op(Mul{}, {b.op(Reshape{{1, 4, 5}}, {b.op(Tanh{}, {step})}), row}));
  const auto same = b.input("same", random_tensor({2, 2, 5}, 44));
  b.output("reshaped", b.op(Sub{}, {b.op(Reshape{{2, 2, 5}}, {b.op(Exp{}, {step})}), same}));
  const Rewrite r(b, {"sink_reshapes"});
  CHECK(r.report.edits.count("sink_reshapes") == 1);
  for (const Node& n : r.after.nodes) {
    if (holds<Add>(n.op)) {
      CHECK(r.after.type(n.outputs[0]).shape == Shape{4, 5});  // next to the product: its epilogue
      CHECK(n.inputs[0] == r.after.inputs[1].value);             // the operands keep their order
    }
    if (holds<Mul>(n.op)) CHECK(r.after.type(n.outputs[0]).shape == Shape{1, 4, 5});
    if (holds<Sub>(n.op)) CHECK(r.after.type(n.outputs[0]).shape == Shape{2, 2, 5});
  }
  CHECK(r.difference(0).empty());
}

TEST_CASE("fold_batch_norm: a conv's or a matmul's batch norm goes into its weights and bias; near misses stay") {
  Builder b;
  const auto x = b.input("x", random_tensor({2, 3, 8, 8}, 16));
  // conv (with and without its own bias) -> x * scale + shift per channel -> relu, as exporters lower BatchNorm2d.
  const auto bn = [&](ValueId y, const Shape& channel_shape, unsigned seed) {
    const auto scaled = b.op(Mul{}, {y, b.constant(random_tensor(channel_shape, seed, 0.5f, 1.5f))});
    return b.op(Add{}, {b.constant(random_tensor(channel_shape, seed + 1)), scaled});  // the constant first, too
  };
  const auto conv = b.op(Conv2d{.pads = {1, 1, 1, 1}},
                         {x, b.constant(random_tensor({6, 3, 3, 3}, 17), "conv.weight"), b.constant(random_tensor({6}, 18))});
  b.output("a", b.op(Relu{}, {bn(conv, {1, 6, 1, 1}, 19)}));
  const auto grouped = b.op(Conv2d{.groups = 3}, {x, b.constant(random_tensor({6, 1, 1, 1}, 21))});
  b.output("b", bn(grouped, {6, 1, 1}, 22));
  // matmul -> per-column scale -> shift: the scale folds, the shift stays an add.
  const auto h = b.input("h", random_tensor({2, 5}, 24));
  b.output("c", bn(b.op(MatMul{}, {h, b.constant(random_tensor({5, 4}, 25))}), {4}, 26));
  // Near misses: a product read twice; a scale that varies along the pixels; a weight that is an input.
  const auto shared = b.op(Conv2d{}, {x, b.constant(random_tensor({2, 3, 1, 1}, 28))});
  b.output("d", b.op(Mul{}, {shared, b.constant(random_tensor({1, 2, 1, 1}, 29))}));
  b.output("e", shared);
  b.output("f", b.op(Mul{}, {b.op(Conv2d{}, {x, b.constant(random_tensor({2, 3, 1, 1}, 30))}),
                             b.constant(random_tensor({1, 1, 8, 8}, 31))}));
  const auto w = b.input("w", random_tensor({5, 4}, 32));
  b.output("g", b.op(Mul{}, {b.op(MatMul{}, {h, w}), b.constant(random_tensor({4}, 33))}));
  const Rewrite r(b, {"fold_batch_norm"});
  CHECK(count(r.before, "mul") == 6);
  CHECK(count(r.after, "mul") == 3);  // d, f and g stay
  CHECK(count(r.before, "add") == 3);
  CHECK(count(r.after, "add") == 1);  // the matmul's shift
  CHECK(count(r.after, "conv2d") == 4);
  // The folded weight keeps the parameter's name.
  const auto named = std::count_if(r.after.values.begin(), r.after.values.end(), [](const Value& v) {
    return v.name == "conv.weight";
  });
  CHECK(named == 1);
  // Scaling the weights instead of the sums rounds differently, by a few ulp.
  CHECK(r.difference(1e-6).empty());
  CHECK(!r.difference(0).empty());
}

TEST_CASE("drop_implicit_broadcasts and shrink_broadcast_constants") {
  Builder b;
  const auto x = b.input("x", random_tensor({4, 3}, 8));
  const auto row = b.input("row", random_tensor({3}, 9));
  auto y = b.op(Add{}, {x, b.op(BroadcastTo{{4, 3}}, {row})});  // add broadcasts anyway
  y = b.op(Mul{}, {y, b.op(Reshape{{1, 3}}, {row})});            // only prepends a 1
  Tensor repeated(TensorType{DType::f32, {4, 3}});                // the same row four times
  for (int i = 0; i < 12; ++i) repeated.values<float>()[i] = float(i % 3) + 0.5f;
  y = b.op(Sub{}, {y, b.constant(repeated, "bias.tiled")});
  // Near misses: this broadcast decides the output shape, and this constant's rows differ.
  const auto small = b.input("small", random_tensor({1, 3}, 10));
  b.output("grown", b.op(Add{}, {small, b.op(BroadcastTo{{4, 3}}, {row})}));
  b.output("y", b.op(Add{}, {y, b.constant(random_tensor({4, 3}, 11))}));
  const Rewrite r(b, {"drop_implicit_broadcasts", "shrink_broadcast_constants"});
  CHECK(count(r.after, "broadcast_to") == 1);
  CHECK(count(r.after, "reshape") == 0);
  bool shrunk = false, kept_full = false;
  for (const Value& v : r.after.values) {
    if (v.name == "bias.tiled") shrunk = v.type.shape == Shape{1, 3};
    if (v.kind == ValueKind::constant && v.name.empty() && v.type.shape == Shape{4, 3}) kept_full = true;
  }
  CHECK(shrunk);
  CHECK(kept_full);
  CHECK(r.difference(0).empty());
}

TEST_CASE("shrink_broadcast_constants leaves an empty constant alone, however long its other axes") {
  // A [2^40, 0] constant once made the pass compare 2^40 empty rows one by one (a StableHLO
  // fuzz finding: the importer folds broadcasts of constants).
  const Shape huge_empty{std::int64_t(1) << 40, 0};
  Builder b;
  const auto x = b.input("x", TensorType{DType::f32, huge_empty});
  b.output("y", b.op(Add{}, {x, b.constant(Tensor(TensorType{DType::f32, huge_empty}), "empty")}));
  const Rewrite r(b, {"shrink_broadcast_constants"});
  CHECK(r.report.edits.empty());
}

TEST_CASE("unbatch_matmul_weights: equal batch slices become one matrix, unequal ones stay") {
  Builder b;
  const auto x = b.input("x", random_tensor({2, 3, 4}, 12));
  const Tensor slice = random_tensor({1, 4, 5}, 13);
  Tensor same(TensorType{DType::f32, {2, 4, 5}});
  for (int i = 0; i < 20; ++i) same.values<float>()[i] = same.values<float>()[i + 20] = slice.values<float>()[i];
  b.output("same", b.op(MatMul{}, {x, b.constant(same, "w")}));
  b.output("differ", b.op(MatMul{}, {x, b.constant(random_tensor({2, 4, 5}, 14))}));
  const Rewrite r(b, {"unbatch_matmul_weights"});
  CHECK(r.report.edits.at("unbatch_matmul_weights") >= 1);
  std::size_t two_d = 0;
  for (const Node& n : r.after.nodes) two_d += r.after.type(n.inputs[1]).shape.size() == 2;
  CHECK(two_d == 1);
  CHECK(r.difference(0).empty());
}

TEST_CASE("hoist_step_projections: an unrolled loop's input products become one, bit for bit") {
  Builder b;
  const auto x = b.input("x", random_tensor({5, 2, 3}, 15));  // time-major
  const auto w = b.constant(random_tensor({3, 4}, 16), "w_ih");
  const auto u = b.constant(random_tensor({4, 4}, 17), "w_hh");
  const auto other = b.constant(random_tensor({3, 4}, 18));
  auto h = b.op(Tanh{}, {b.op(MatMul{}, {b.op(Reshape{{2, 3}}, {b.op(Slice{{0}, {0}, {1}, {}}, {x})}), w})});
  for (std::int64_t t = 1; t < 5; ++t) {
    const auto x_t = b.op(Reshape{{2, 3}}, {b.op(Slice{{0}, {t}, {t + 1}, {}}, {x})});
    h = b.op(Tanh{}, {b.op(Add{}, {b.op(MatMul{}, {x_t, w}), b.op(MatMul{}, {h, u})})});
  }
  b.output("h", h);
  // A near miss: one step's product with a different weight is not part of the group.
  b.output("odd", b.op(MatMul{}, {b.op(Reshape{{2, 3}}, {b.op(Slice{{0}, {2}, {3}, {}}, {x})}), other}));
  const Rewrite r(b, {"hoist_step_projections"});
  CHECK(count(r.before, "matmul") == 10);
  CHECK(count(r.after, "matmul") == 1 + 4 + 1);  // one hoisted product, the recurrent ones, the odd one
  CHECK(r.difference(0).empty());
}

TEST_CASE("chunk_step_projections: a large input product runs in chunks, each before its first step, bit for bit") {
  // Time-major, 40 steps of a [16, 256] projection with its bias: 640 KiB, over the
  // 512 KiB a chunk may hold, so 32 steps and then 8.
  constexpr std::int64_t kSteps = 40;
  Builder b;
  const auto x = b.input("x", random_tensor({kSteps, 16, 8}, 30));
  const auto projection = b.op(Add{}, {b.op(MatMul{}, {x, b.constant(random_tensor({8, 256}, 31), "w_ih")}),
                                       b.constant(random_tensor({256}, 32), "b_ih")});
  // Every step's view first, the steps after them, as PyTorch's export writes them.
  std::vector<ValueId> step_inputs;
  for (std::int64_t t = 0; t < kSteps; ++t)
    step_inputs.push_back(b.op(Reshape{{16, 256}}, {b.op(Slice{{0}, {t}, {t + 1}, {}}, {projection})}));
  auto h = b.op(Tanh{}, {step_inputs[0]});
  for (std::int64_t t = 1; t < kSteps; ++t) h = b.op(Tanh{}, {b.op(Add{}, {h, step_inputs[t]})});
  b.output("h", h);
  // Near misses: a product under the chunk size, one also read whole.
  const auto small = b.op(MatMul{}, {b.op(Slice{{0}, {0}, {4}, {}}, {x}), b.constant(random_tensor({8, 256}, 33))});
  b.output("small", b.op(Slice{{0}, {1}, {2}, {}}, {small}));
  const auto read_whole = b.op(MatMul{}, {x, b.constant(random_tensor({8, 256}, 34))});
  b.output("whole", b.op(ReduceSum{{0}}, {read_whole}));
  b.output("step", b.op(Slice{{0}, {3}, {4}, {}}, {read_whole}));

  const Rewrite r(b, {"chunk_step_projections"});
  CHECK(count(r.after, "matmul") == 2 + 2);  // two chunks, the two near misses
  // Each chunk comes after the steps before it: the second one after 32 tanh.
  std::vector<std::size_t> tanh_before_chunk;
  std::size_t tanh_seen = 0;
  for (const Node& n : r.after.nodes) {
    tanh_seen += holds<Tanh>(n.op);
    if (holds<MatMul>(n.op) && r.after.type(n.outputs[0]).shape == Shape{32, 16, 256}) tanh_before_chunk.push_back(tanh_seen);
    if (holds<MatMul>(n.op) && r.after.type(n.outputs[0]).shape == Shape{8, 16, 256}) tanh_before_chunk.push_back(tanh_seen);
  }
  CHECK(tanh_before_chunk == std::vector<std::size_t>{0, 32});
  CHECK(r.difference(0).empty());
  // The executor too: a product's bits do not depend on which rows it shares (gemm.hpp).
  for (int threads : {1, 2}) {
    const TensorMap want = Executor(Model(r.before), {.threads = threads}).run(r.inputs);
    const TensorMap got = Executor(Model(r.after), {.threads = threads}).run(r.inputs);
    for (const auto& [name, value] : want) CHECK_MESSAGE(got.at(name).bitwise_equal(value), name, " threads ", threads);
  }
}

TEST_CASE("fuse_reductions: mean and softmax, and their near misses") {
  Builder b;
  const auto x = b.input("x", random_tensor({2, 5}, 19));
  const auto n = b.constant(Tensor::from<float>({}, {5}));
  b.output("mean", b.op(Div{}, {b.op(ReduceSum{{1}}, {x}), n}));
  b.output("not_mean", b.op(Div{}, {b.op(ReduceSum{{1}}, {x}), b.constant(Tensor::from<float>({}, {4}))}));
  auto softmax = [&](ValueId max_of) {
    const auto e = b.op(Exp{}, {b.op(Sub{}, {x, b.op(ReduceMax{{1}, true}, {max_of})})});
    return b.op(Div{}, {e, b.op(ReduceSum{{1}, true}, {e})});
  };
  b.output("softmax", softmax(x));
  const auto y = b.input("y", random_tensor({2, 5}, 20));
  b.output("other_max", softmax(y));  // shifted by another tensor's max: not a softmax of x
  const Rewrite r(b, {"fuse_reductions"});
  CHECK(count(r.after, "reduce_mean") == 1);
  CHECK(count(r.after, "softmax") == 1);
  CHECK(count(r.after, "div") == 2);  // the wrong divisor and the other-max chain
  CHECK(r.difference(1e-6).empty());
}

TEST_CASE("eliminate_common_subexpressions and share_identical_constants") {
  Builder b;
  const auto x = b.input("x", random_tensor({3}, 21));
  const auto c1 = b.constant(random_tensor({3}, 22), "scale"), c2 = b.constant(random_tensor({3}, 22));
  const auto a1 = b.op(Mul{}, {x, c1}), a2 = b.op(Mul{}, {c2, x});  // the same product once constants are shared
  const auto s1 = b.op(Softmax{.axis = 0}, {x}), s2 = b.op(Softmax{.axis = -1}, {x});  // different attributes
  b.output("y", b.op(Add{}, {b.op(Add{}, {a1, a2}), b.op(Add{}, {s1, s2})}));
  const Rewrite r(b, {"share_identical_constants", "eliminate_common_subexpressions"});
  CHECK(count(r.after, "mul") == 1);
  CHECK(count(r.after, "softmax") == 2);
  std::size_t constants = 0;
  for (const Value& v : r.after.values) constants += v.kind == ValueKind::constant;
  CHECK(constants == 1);
  CHECK(std::any_of(r.after.values.begin(), r.after.values.end(), [](const Value& v) { return v.name == "scale"; }));
  CHECK(r.difference(0).empty());
}

namespace {

/// (x - mean) * rsqrt(mean((x - mean)^2) + eps) over `axis`, times scale, plus bias.
ValueId written_layer_norm(Builder& b, ValueId x, std::int64_t axis, ValueId scale, ValueId bias, bool scale_first) {
  const auto mean = b.op(ReduceMean{{axis}, true}, {x});
  const auto centred = b.op(Sub{}, {x, mean});
  const auto variance = b.op(ReduceMean{{axis}, true}, {b.op(Mul{}, {centred, centred})});
  const auto inv = b.op(Rsqrt{}, {b.op(Add{}, {variance, b.constant(Tensor::from<float>({}, {1e-5f}))})});
  const auto product = scale_first ? b.op(Mul{}, {centred, b.op(Mul{}, {inv, scale})})
                                   : b.op(Mul{}, {b.op(Mul{}, {centred, inv}), scale});
  return b.op(Add{}, {product, bias});
}

}  // namespace

TEST_CASE("fuse_layer_norm: folds the scale and bias, in either multiplication order; not over another axis") {
  Builder b;
  const auto x = b.input("x", random_tensor({2, 3, 8}, 23));
  const auto scale = b.constant(random_tensor({8}, 24, 0.5f, 1.5f), "ln.weight");
  const auto bias = b.constant(random_tensor({8}, 25), "ln.bias");
  b.output("a", written_layer_norm(b, x, 2, scale, bias, false));
  const auto x2 = b.input("x2", random_tensor({4, 8}, 32));
  b.output("b", written_layer_norm(b, x2, -1, scale, bias, true));
  const auto column_scale = b.constant(random_tensor({3, 1}, 26)), column_bias = b.constant(random_tensor({3, 1}, 27));
  b.output("over_axis_1", written_layer_norm(b, x, 1, column_scale, column_bias, false));
  const Rewrite r(b, {});
  CHECK(count(r.after, "layer_norm") == 2);
  CHECK(count(r.after, "rsqrt") == 1);  // the axis-1 one is left written out
  for (const Node& n : r.after.nodes)
    if (holds<LayerNorm>(n.op)) CHECK(n.inputs.size() == 3);
  CHECK(r.difference(1e-6).empty());
}

TEST_CASE("fuse_gelu: erf and tanh forms in any multiplication order; a wrong constant is left alone") {
  Builder b;
  const auto x = b.input("x", random_tensor({4, 6}, 28, -4, 4));
  auto scalar = [&](double v) { return b.constant(Tensor::from<float>({}, {float(v)})); };
  const auto one = scalar(1), half = scalar(0.5);
  // 0.5 * x * (1 + erf(x / sqrt 2))
  const auto erf_term = b.op(Add{}, {one, b.op(Erf{}, {b.op(Div{}, {x, scalar(std::numbers::sqrt2)})})});
  b.output("erf", b.op(Mul{}, {b.op(Mul{}, {half, x}), erf_term}));
  // x * (0.5 * (1 - erf(-x * 0.7071...)))  (JAX's erfc form)
  const auto negated = b.op(Mul{}, {b.op(Neg{}, {x}), scalar(std::numbers::sqrt2 / 2)});
  b.output("erfc", b.op(Mul{}, {x, b.op(Mul{}, {half, b.op(Sub{}, {one, b.op(Erf{}, {negated})})})}));
  // (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x*x*x))) * 0.5 * x
  auto tanh_form = [&](double coefficient) {
    const auto cube = b.op(Mul{}, {b.op(Mul{}, {x, x}), x});
    const auto inner = b.op(Add{}, {x, b.op(Mul{}, {scalar(coefficient), cube})});
    const auto t = b.op(Tanh{}, {b.op(Mul{}, {scalar(std::sqrt(2 / std::numbers::pi)), inner})});
    return b.op(Mul{}, {b.op(Mul{}, {b.op(Add{}, {one, t}), half}), x});
  };
  b.output("tanh", tanh_form(0.044715));
  b.output("not_gelu", tanh_form(0.05));
  const Rewrite r(b, {"fuse_gelu"});
  std::map<std::string, int> forms;
  for (const Node& n : r.after.nodes)
    if (const auto* g = rml::get_if<Gelu>(&n.op)) ++forms[g->approximate];
  CHECK(forms["none"] == 2);
  CHECK(forms["tanh"] == 1);
  CHECK(count(r.after, "tanh") == 1);  // the 0.05 one stays written out
  CHECK(r.difference(1e-6).empty());
}

TEST_CASE("fuse_attention: written-out causal attention becomes sdpa") {
  Builder b;
  const auto q = b.input("q", random_tensor({2, 2, 5, 4}, 29));
  const auto k = b.input("k", random_tensor({2, 2, 5, 4}, 30));
  const auto v = b.input("v", random_tensor({2, 2, 5, 4}, 31));
  const auto scores = b.op(Mul{}, {b.op(MatMul{}, {q, b.op(Transpose{{0, 1, 3, 2}}, {k})}),
                                  b.constant(Tensor::from<float>({}, {0.5f}))});
  Tensor keep(TensorType{DType::f32, {5, 5}});
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) keep.values<float>()[i * 5 + j] = j <= i ? 1.0f : 0.0f;
  const auto masked = b.op(Select{}, {b.constant(keep), scores,
                                      b.constant(Tensor::from<float>({}, {-std::numeric_limits<float>::infinity()}))});
  b.output("y", b.op(MatMul{}, {b.op(Softmax{}, {masked}), v}));
  const Rewrite r(b, {});
  REQUIRE(r.after.nodes.size() == 1);
  const Sdpa& sdpa = rml::get<Sdpa>(r.after.nodes[0].op);
  CHECK(sdpa.causal);
  CHECK(sdpa.scale == 0.5);
  CHECK(r.difference(1e-6).empty());
}

TEST_CASE("recognise_elementwise_functions: expansions of sigmoid and GELU become one op; a look-alike does not") {
  Builder b;
  const auto x = b.input("x", random_tensor({3, 7}, 33, -6, 6));
  auto scalar = [&](double v) { return b.constant(Tensor::from<float>({}, {float(v)})); };
  // 1 / (1 + exp(-x)), as JAX lowers the sigmoid on CPU
  const auto y = b.op(Add{}, {x, b.constant(random_tensor({7}, 34))});  // the chain starts at y, not x
  b.output("sigmoid", b.op(Div{}, {scalar(1), b.op(Add{}, {scalar(1), b.op(Exp{}, {b.op(Neg{}, {y})})})}));
  // A tanh GELU, 0.5 y (1 + tanh(c (y + 0.044715 y^3))), with tanh spelled through exp as
  // 2 / (1 + exp(-2z)) - 1: no tanh node for fuse_gelu to find, the function is the same.
  const auto cube = b.op(Mul{}, {b.op(Mul{}, {y, y}), y});
  const auto inner = b.op(Mul{}, {scalar(std::sqrt(2 / std::numbers::pi)), b.op(Add{}, {y, b.op(Mul{}, {scalar(0.044715), cube})})});
  const auto sig2 = b.op(Div{}, {scalar(1), b.op(Add{}, {scalar(1), b.op(Exp{}, {b.op(Mul{}, {scalar(-2), inner})})})});
  const auto tanh = b.op(Sub{}, {b.op(Mul{}, {scalar(2), sig2}), scalar(1)});
  b.output("gelu", b.op(Mul{}, {b.op(Mul{}, {scalar(0.5), y}), b.op(Add{}, {scalar(1), tanh})}));
  // 1 / (1 + exp(-1.01 x)) is close to a sigmoid but not one
  const auto scaled = b.op(Mul{}, {scalar(-1.01), x});
  b.output("almost", b.op(Div{}, {scalar(1), b.op(Add{}, {scalar(1), b.op(Exp{}, {scaled})})}));
  const Rewrite r(b, {"recognise_elementwise_functions"});
  CHECK(count(r.after, "sigmoid") == 1);
  std::size_t tanh_gelus = 0;
  for (const Node& n : r.after.nodes)
    if (const auto* g = rml::get_if<Gelu>(&n.op)) tanh_gelus += g->approximate == "tanh";
  CHECK(tanh_gelus == 1);
  CHECK(count(r.after, "exp") == 1);  // the look-alike's
  CHECK(r.difference(1e-6).empty());
}

TEST_CASE("an unknown pass is named") {
  Graph g;
  CHECK_THROWS_WITH_AS(passes::run_passes(g, {"fuse_everything"}), doctest::Contains("unknown pass 'fuse_everything'"),
                       Error);
}

// The specification's tiny node counts per model and route (direct: torch, jax,
// tf; StableHLO: stablehlo_torch, stablehlo_jax, stablehlo_tf).
const std::map<std::string, std::array<int, 6>> kSpecNodeCounts{
    {"mlp", {8, 8, 8, 11, 8, 9}},         {"cnn", {10, 19, 12, 18, 19, 18}},
    {"transformer_block", {32, 42, 29, 50, 42, 37}}, {"layernorm_gelu", {6, 6, 4, 7, 6, 7}},
    {"vit", {77, 95, 68, 113, 95, 84}},   {"encoder", {71, 96, 61, 106, 96, 78}},
    {"tiny_gpt", {71, 98, 63, 108, 98, 80}}, {"rnn", {46, 42, 41, 41, 42, 42}},
    {"lstm", {106, 102, 101, 101, 147, 102}}, {"ssm", {27, 34, 28, 28, 45, 33}},
    {"autoencoder", {14, 14, 14, 19, 17, 15}}, {"vae", {20, 20, 20, 26, 23, 21}},
    {"gan_generator", {9, 9, 9, 12, 9, 10}}, {"diffusion_mlp", {14, 14, 15, 17, 14, 16}},
    {"unet", {23, 29, 34, 27, 29, 39}},   {"gcn", {14, 11, 7, 13, 11, 12}},
    {"two_tower", {12, 12, 12, 16, 12, 13}}, {"clip", {21, 30, 22, 25, 30, 23}},
    {"moe", {57, 63, 43, 68, 64, 63}}};

TEST_CASE("no fixture has more nodes than the specification's count for its model and route") {
  int checked = 0;
  for (std::size_t r = 0; r < kRoutes.size(); ++r)
    for (const auto& [model, counts] : kSpecNodeCounts) {
      const fs::path path = fixture_path(kRoutes[r], model);
      if (!fs::exists(path)) continue;
      const Graph g = read_graph(path);
      INFO(path.filename().string());
      CHECK(static_cast<int>(g.nodes.size()) <= counts[r]);
      ++checked;
    }
  CHECK(checked == 114);
}
