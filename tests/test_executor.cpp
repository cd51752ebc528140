// rml::Executor against the reference interpreter. Property tests: every op
// in the registry on random shapes and attributes (seeded, reproducible),
// every attribute path the kernels specialise, random chains that exercise
// fusion groups and epilogues; then determinism across thread counts, runs
// and concurrent callers; errors; and what the plan reports about itself.
//
// Every result is compared with rml::evaluate within |a - b| <= 1e-5 + 1e-5 |b|
// (NaN matches NaN), fused and unfused, with 1 and 2 threads, through both
// run(TensorMap) and the zero-copy run (see executor_test_util.hpp).
#include "executor_test_util.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <set>
#include <optional>
#include <thread>

using namespace rml;
using namespace rml::test;
using doctest::Contains;

namespace {

std::string label(std::string_view what, int i) { return detail::concat(what, " #", i); }
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// RML_EXECUTOR_TEST_SCALE=n runs n times as many random cases (new seeds
/// after the default ones), for a longer search; the default is 1.
int scale() {
  const char* text = std::getenv("RML_EXECUTOR_TEST_SCALE");
  const int n = text ? std::atoi(text) : 1;
  return std::max(n, 1);
}

template <class Op>
constexpr bool is_one_of_f32_positive = std::is_same_v<Op, Log> || std::is_same_v<Op, Sqrt> || std::is_same_v<Op, Rsqrt>;

/// f32 data on which the unary op is well defined and well conditioned.
template <class Op>
Tensor unary_values(Rng& rng, const Shape& s) {
  if constexpr (is_one_of_f32_positive<Op>) return uniform(rng, s, 0.01f, 20.0f);
  else if constexpr (std::is_same_v<Op, Reciprocal>) return signed_magnitude(rng, s, 0.05f, 20.0f);
  else if constexpr (std::is_same_v<Op, Exp>) return uniform(rng, s, -20.0f, 20.0f);
  else if constexpr (std::is_same_v<Op, Sin> || std::is_same_v<Op, Cos>) return uniform(rng, s, -10.0f, 10.0f);
  else return uniform(rng, s, -6.0f, 6.0f);
}

/// i32 data: extremes included, so wrap-around (neg and abs of INT32_MIN) shows.
Tensor wide_ints(Rng& rng, const Shape& s) {
  Tensor t = coin(rng) ? ints(rng, s, INT32_MIN, INT32_MAX) : ints(rng, s, -50, 50);
  auto v = t.values<std::int32_t>();
  if (!v.empty() && coin(rng)) v[0] = INT32_MIN;
  if (v.size() > 1 && coin(rng)) v[v.size() - 1] = INT32_MAX;
  return t;
}

// ------------------------------------------------------------ elementwise families

template <class Op>
void unary_property(Rng& rng, int i) {
  const Shape s = random_shape(rng, static_cast<std::size_t>(i % 5));
  {
    Builder b;
    const auto x = b.input("x", unary_values<Op>(rng, s));
    b.output("y", b.op(Op{}, {x}));
    check_builder(b, label(Op::name, i));
  }
  {  // after a broadcasting add, so the op runs inside a fused group
    Builder b;
    const auto x = b.input("x", unary_values<Op>(rng, s));
    const auto c = b.constant(uniform(rng, broadcast_operand(rng, s), 0.0f, 0.5f));
    b.output("y", b.op(Op{}, {b.op(Add{}, {x, c})}));
    check_builder(b, label(Op::name, i) + " after add");
  }
  if constexpr (Op::accepts == Accepts::any) {
    Builder b;
    const auto x = b.input("x", wide_ints(rng, s));
    b.output("y", b.op(Op{}, {x}));
    check_builder(b, label(Op::name, i) + " i32");
  }
}

template <class Op>
Tensor binary_lhs(Rng& rng, const Shape& s) {
  if constexpr (std::is_same_v<Op, Pow>) return uniform(rng, s, 0.05f, 5.0f);
  else return uniform(rng, s, -10.0f, 10.0f);
}
template <class Op>
Tensor binary_rhs(Rng& rng, const Shape& s) {
  if constexpr (std::is_same_v<Op, Pow>) return uniform(rng, s, -3.0f, 3.0f);
  else if constexpr (std::is_same_v<Op, Div>) return signed_magnitude(rng, s, 0.05f, 10.0f);
  else if constexpr (std::is_same_v<Op, Maximum> || std::is_same_v<Op, Minimum>) return small_ints_f32(rng, s, -5, 5);
  else return uniform(rng, s, -10.0f, 10.0f);
}

template <class Op>
void binary_property(Rng& rng, int i) {
  const Shape out = random_shape(rng, static_cast<std::size_t>(i % 5));
  Shape sa = broadcast_operand(rng, out), sb = broadcast_operand(rng, out);
  if (coin(rng)) std::swap(sa, sb);
  {
    Builder b;
    Tensor ta = binary_lhs<Op>(rng, sa);
    if constexpr (std::is_same_v<Op, Maximum> || std::is_same_v<Op, Minimum>) ta = small_ints_f32(rng, sa, -5, 5);
    const auto a = b.input("a", std::move(ta));
    const auto bb = i % 3 == 2 ? b.constant(binary_rhs<Op>(rng, sb)) : b.input("b", binary_rhs<Op>(rng, sb));
    b.output("y", b.op(Op{}, {a, bb}));
    check_builder(b, label(Op::name, i));
  }
  {  // the same operand on both sides
    Builder b;
    const auto a = b.input("a", binary_lhs<Op>(rng, out));
    b.output("y", b.op(Op{}, {a, a}));
    check_builder(b, label(Op::name, i) + " x op x");
  }
  if constexpr (Op::accepts == Accepts::any) {
    Builder b;
    const bool narrow = std::is_same_v<Op, Maximum> || std::is_same_v<Op, Minimum>;
    const auto a = b.input("a", narrow ? ints(rng, sa, -5, 5) : wide_ints(rng, sa));
    const auto c = b.input("b", narrow ? ints(rng, sb, -5, 5) : wide_ints(rng, sb));
    b.output("y", b.op(Op{}, {a, c}));
    check_builder(b, label(Op::name, i) + " i32");
  }
}

template <class Op>
void compare_property(Rng& rng, int i) {
  const Shape out = random_shape(rng, static_cast<std::size_t>(i % 5));
  Shape sa = broadcast_operand(rng, out), sb = broadcast_operand(rng, out);
  if (coin(rng)) std::swap(sa, sb);
  {
    Builder b;
    Tensor ta = small_ints_f32(rng, sa, -3, 3), tb = small_ints_f32(rng, sb, -3, 3);
    sprinkle_specials(rng, ta, 0.1);
    sprinkle_specials(rng, tb, 0.1);
    const auto a = b.input("a", ta);
    const auto c = i % 3 == 2 ? b.constant(tb) : b.input("b", tb);
    b.output("y", b.op(Op{}, {a, c}));
    check_builder(b, label(Op::name, i));
  }
  {
    Builder b;
    const auto a = b.input("a", ints(rng, sa, -3, 3));
    const auto c = b.input("b", ints(rng, sb, -3, 3));
    b.output("y", b.op(Op{}, {a, c}));
    check_builder(b, label(Op::name, i) + " i32");
  }
}

void select_property(Rng& rng, int i) {
  const Shape out = random_shape(rng, static_cast<std::size_t>(i % 5));
  const bool cond_f32 = i % 2 == 0, values_f32 = (i / 2) % 2 == 0;
  Builder b;
  Tensor cond = cond_f32 ? small_ints_f32(rng, broadcast_operand(rng, out), -1, 1) : ints(rng, broadcast_operand(rng, out), -2, 2);
  if (cond_f32) sprinkle_specials(rng, cond, 0.1);
  auto values = [&](const Shape& s) { return values_f32 ? uniform(rng, s, -5, 5) : ints(rng, s, -1000, 1000); };
  const auto c = b.input("cond", cond);
  const auto x = b.input("a", values(broadcast_operand(rng, out)));
  const auto y = i % 3 == 0 ? b.constant(values(broadcast_operand(rng, out))) : b.input("b", values(broadcast_operand(rng, out)));
  b.output("y", b.op(Select{}, {c, x, y}));
  check_builder(b, label("select", i));
}

void cast_property(Rng& rng, int i) {
  const Shape s = random_shape(rng, static_cast<std::size_t>(i % 5));
  for (DType from : {DType::f32, DType::i32})
    for (DType to : {DType::f32, DType::i32}) {
      Builder b;
      Tensor t(from, s);
      if (from == DType::f32) {
        t = coin(rng) ? uniform(rng, s, -5.0f, 5.0f) : uniform(rng, s, -3e9f, 3e9f);
        sprinkle_specials(rng, t, 0.1);
      } else {
        t = wide_ints(rng, s);
      }
      const auto x = b.input("x", t);
      b.output("y", b.op(Cast{.to = to}, {x}));
      check_builder(b, detail::concat(label("cast", i), " ", dtype_name(from), "->", dtype_name(to)));
    }
}

void gelu_property(Rng& rng, int i) {
  const Shape s = random_shape(rng, static_cast<std::size_t>(i % 5));
  for (const char* approximate : {"none", "tanh"}) {
    Builder b;
    const auto x = b.input("x", uniform(rng, s, -8.0f, 8.0f));
    b.output("y", b.op(Gelu{.approximate = approximate}, {x}));
    check_builder(b, label("gelu", i) + " " + approximate);
  }
}

// ------------------------------------------------------------ layout and indexing

/// A random shape with the same element count as `s` (one entry maybe -1).
Shape random_reshape(Rng& rng, const Shape& s) {
  std::int64_t n = element_count(s);
  Shape out;
  if (n == 0) return {0, 3};
  const int rank = uniform_int(rng, n == 1 ? 0 : 1, 4);
  for (int d = 0; d + 1 < rank; ++d) {
    std::vector<std::int64_t> divisors;
    for (std::int64_t k = 1; k <= n; ++k)
      if (n % k == 0) divisors.push_back(k);
    const std::int64_t k = pick(rng, divisors);
    out.push_back(k);
    n /= k;
  }
  if (rank > 0) out.push_back(n);
  std::shuffle(out.begin(), out.end(), rng);
  if (!out.empty() && coin(rng, 0.4)) out[static_cast<std::size_t>(uniform_int(rng, 0, static_cast<int>(out.size()) - 1))] = -1;
  return out;
}

void reshape_property(Rng& rng, int i) {
  const Shape s = random_shape(rng, static_cast<std::size_t>(i % 5));
  const Shape target = random_reshape(rng, s);
  Builder b;
  const auto x = b.input("x", uniform(rng, s, -3, 3));
  const auto r = b.op(Reshape{.shape = target}, {x});          // a reshape of an input, read later
  const auto t = b.op(Tanh{}, {r});
  const auto back = b.op(Reshape{.shape = s}, {t});            // a reshape of a computed value
  b.output("y", b.op(Mul{}, {back, x}));
  b.output("r", b.op(Reshape{.shape = target}, {b.op(Neg{}, {x})}));  // a reshape that is an output
  check_builder(b, label("reshape", i) + " to " + to_string(target));
  Builder c;
  const auto xi = c.input("x", ints(rng, s, -100, 100));
  c.output("y", c.op(Reshape{.shape = target}, {xi}));
  check_builder(c, label("reshape", i) + " i32");
}

Ints random_perm(Rng& rng, std::size_t rank) {
  Ints perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  return perm;
}

void transpose_property(Rng& rng, int i) {
  const Shape s = random_shape(rng, static_cast<std::size_t>(i % 5));
  const Ints perm = random_perm(rng, s.size());
  Builder b;
  const auto x = b.input("x", i % 2 ? uniform(rng, s, -3, 3) : ints(rng, s, -100, 100));
  b.output("y", b.op(Transpose{.perm = perm}, {x}));
  check_builder(b, label("transpose", i) + " perm " + to_string(perm));
}

void broadcast_to_property(Rng& rng, int i) {
  const Shape out = random_shape(rng, static_cast<std::size_t>(i % 5));
  const Shape small = broadcast_operand(rng, out, 0.5);
  Builder b;
  const auto x = b.input("x", uniform(rng, small, -3, 3));
  b.output("y", b.op(BroadcastTo{.shape = out}, {x}));                              // a copy kernel
  const auto w = b.input("w", uniform(rng, out, -3, 3));
  b.output("z", b.op(Sub{}, {w, b.op(BroadcastTo{.shape = out}, {x})}));           // absorbed into a group
  check_builder(b, label("broadcast_to", i) + " " + to_string(small) + " -> " + to_string(out));
  Builder c;
  const auto xi = c.input("x", ints(rng, small, -9, 9));
  c.output("y", c.op(BroadcastTo{.shape = out}, {xi}));
  check_builder(c, label("broadcast_to", i) + " i32");
}

Slice random_slice(Rng& rng, const Shape& s) {
  Slice op;
  std::vector<std::int64_t> axes(s.size());
  std::iota(axes.begin(), axes.end(), 0);
  std::shuffle(axes.begin(), axes.end(), rng);
  axes.resize(static_cast<std::size_t>(uniform_int(rng, 0, static_cast<int>(s.size()))));
  const bool with_steps = coin(rng, 0.8);
  for (std::int64_t a : axes) {
    const std::int64_t dim = s[static_cast<std::size_t>(a)];
    op.axes.push_back(coin(rng) ? a : a - static_cast<std::int64_t>(s.size()));
    auto index = [&] {
      if (coin(rng, 0.1)) return pick<std::int64_t>(rng, {INT64_MIN, INT64_MAX, -1000, 1000});
      return static_cast<std::int64_t>(uniform_int(rng, static_cast<int>(-dim - 2), static_cast<int>(dim + 2)));
    };
    op.starts.push_back(index());
    op.ends.push_back(index());
    if (with_steps) op.steps.push_back(pick<std::int64_t>(rng, {1, 1, 2, 3, 5, -1, -1, -2, -3}));
  }
  return op;
}

void slice_property(Rng& rng, int i) {
  const Shape s = random_shape(rng, static_cast<std::size_t>(1 + i % 4));
  const Slice op = random_slice(rng, s);
  Builder b;
  const auto x = b.input("x", i % 3 ? uniform(rng, s, -3, 3) : ints(rng, s, -100, 100));
  b.output("y", b.op(op, {x}));
  check_builder(b, detail::concat(label("slice", i), " of ", to_string(s), " axes ", to_string(op.axes), " starts ",
                                  to_string(op.starts), " ends ", to_string(op.ends), " steps ", to_string(op.steps)));
}

void concat_property(Rng& rng, int i) {
  const std::size_t rank = static_cast<std::size_t>(1 + i % 4);
  const Shape base = random_shape(rng, rank, 1000);
  const int axis = uniform_int(rng, -static_cast<int>(rank), static_cast<int>(rank) - 1);
  const std::size_t a = static_cast<std::size_t>(axis < 0 ? axis + static_cast<int>(rank) : axis);
  const int count = 1 + i % 4;
  const bool f32 = i % 5 != 4;
  Builder b;
  std::vector<ValueId> parts;
  for (int k = 0; k < count; ++k) {
    Shape s = base;
    s[a] = pick<std::int64_t>(rng, {0, 1, 2, 3, 5, 7});
    Tensor t = f32 ? uniform(rng, s, -3, 3) : ints(rng, s, -100, 100);
    parts.push_back(coin(rng, 0.25) ? b.constant(t) : b.input("x" + std::to_string(k), t));
  }
  if (b.graph().inputs.empty()) parts[0] = b.input("x", f32 ? uniform(rng, b.type(parts[0]).shape, -3, 3) : ints(rng, b.type(parts[0]).shape, -9, 9));
  if (count > 1 && coin(rng, 0.3)) parts[1] = parts[0];  // the same value twice
  b.output("y", b.op(Concat{.axis = axis}, parts));
  check_builder(b, detail::concat(label("concat", i), " of ", count, " on axis ", axis));
}

void pad_property(Rng& rng, int i) {
  const std::size_t rank = static_cast<std::size_t>(i % 5);
  const Shape s = random_shape(rng, rank, 1000);
  Ints pads;
  for (std::size_t k = 0; k < 2 * rank; ++k) pads.push_back(uniform_int(rng, 0, 3));
  const bool f32 = i % 3 != 2;
  const double value = f32 ? pick<double>(rng, {0.0, 1.5, -2.0, -std::numeric_limits<double>::infinity()})
                           : pick<double>(rng, {0.0, 7.0, -2147483648.0});
  Builder b;
  const auto x = b.input("x", f32 ? uniform(rng, s, -3, 3) : ints(rng, s, -100, 100));
  b.output("y", b.op(Pad{.pads = pads, .value = value}, {x}));
  check_builder(b, detail::concat(label("pad", i), " of ", to_string(s), " pads ", to_string(pads), " value ", value));
}

void gather_property(Rng& rng, int i) {
  const std::size_t rank = static_cast<std::size_t>(1 + i % 4);
  const Shape s = random_shape(rng, rank, 2000);
  const int axis = uniform_int(rng, -static_cast<int>(rank), static_cast<int>(rank) - 1);
  const std::int64_t dim = s[static_cast<std::size_t>(axis < 0 ? axis + static_cast<int>(rank) : axis)];
  const Shape index_shape = random_shape(rng, static_cast<std::size_t>(uniform_int(rng, 0, 2)), 20);
  const bool f32 = i % 3 != 2;
  Builder b;
  const auto data = b.input("data", f32 ? uniform(rng, s, -3, 3) : ints(rng, s, -100, 100));
  const auto idx = b.input("idx", ints(rng, index_shape, -dim, dim - 1));
  b.output("y", b.op(Gather{.axis = axis}, {data, idx}));
  check_builder(b, detail::concat(label("gather", i), " of ", to_string(s), " axis ", axis, " indices ", to_string(index_shape)));
}

void top_k_property(Rng& rng, int i) {
  const Shape s = random_shape(rng, static_cast<std::size_t>(1 + i % 4), 2000);
  const std::int64_t k = uniform_int(rng, 0, static_cast<int>(s.back()));
  const bool f32 = i % 3 != 2;
  Tensor x = f32 ? (coin(rng) ? small_ints_f32(rng, s, -3, 3) : uniform(rng, s, -3, 3)) : ints(rng, s, -3, 3);
  if (f32 && i % 4 == 1) sprinkle_specials(rng, x, 0.2);
  Builder b;
  const auto in = b.input("x", x);
  const auto out = b.op_multi(TopK{.k = k}, {in}, 2);
  b.output("values", out[0]);
  b.output("indices", out[1]);
  check_builder(b, detail::concat(label("top_k", i), " of ", to_string(s), " k ", k));
}

// ------------------------------------------------------------ reductions

void cumsum_property(Rng& rng, int i) {
  const Shape s = random_shape(rng, static_cast<std::size_t>(1 + i % 4));
  const int rank = static_cast<int>(s.size());
  const CumSum op{.axis = uniform_int(rng, -rank, rank - 1), .exclusive = coin(rng), .reverse = coin(rng)};
  const bool f32 = i % 3 != 2;
  Tensor x = f32 ? uniform(rng, s, -4, 4) : ints(rng, s, -1000000000, 1000000000);  // i32 sums wrap
  if (f32 && i % 4 == 1) sprinkle_specials(rng, x, 0.1);
  Builder b;
  b.output("y", b.op(op, {b.input("x", x)}));
  check_builder(b, detail::concat(label("cumsum", i), " of ", to_string(s), " axis ", op.axis,
                                  op.exclusive ? " exclusive" : "", op.reverse ? " reverse" : ""));
}

Ints random_axes(Rng& rng, std::size_t rank) {
  Ints axes;
  for (std::size_t d = 0; d < rank; ++d)
    if (coin(rng)) axes.push_back(coin(rng) ? std::int64_t(d) : std::int64_t(d) - std::int64_t(rank));
  std::shuffle(axes.begin(), axes.end(), rng);
  return axes;
}

template <class Op>
void reduce_property(Rng& rng, int i) {
  const Shape s = random_shape(rng, static_cast<std::size_t>(i % 5));
  const Ints axes = random_axes(rng, s.size());
  const bool keep = coin(rng);
  const Op op{.axes = axes, .keep_dims = keep};
  {
    Builder b;
    Tensor t = uniform(rng, s, -3, 3);
    if (i % 4 == 3 && !std::is_same_v<Op, ReduceMean>) sprinkle_specials(rng, t, 0.05);
    const auto x = b.input("x", t);
    b.output("y", b.op(op, {x}));
    check_builder(b, detail::concat(label(Op::name, i), " of ", to_string(s), " axes ", to_string(axes), " keep ", keep));
  }
  if constexpr (Op::accepts == Accepts::any) {
    Builder b;
    const auto x = b.input("x", wide_ints(rng, s));
    b.output("y", b.op(op, {x}));
    check_builder(b, detail::concat(label(Op::name, i), " i32 of ", to_string(s), " axes ", to_string(axes)));
  }
}

// ------------------------------------------------------------ linear algebra

void matmul_case(const Shape& sa, const Shape& sb, bool b_constant, bool i32, Rng& rng, const std::string& what) {
  Builder b;
  auto values = [&](const Shape& s) { return i32 ? ints(rng, s, -20, 20) : uniform(rng, s, -0.5f, 0.5f); };
  const auto a = b.input("a", values(sa));
  const auto w = b_constant ? b.constant(values(sb)) : b.input("b", values(sb));
  b.output("y", b.op(MatMul{}, {a, w}));
  check_builder(b, detail::concat(what, " ", to_string(sa), " @ ", to_string(sb), b_constant ? " (b constant)" : " (b input)",
                                  i32 ? " i32" : ""));
}

void matmul_property(Rng& rng, int i) {
  auto dim = [&] { return pick<std::int64_t>(rng, {1, 2, 3, 7, 13, 16, 33}); };
  const std::int64_t m = dim(), k = dim(), n = dim();
  Shape sa{m, k}, sb{k, n};
  switch (i % 5) {
    case 0: sa = {k}; break;
    case 1: sb = {k}; break;
    case 2: {
      const Shape batch = random_shape(rng, static_cast<std::size_t>(uniform_int(rng, 1, 2)), 12);
      Shape ba = broadcast_operand(rng, batch), bb = broadcast_operand(rng, batch);
      sa.insert(sa.begin(), ba.begin(), ba.end());
      sb.insert(sb.begin(), bb.begin(), bb.end());
      break;
    }
    case 3: sa = {k}, sb = {k}; break;
    default: break;
  }
  matmul_case(sa, sb, coin(rng), i % 7 == 6, rng, label("matmul", i));
}

Tensor conv_weight(Rng& rng, const Shape& w) {
  const float scale = 1.0f / std::sqrt(float(std::max<std::int64_t>(1, w[1] * w[2] * w[3])));
  return uniform(rng, w, -scale, scale);
}

/// The output size along one axis, or 0 when the window does not fit.
std::int64_t window_out(std::int64_t in, std::int64_t pad0, std::int64_t pad1, std::int64_t kernel, std::int64_t dil,
                        std::int64_t stride) {
  const std::int64_t padded = in + pad0 + pad1, extent = dil * (kernel - 1) + 1;
  return extent > padded ? 0 : (padded - extent) / stride + 1;
}

void conv_case(Rng& rng, const std::string& what, std::int64_t batch, std::int64_t channels, std::int64_t outputs,
               std::int64_t height, std::int64_t width, std::int64_t kh, std::int64_t kw, const Conv2d& op, bool bias,
               bool weight_input = false) {
  Builder b;
  const Shape xs{batch, channels, height, width}, ws{outputs, channels / op.groups, kh, kw};
  const auto x = b.input("x", uniform(rng, xs, -1, 1));
  const auto w = weight_input ? b.input("w", conv_weight(rng, ws)) : b.constant(conv_weight(rng, ws));
  std::vector<ValueId> in{x, w};
  if (bias) in.push_back(b.constant(uniform(rng, {outputs}, -1, 1)));
  b.output("y", b.op(op, in));
  check_builder(b, detail::concat(what, " x ", to_string(xs), " w ", to_string(ws), " strides ", to_string(op.strides), " pads ",
                                  to_string(op.pads), " dilations ", to_string(op.dilations), " groups ", op.groups,
                                  bias ? " bias" : ""));
}

void conv_property(Rng& rng, int i) {
  while (true) {
    const std::int64_t groups = pick<std::int64_t>(rng, {1, 1, 2, 3});
    const std::int64_t channels = groups * uniform_int(rng, 1, 3), outputs = groups * uniform_int(rng, 1, 4);
    const std::int64_t height = pick<std::int64_t>(rng, {1, 3, 5, 7, 13}), width = pick<std::int64_t>(rng, {1, 2, 5, 8, 13});
    const std::int64_t kh = uniform_int(rng, 1, 3), kw = uniform_int(rng, 1, 3);
    Conv2d op;
    op.groups = groups;
    op.strides = {uniform_int(rng, 1, 3), uniform_int(rng, 1, 3)};
    op.dilations = {uniform_int(rng, 1, 2), uniform_int(rng, 1, 2)};
    op.pads = {uniform_int(rng, 0, 2), uniform_int(rng, 0, 2), uniform_int(rng, 0, 2), uniform_int(rng, 0, 2)};
    if (i % 4 == 0) op.pads = {0, 0, 0, 0}, op.strides = {1, 1};
    if (window_out(height, op.pads[0], op.pads[2], kh, op.dilations[0], op.strides[0]) == 0 ||
        window_out(width, op.pads[1], op.pads[3], kw, op.dilations[1], op.strides[1]) == 0)
      continue;
    conv_case(rng, label("conv2d", i), pick<std::int64_t>(rng, {1, 2, 3}), channels, outputs, height, width, kh, kw, op,
              coin(rng), i % 5 == 4);
    return;
  }
}

template <class Pool>
void pool_case(Rng& rng, const std::string& what, const Shape& xs, const Pool& op, bool specials = false) {
  Builder b;
  Tensor t = uniform(rng, xs, -3, 3);
  if (specials) sprinkle_specials(rng, t, 0.1);
  const auto x = b.input("x", t);
  b.output("y", b.op(op, {x}));
  std::string text = detail::concat(what, " x ", to_string(xs), " kernel ", to_string(op.kernel), " strides ",
                                    to_string(op.strides), " pads ", to_string(op.pads), " dilations ", to_string(op.dilations));
  if constexpr (std::is_same_v<Pool, AvgPool2d>) text += op.count_include_pad ? " count_include_pad" : "";
  check_builder(b, text);
}

template <class Pool>
void pool_property(Rng& rng, int i) {
  while (true) {
    const Shape xs{uniform_int(rng, 1, 3), uniform_int(rng, 1, 3), pick<std::int64_t>(rng, {1, 2, 5, 7, 13}),
                   pick<std::int64_t>(rng, {1, 3, 6, 13})};
    Pool op;
    op.kernel = {uniform_int(rng, 1, 3), uniform_int(rng, 1, 3)};
    op.strides = {uniform_int(rng, 1, 3), uniform_int(rng, 1, 3)};
    op.dilations = {uniform_int(rng, 1, 2), uniform_int(rng, 1, 2)};
    const std::int64_t eh = op.dilations[0] * (op.kernel[0] - 1) + 1, ew = op.dilations[1] * (op.kernel[1] - 1) + 1;
    op.pads = {uniform_int(rng, 0, static_cast<int>(eh - 1)), uniform_int(rng, 0, static_cast<int>(ew - 1)),
               uniform_int(rng, 0, static_cast<int>(eh - 1)), uniform_int(rng, 0, static_cast<int>(ew - 1))};
    if constexpr (std::is_same_v<Pool, AvgPool2d>) op.count_include_pad = coin(rng);
    if (window_out(xs[2], op.pads[0], op.pads[2], op.kernel[0], op.dilations[0], op.strides[0]) == 0 ||
        window_out(xs[3], op.pads[1], op.pads[3], op.kernel[1], op.dilations[1], op.strides[1]) == 0)
      continue;
    pool_case(rng, label(Pool::name, i), xs, op, std::is_same_v<Pool, MaxPool2d> && i % 3 == 2);
    return;
  }
}

// ------------------------------------------------------------ nn ops

void softmax_property(Rng& rng, int i) {
  const Shape s = random_shape(rng, static_cast<std::size_t>(1 + i % 4));
  const int rank = static_cast<int>(s.size());
  const int axis = uniform_int(rng, -rank, rank - 1);
  Builder b;
  Tensor t = uniform(rng, s, -8, 8);
  if (i % 4 == 3)
    for (float& v : t.values<float>())
      if (coin(rng, 0.2)) v = -inf;
  const auto x = b.input("x", t);
  b.output("y", b.op(Softmax{.axis = axis}, {x}));
  check_builder(b, detail::concat(label("softmax", i), " of ", to_string(s), " axis ", axis));
}

void layer_norm_property(Rng& rng, int i) {
  const Shape s = random_shape(rng, static_cast<std::size_t>(1 + i % 4));
  const Shape d{s.back()};
  const double eps = pick<double>(rng, {1e-5, 1e-5, 0.1, 1e-3});
  Builder b;
  const auto x = b.input("x", uniform(rng, s, -4, 4));
  std::vector<ValueId> in{x};
  const int extra = i % 3;
  for (int k = 0; k < extra; ++k)
    in.push_back(coin(rng, 0.7) ? b.constant(uniform(rng, d, -2, 2)) : b.input("p" + std::to_string(k), uniform(rng, d, -2, 2)));
  b.output("y", b.op(LayerNorm{.eps = eps}, in));
  check_builder(b, detail::concat(label("layer_norm", i), " of ", to_string(s), " with ", extra, " parameters, eps ", eps));
}

void sdpa_case(Rng& rng, const std::string& what, const Shape& q, const Shape& k, const Shape& v,
               std::optional<Shape> mask, bool causal, std::optional<double> scale, bool mask_inf = false) {
  Builder b;
  std::vector<ValueId> in{b.input("q", uniform(rng, q, -1, 1)), b.input("k", uniform(rng, k, -1, 1)),
                          b.input("v", uniform(rng, v, -1, 1))};
  if (mask) {
    Tensor m = uniform(rng, *mask, -2, 2);
    if (mask_inf)
      for (float& x : m.values<float>())
        if (coin(rng, 0.3)) x = -inf;
    in.push_back(coin(rng) ? b.constant(m) : b.input("mask", m));
  }
  b.output("y", b.op(Sdpa{.causal = causal, .scale = scale}, in));
  check_builder(b, detail::concat(what, " q ", to_string(q), " k ", to_string(k), " v ", to_string(v), " mask ",
                                  mask ? to_string(*mask) : "none", causal ? " causal" : "", scale ? " scale" : ""));
}

void sdpa_property(Rng& rng, int i) {
  const Shape batch = random_shape(rng, static_cast<std::size_t>(i % 3), 12);
  const std::int64_t lq = pick<std::int64_t>(rng, {1, 3, 5, 7, 13}), lk = pick<std::int64_t>(rng, {1, 3, 5, 7, 13});
  const std::int64_t d = pick<std::int64_t>(rng, {1, 4, 8, 16}), dv = pick<std::int64_t>(rng, {1, 3, 8});
  auto with = [&](Shape s, std::int64_t rows, std::int64_t cols) {
    s.push_back(rows);
    s.push_back(cols);
    return s;
  };
  const Shape qb = broadcast_operand(rng, batch), kb = broadcast_operand(rng, batch), vb = broadcast_operand(rng, batch);
  const Shape out_batch = broadcast_shapes(broadcast_shapes(qb, kb, "q, k"), vb, "v");
  const Shape q = with(qb, lq, d), k = with(kb, lk, d), v = with(vb, lk, dv);
  std::optional<Shape> mask;
  if (coin(rng)) mask = broadcast_operand(rng, with(out_batch, lq, lk));
  const std::optional<double> scale = coin(rng, 0.3) ? std::optional<double>(0.37) : std::nullopt;
  sdpa_case(rng, label("sdpa", i), q, k, v, mask, coin(rng), scale, i % 4 == 3);
}

// ------------------------------------------------------------ every op

template <class Op>
bool op_property(Rng& rng, int i) {
  if constexpr (UnaryOp<Op>) unary_property<Op>(rng, i);
  else if constexpr (BinaryOp<Op>) binary_property<Op>(rng, i);
  else if constexpr (CompareOp<Op>) compare_property<Op>(rng, i);
  else if constexpr (std::is_same_v<Op, Select>) select_property(rng, i);
  else if constexpr (std::is_same_v<Op, Cast>) cast_property(rng, i);
  else if constexpr (std::is_same_v<Op, Gelu>) gelu_property(rng, i);
  else if constexpr (std::is_same_v<Op, Reshape>) reshape_property(rng, i);
  else if constexpr (std::is_same_v<Op, Transpose>) transpose_property(rng, i);
  else if constexpr (std::is_same_v<Op, BroadcastTo>) broadcast_to_property(rng, i);
  else if constexpr (std::is_same_v<Op, Slice>) slice_property(rng, i);
  else if constexpr (std::is_same_v<Op, Concat>) concat_property(rng, i);
  else if constexpr (std::is_same_v<Op, Pad>) pad_property(rng, i);
  else if constexpr (std::is_same_v<Op, Gather>) gather_property(rng, i);
  else if constexpr (std::is_same_v<Op, TopK>) top_k_property(rng, i);
  else if constexpr (std::is_same_v<Op, ReduceSum> || std::is_same_v<Op, ReduceMean> || std::is_same_v<Op, ReduceMax> ||
                     std::is_same_v<Op, ReduceMin>)
    reduce_property<Op>(rng, i);
  else if constexpr (std::is_same_v<Op, CumSum>) cumsum_property(rng, i);
  else if constexpr (std::is_same_v<Op, MatMul>) matmul_property(rng, i);
  else if constexpr (std::is_same_v<Op, Conv2d>) conv_property(rng, i);
  else if constexpr (std::is_same_v<Op, MaxPool2d> || std::is_same_v<Op, AvgPool2d>) pool_property<Op>(rng, i);
  else if constexpr (std::is_same_v<Op, Softmax>) softmax_property(rng, i);
  else if constexpr (std::is_same_v<Op, LayerNorm>) layer_norm_property(rng, i);
  else if constexpr (std::is_same_v<Op, Sdpa>) sdpa_property(rng, i);
  else return false;  // an op added to the registry without a property here
  return true;
}

}  // namespace

// ================================================================ every op

TEST_CASE("every op in the registry matches the reference on random shapes, fused and unfused, 1 and 2 threads") {
  std::size_t index = 0, covered = 0;
  Registry::for_each([&](auto type) {
    using Op = typename decltype(type)::type;
    Rng rng(1000 + static_cast<unsigned>(index++));
    bool has_property = true;
    for (int i = 0; i < 50 * scale() && has_property; ++i) has_property = op_property<Op>(rng, i);
    if (has_property) ++covered;
    CHECK_MESSAGE(has_property, "op '", Op::name, "' has no executor property test");
  });
  CHECK(covered == Registry::size);
  CHECK(Registry::size == 49);
}

// ================================================================ attribute paths

TEST_CASE("reductions over leading, middle, trailing, multiple, all and no axes, keep_dims both ways") {
  Rng rng(7);
  const Shape s{3, 5, 7, 4};
  const std::vector<Ints> axes_list{{},     {0},    {1},    {2},    {3},       {-1},         {0, 1}, {1, 2},
                                    {2, 3}, {0, 2}, {1, 3}, {0, 3}, {-4, -2}, {0, 1, 2, 3}, {0, 2, 3}, {3, 1, 0}};
  auto run = [&]<class Op>(std::type_identity<Op>) {
    for (const Ints& axes : axes_list)
      for (bool keep : {false, true}) {
        const Op op{.axes = axes, .keep_dims = keep};
        Builder b;
        const auto x = b.input("x", uniform(rng, s, -3, 3));
        b.output("y", b.op(op, {x}));
        check_builder(b, detail::concat(Op::name, " axes ", to_string(axes), " keep ", keep));
        if constexpr (Op::accepts == Accepts::any) {
          Builder c;
          const auto xi = c.input("x", wide_ints(rng, s));
          c.output("y", c.op(op, {xi}));
          check_builder(c, detail::concat(Op::name, " i32 axes ", to_string(axes), " keep ", keep));
        }
      }
    for (bool keep : {false, true}) {  // rank 0 and rank 1
      Builder b;
      const auto x0 = b.input("x0", Tensor::scalar(2.5f));
      const auto x1 = b.input("x1", uniform(rng, {13}, -3, 3));
      b.output("y0", b.op(Op{.axes = {}, .keep_dims = keep}, {x0}));
      b.output("y1", b.op(Op{.axes = {0}, .keep_dims = keep}, {x1}));
      b.output("y2", b.op(Op{.axes = {}, .keep_dims = keep}, {x1}));
      check_builder(b, detail::concat(Op::name, " rank 0 and 1, keep ", keep));
    }
  };
  run(std::type_identity<ReduceSum>{});
  run(std::type_identity<ReduceMean>{});
  run(std::type_identity<ReduceMax>{});
  run(std::type_identity<ReduceMin>{});
}

TEST_CASE("softmax over the last, a middle and the first axis, contiguous and strided") {
  Rng rng(8);
  const std::vector<std::pair<Shape, std::int64_t>> cases{
      {{2, 7, 13}, -1}, {{2, 7, 13}, 1}, {{2, 7, 13}, 0}, {{3, 1, 5}, 1}, {{100}, 0},
      {{1, 33, 3, 2}, -3}, {{7, 300}, -1}, {{1}, 0}, {{4, 5, 6, 7}, 2}};
  for (const auto& [s, axis] : cases) {
    Builder b;
    const auto x = b.input("x", uniform(rng, s, -10, 10));
    b.output("y", b.op(Softmax{.axis = axis}, {x}));
    check_builder(b, detail::concat("softmax ", to_string(s), " axis ", axis));
  }
}

TEST_CASE("transpose with every rank-3 perm and several rank-2 and rank-4 perms") {
  Rng rng(9);
  std::vector<std::pair<Shape, Ints>> cases{{{7, 13}, {1, 0}}, {{1, 33}, {1, 0}}, {{100, 3}, {0, 1}}};
  Ints p3{0, 1, 2};
  do cases.push_back({{3, 5, 7}, p3});
  while (std::next_permutation(p3.begin(), p3.end()));
  for (Ints p4 : {Ints{0, 2, 1, 3}, Ints{3, 2, 1, 0}, Ints{0, 1, 3, 2}, Ints{2, 0, 3, 1}, Ints{1, 0, 2, 3}})
    cases.push_back({{2, 3, 1, 13}, p4}), cases.push_back({{7, 5, 33, 3}, p4});
  cases.push_back({{}, {}});
  for (const auto& [s, perm] : cases) {
    Builder b;
    const auto x = b.input("x", uniform(rng, s, -3, 3));
    b.output("y", b.op(Transpose{.perm = perm}, {x}));
    b.output("z", b.op(Relu{}, {b.op(Transpose{.perm = perm}, {x})}));
    check_builder(b, detail::concat("transpose ", to_string(s), " perm ", to_string(perm)));
  }
}

TEST_CASE("slice with negative and >1 steps, negative and clamped indices, empty results") {
  Rng rng(10);
  const Shape s{7, 13, 5};
  const std::vector<Slice> cases{
      Slice{.axes = {0}, .starts = {0}, .ends = {7}, .steps = {}},
      Slice{.axes = {1}, .starts = {2}, .ends = {11}, .steps = {3}},
      Slice{.axes = {1}, .starts = {-1}, .ends = {-14}, .steps = {-1}},
      Slice{.axes = {0, 2}, .starts = {6, 4}, .ends = {-100, 0}, .steps = {-2, -3}},
      Slice{.axes = {-1, -3}, .starts = {-3, 1}, .ends = {100, 6}, .steps = {1, 2}},
      Slice{.axes = {2}, .starts = {3}, .ends = {3}, .steps = {1}},
      Slice{.axes = {1}, .starts = {5}, .ends = {2}, .steps = {1}},
      Slice{.axes = {0, 1, 2}, .starts = {INT64_MAX, INT64_MIN, 0}, .ends = {INT64_MIN, INT64_MAX, 5}, .steps = {-1, 5, 2}},
      Slice{.axes = {1}, .starts = {12}, .ends = {0}, .steps = {-4}},
      Slice{.axes = {}, .starts = {}, .ends = {}, .steps = {}},
  };
  for (const Slice& op : cases) {
    Builder b;
    const auto x = b.input("x", uniform(rng, s, -3, 3));
    b.output("y", b.op(op, {x}));
    b.output("z", b.op(Exp{}, {b.op(op, {x})}));
    check_builder(b, detail::concat("slice axes ", to_string(op.axes), " starts ", to_string(op.starts), " ends ",
                                    to_string(op.ends), " steps ", to_string(op.steps)));
  }
}

TEST_CASE("concat of 1 to 4 inputs on every axis, f32 and i32") {
  Rng rng(11);
  for (std::size_t rank = 1; rank <= 4; ++rank)
    for (int axis = -1; axis < static_cast<int>(rank); ++axis)
      for (int count = 1; count <= 4; ++count) {
        const Shape full{3, 5, 2, 7};
        const Shape base(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(rank));
        const std::size_t a = static_cast<std::size_t>(axis < 0 ? axis + static_cast<int>(rank) : axis);
        const bool f32 = count != 3;
        Builder b;
        std::vector<ValueId> parts;
        for (int k = 0; k < count; ++k) {
          Shape shape = base;
          shape[a] = 1 + (k * 3) % 5;
          Tensor t = f32 ? uniform(rng, shape, -3, 3) : ints(rng, shape, -100, 100);
          parts.push_back(k == 2 ? b.constant(t) : b.input("x" + std::to_string(k), t));
        }
        b.output("y", b.op(Concat{.axis = axis}, parts));
        check_builder(b, detail::concat("concat rank ", rank, " axis ", axis, " of ", count, f32 ? "" : " i32"));
      }
}

TEST_CASE("pad on every axis with begin and end pads, f32 and i32 values") {
  Rng rng(12);
  const std::vector<std::pair<Shape, Ints>> cases{
      {{}, {}}, {{5}, {2, 3}}, {{3, 4}, {0, 1, 2, 0}}, {{2, 3, 5}, {1, 0, 2, 0, 3, 1}},
      {{1, 2, 3, 4}, {1, 1, 1, 1, 1, 1, 1, 1}}, {{2, 1, 3, 1}, {0, 0, 0, 3, 0, 0, 0, 0}}, {{7, 13}, {0, 0, 0, 0}}};
  for (const auto& [s, pads] : cases)
    for (double value : {0.0, -1.5, double(-inf)}) {
      Builder b;
      const auto x = b.input("x", uniform(rng, s, -3, 3));
      b.output("y", b.op(Pad{.pads = pads, .value = value}, {x}));
      check_builder(b, detail::concat("pad ", to_string(s), " pads ", to_string(pads), " value ", value));
      if (std::isfinite(value)) {
        Builder c;
        const auto xi = c.input("x", ints(rng, s, -9, 9));
        c.output("y", c.op(Pad{.pads = pads, .value = std::trunc(value) - 5}, {xi}));
        check_builder(c, detail::concat("pad i32 ", to_string(s), " pads ", to_string(pads)));
      }
    }
}

TEST_CASE("gather on axis 0, a middle and the last axis, negative indices and axes, index ranks 0 to 2") {
  Rng rng(13);
  const Shape s{5, 7, 3, 4};
  for (int axis : {0, 1, 2, 3, -1, -3})
    for (const Shape& index_shape : {Shape{}, Shape{1}, Shape{6}, Shape{2, 3}}) {
      const std::int64_t dim = s[static_cast<std::size_t>(axis < 0 ? axis + 4 : axis)];
      Builder b;
      const auto data = b.input("data", uniform(rng, s, -3, 3));
      const auto idx = b.input("idx", ints(rng, index_shape, -dim, dim - 1));
      b.output("y", b.op(Gather{.axis = axis}, {data, idx}));
      const auto table = b.constant(ints(rng, s, -50, 50));  // an i32 table as a constant
      b.output("z", b.op(Gather{.axis = axis}, {table, idx}));
      check_builder(b, detail::concat("gather axis ", axis, " indices ", to_string(index_shape)));
    }
}

TEST_CASE("top_k with ties, k = 0 and k = dim, NaN and infinities, f32 and i32") {
  Rng rng(14);
  for (const Shape& s : {Shape{9}, Shape{3, 7}, Shape{2, 3, 13}, Shape{1, 1, 1, 1}, Shape{4, 100}})
    for (std::int64_t k : {std::int64_t(0), std::int64_t(1), s.back() / 2, s.back()}) {
      Builder b;
      Tensor ties = small_ints_f32(rng, s, -2, 2);
      Tensor special = uniform(rng, s, -1, 1);
      sprinkle_specials(rng, special, 0.3);
      const auto x = b.input("x", ties), y = b.input("y", special), z = b.input("z", ints(rng, s, -2, 2));
      for (auto [name, v] : {std::pair{"x", x}, std::pair{"y", y}, std::pair{"z", z}}) {
        const auto out = b.op_multi(TopK{.k = k}, {v}, 2);
        b.output(std::string(name) + "_values", out[0]);
        b.output(std::string(name) + "_indices", out[1]);
      }
      check_builder(b, detail::concat("top_k ", to_string(s), " k ", k));
    }
}

TEST_CASE("matmul: 1-D, 2-D, batched and broadcast batches, odd sizes and sizes past the tiles, b input or constant") {
  Rng rng(15);
  const std::vector<std::pair<Shape, Shape>> cases{
      {{7}, {7}},
      {{7}, {7, 5}},
      {{5, 7}, {7}},
      {{3, 5, 7}, {7}},
      {{7}, {2, 7, 5}},
      {{1, 1}, {1, 1}},
      {{13, 33}, {33, 7}},
      {{1, 100}, {100, 1}},
      {{200, 300}, {300, 100}},
      {{97, 257}, {257, 263}},
      {{7, 3, 5, 13}, {13, 9}},
      {{2, 1, 5, 13}, {3, 13, 9}},
      {{5, 13}, {4, 13, 9}},
      {{1, 100, 33}, {7, 33, 1}},
      {{7, 1, 6, 16}, {1, 3, 16, 17}},
      {{3, 0, 4}, {4, 5}},
      {{3, 4}, {4, 0}},
      {{3, 0}, {0, 5}},
  };
  for (const auto& [sa, sb] : cases)
    for (bool constant : {false, true}) matmul_case(sa, sb, constant, false, rng, "matmul");
  for (const auto& [sa, sb] : {std::pair<Shape, Shape>{{5, 7}, {7, 3}}, {{2, 3, 4}, {4}}, {{4}, {2, 4, 3}}})
    matmul_case(sa, sb, false, true, rng, "matmul");
  {  // i32 products wrap like NumPy
    Builder b;
    const auto a = b.input("a", ints(rng, {3, 4}, INT32_MIN, INT32_MAX));
    const auto w = b.input("b", ints(rng, {4, 2}, INT32_MIN, INT32_MAX));
    b.output("y", b.op(MatMul{}, {a, w}));
    check_builder(b, "matmul i32 wrapping");
  }
}

TEST_CASE("conv2d: strides, four-sided pads, dilation, groups, depthwise, bias, 1x1, batch 1 and 3") {
  Rng rng(16);
  auto conv = [](Ints strides, Ints pads, Ints dilations, std::int64_t groups) {
    Conv2d op;
    op.strides = std::move(strides);
    op.pads = std::move(pads);
    op.dilations = std::move(dilations);
    op.groups = groups;
    return op;
  };
  struct Case {
    std::int64_t n, c, o, h, w, kh, kw;
    Conv2d op;
  };
  const std::vector<Case> cases{
      {1, 3, 4, 5, 7, 1, 1, conv({1, 1}, {0, 0, 0, 0}, {1, 1}, 1)},      // 1x1 as a GEMM
      {3, 8, 16, 13, 13, 1, 1, conv({1, 1}, {0, 0, 0, 0}, {1, 1}, 2)},   // 1x1 grouped
      {1, 3, 4, 9, 7, 1, 1, conv({2, 2}, {0, 0, 0, 0}, {1, 1}, 1)},      // 1x1 strided: im2col
      {1, 3, 4, 9, 7, 1, 1, conv({1, 1}, {1, 0, 0, 1}, {1, 1}, 1)},      // 1x1 padded: im2col
      {2, 3, 5, 13, 13, 3, 3, conv({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)},
      {1, 4, 6, 13, 7, 3, 3, conv({2, 1}, {0, 1, 2, 3}, {1, 1}, 2)},
      {3, 2, 3, 11, 12, 3, 2, conv({1, 2}, {2, 0, 1, 1}, {2, 3}, 1)},
      {1, 6, 6, 7, 7, 3, 3, conv({1, 1}, {1, 1, 1, 1}, {1, 1}, 6)},      // depthwise
      {1, 6, 12, 7, 7, 5, 5, conv({3, 3}, {2, 2, 2, 2}, {1, 1}, 3)},
      {2, 1, 1, 1, 1, 1, 1, conv({1, 1}, {0, 0, 0, 0}, {1, 1}, 1)},
      {1, 16, 100, 20, 20, 3, 3, conv({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)}, // 100 outputs x 400 pixels: several tiles
  };
  for (const Case& c : cases)
    for (bool bias : {false, true}) conv_case(rng, "conv2d", c.n, c.c, c.o, c.h, c.w, c.kh, c.kw, c.op, bias);
  conv_case(rng, "conv2d with the weight as an input", 2, 4, 6, 7, 5, 3, 3, conv({1, 1}, {1, 1, 1, 1}, {1, 1}, 2), true, true);
}

TEST_CASE("a stride-1 conv2d read in place from the padded image (or its column-shifted copies) gives the packed-columns path's bits") {
  // Constant weights take the direct kernel; the same weights as a graph input
  // take im2col + GEMM. Each output is the same fma chain either way, with or
  // without a bias, and with relu stored by the kernel or another epilogue.
  Rng rng(31);
  struct Case {
    std::int64_t n, c, o, h, w, kh, kw;
    Ints pads, dilations;
    std::int64_t groups;
  };
  const std::vector<Case> cases{
      {1, 17, 32, 14, 14, 3, 3, {1, 1, 1, 1}, {1, 1}, 1},   // the bench cnn's second conv, one channel more
      {2, 17, 13, 9, 31, 3, 3, {0, 2, 1, 0}, {1, 1}, 1},    // rows past a micro-tile, lopsided pads
      {1, 50, 6, 11, 6, 3, 2, {2, 1, 2, 1}, {2, 3}, 2},     // dilation, groups
      {1, 150, 8, 8, 40, 1, 1, {0, 0, 0, 0}, {1, 1}, 1},    // 1x1
      {1, 400, 7, 5, 5, 3, 1, {1, 0, 1, 0}, {1, 1}, 1},     // depth over one k-block (1200)
      {1, 17, 128, 10, 12, 3, 3, {1, 1, 1, 1}, {1, 1}, 1},  // many outputs: read from column-shifted copies
      {2, 17, 96, 9, 10, 3, 3, {2, 3, 2, 1}, {2, 2}, 1},    // shifted copies, dilated, lopsided pads
      // Copies past L2 and rows of 32 or 64 pixels: micro tiles a row's whole panels at a time.
      {2, 100, 12, 6, 32, 3, 3, {1, 1, 1, 1}, {1, 1}, 1},   // the bench unet's 96->32 conv, smaller
      {4, 100, 12, 6, 32, 3, 3, {1, 1, 1, 1}, {1, 1}, 1},   // the same, an image a task on two threads too
      {1, 100, 9, 4, 64, 3, 3, {2, 3, 0, 1}, {1, 2}, 1},    // two panels a row, lopsided pads, dilation
      // At most 144 taps (C/g * kh * kw): every output channel from the taps' vectors, no micro tile.
      {2, 1, 16, 28, 28, 3, 3, {1, 1, 1, 1}, {1, 1}, 1},    // the bench cnn's first conv
      {1, 1, 5, 9, 37, 3, 3, {0, 2, 1, 0}, {1, 1}, 1},      // rows past two vectors, lopsided pads
      {1, 4, 6, 11, 6, 3, 2, {2, 1, 2, 1}, {2, 3}, 2},      // dilation, groups (12 taps)
      {3, 6, 12, 7, 5, 3, 3, {1, 1, 1, 1}, {1, 1}, 6},      // two outputs per group (not the depthwise kernel's)
      {1, 144, 3, 6, 7, 1, 1, {0, 0, 0, 0}, {1, 1}, 1},     // 1x1 over 144 channels: the most taps
      {1, 16, 32, 14, 14, 3, 3, {1, 1, 1, 1}, {1, 1}, 1},   // the bench cnn's second conv (144 taps)
      // A 3-wide window over rows as wide as the output's: no copies, the rows' edges masked.
      {3, 2, 9, 5, 7, 3, 3, {0, 2, 1, 0}, {1, 1}, 1},       // both columns padding on the left, rows not 16 wide
      {2, 3, 20, 6, 13, 2, 3, {1, 2, 0, 2}, {1, 2}, 1},     // dilated columns, runs across rows and vectors
      {1, 2, 6, 3, 1, 3, 3, {1, 1, 1, 1}, {1, 1}, 1},       // one-pixel rows: only the middle tap is on the row
      {1, 4, 16, 40, 30, 3, 3, {1, 1, 1, 1}, {1, 1}, 2},    // groups, tiles starting mid-row on two threads
      {1, 1, 5, 2, 1100, 3, 3, {1, 1, 1, 1}, {1, 1}, 1},    // rows too wide for the masks' table: copies
      {1, 5, 1, 1, 3, 1, 3, {2, 4, 2, 7}, {1, 5}, 1},       // wasted columns far past the image (fuzz_op)
      {1, 1, 20, 12, 37, 3, 3, {1, 1, 1, 1}, {1, 1}, 1},    // a part-filled block of channels
      {1, 1, 4, 200, 120, 3, 3, {1, 1, 1, 1}, {1, 1}, 1},   // copies past L2: row by row from the padded image
      // No padding and no copies: the input read in place (three outputs: four channels a pass).
      {2, 32, 3, 32, 32, 1, 1, {0, 0, 0, 0}, {1, 1}, 1},    // the bench unet's last conv, to RGB
      {3, 8, 10, 5, 9, 1, 1, {0, 0, 0, 0}, {1, 1}, 2},      // groups, more than four outputs
  };
  enum class Tail { bias_relu, none, bias_sigmoid };
  int shifted = 0, few_taps = 0, whole_rows = 0, in_place = 0, masked = 0;
  for (const Case& c : cases)
    for (const Tail tail : {Tail::bias_relu, Tail::none, Tail::bias_sigmoid}) {
      Conv2d op;
      op.pads = c.pads;
      op.dilations = c.dilations;
      op.groups = c.groups;
      const Tensor x = uniform(rng, {c.n, c.c, c.h, c.w}, -1, 1);
      const Tensor w = conv_weight(rng, {c.o, c.c / c.groups, c.kh, c.kw});
      const Tensor bias = uniform(rng, {c.o}, -1, 1);
      TensorMap results[2];
      for (const bool weight_input : {false, true}) {
        Builder b;
        const auto xv = b.input("x", x);
        const auto wv = weight_input ? b.input("w", w) : b.constant(w);
        std::vector<ValueId> conv_inputs{xv, wv};
        if (tail != Tail::none) conv_inputs.push_back(b.constant(bias));
        const ValueId y = b.op(op, conv_inputs);
        if (tail == Tail::none) b.output("y", y);
        else if (tail == Tail::bias_relu) b.output("y", b.op(Relu{}, {y}));
        else b.output("y", b.op(Sigmoid{}, {y}));
        TensorMap inputs{{"x", x}};
        if (weight_input) inputs.emplace("w", w);
        const Model model(b.graph());
        for (const int threads : {1, 2}) {
          const Executor executor(model, {threads, true});
          const bool direct = executor.describe().find("conv2d direct") != std::string::npos;
          CHECK(direct == !weight_input);
          shifted += executor.describe().find("column-shifted copies") != std::string::npos;
          few_taps += executor.describe().find("few taps") != std::string::npos;
          whole_rows += executor.describe().find("whole panels a row") != std::string::npos;
          in_place += executor.describe().find("the input, read in place") != std::string::npos;
          masked += executor.describe().find("rows' edges masked") != std::string::npos;
          TensorMap out = executor.run(inputs);
          if (threads == 1) results[weight_input] = out;
          CHECK(std::memcmp(out.at("y").raw(), results[weight_input].at("y").raw(), out.at("y").bytes()) == 0);
        }
      }
      CAPTURE(to_string(Shape{c.n, c.c, c.h, c.w}));
      CAPTURE(int(tail));
      CHECK(std::memcmp(results[0].at("y").raw(), results[1].at("y").raw(), results[0].at("y").bytes()) == 0);
    }
  // Two micro-tile cases and the few-tap ones wider than one column (copying few channels
  // pays), but for the 3-wide ones with more than four outputs where AVX-512 masks rows' edges.
  const bool masks = exec::simd::masked_row_edges(exec::active_isa());
  CHECK(shifted == (masks ? 6 : 14) * 3 * 2);  // cases, tails, thread counts
  CHECK(few_taps == 16 * 3 * 2);               // the last sixteen cases
  CHECK(masked == (masks ? 8 : 0) * 3 * 2);
  CHECK(whole_rows == 3 * 3 * 2);
  CHECK(in_place == 3 * 3 * 2);  // the 1x1 over 144 channels and the last two
}

TEST_CASE("a few-tap conv2d's images share the vector of their planes' last pixels, with the packed-columns path's bits") {
  // Where a plane's pixels leave at most eight lanes in its last vector, AVX-512
  // packs 16 / that many images' last pixels into one (simd::conv_taps_tails),
  // each lane still its own fma chain.
  Rng rng(37);
  struct Case {
    std::int64_t n, c, o, h, w, kh, kw;
    Ints pads;
  };
  const std::vector<Case> cases{
      {16, 16, 32, 14, 14, 3, 3, {1, 1, 1, 1}},  // the bench cnn's second conv at batch 16: 4 lanes, 4 images a vector
      {5, 3, 11, 5, 4, 3, 3, {1, 1, 1, 1}},      // 4 lanes, the last vector one image; a part-filled block of outputs
      {3, 2, 7, 4, 6, 3, 3, {1, 1, 1, 1}},       // 8 lanes: two images, then one
      {20, 1, 6, 1, 17, 3, 3, {1, 1, 1, 1}},     // one lane: 16 images, then 4
      {3, 8, 6, 3, 7, 1, 1, {0, 0, 0, 0}},       // 5 lanes of the input read in place
      {2, 3, 9, 7, 3, 3, 3, {0, 2, 1, 0}},       // 2 lanes (6 x 3 outputs), both padding columns on the left
  };
  int packed = 0;
  for (const Case& c : cases)
    for (const bool relu : {true, false}) {
      Conv2d op;
      op.pads = c.pads;
      const Tensor x = uniform(rng, {c.n, c.c, c.h, c.w}, -1, 1);
      const Tensor w = conv_weight(rng, {c.o, c.c, c.kh, c.kw});
      const Tensor bias = uniform(rng, {c.o}, -1, 1);
      TensorMap results[2];
      for (const bool weight_input : {false, true}) {
        Builder b;
        const auto xv = b.input("x", x);
        const auto wv = weight_input ? b.input("w", w) : b.constant(w);
        const ValueId y = relu ? b.op(Relu{}, {b.op(op, {xv, wv, b.constant(bias)})}) : b.op(op, {xv, wv});
        b.output("y", y);
        TensorMap inputs{{"x", x}};
        if (weight_input) inputs.emplace("w", w);
        const Model model(b.graph());
        for (const int threads : {1, 2}) {
          const Executor executor(model, {threads, true});
          packed += executor.describe().find("in a vector with") != std::string::npos;
          TensorMap out = executor.run(inputs);
          if (threads == 1) results[weight_input] = out;
          CHECK(std::memcmp(out.at("y").raw(), results[weight_input].at("y").raw(), out.at("y").bytes()) == 0);
        }
      }
      CAPTURE(to_string(Shape{c.n, c.c, c.h, c.w}));
      CAPTURE(relu);
      CHECK(std::memcmp(results[0].at("y").raw(), results[1].at("y").raw(), results[0].at("y").bytes()) == 0);
    }
  CHECK(packed == (exec::simd::packs_image_tails(exec::active_isa()) ? 6 : 0) * 2 * 2);  // cases, relu or not, threads
}

TEST_CASE("a direct conv2d reads a channel concat of nearest-upsampled values as it pads: the unfused plan's bits") {
  // conv(concat(upsample(a), b)) as PyTorch exports a U-Net's decoder: fused,
  // the concat and the upsampling run inside the conv's padding (never
  // written out); unfused, they are copies. The conv sums the same floats.
  Rng rng(38);
  struct Case {
    std::int64_t n, a_channels, b_channels, h, w, scale_h, scale_w, outputs, k;
    Ints pads;
    std::int64_t groups;
  };
  const std::vector<Case> cases{
      {2, 6, 3, 4, 5, 2, 2, 8, 3, {1, 1, 1, 1}, 1},    // few taps, rows' edges masked (odd and even phases)
      {1, 64, 32, 8, 8, 2, 2, 32, 3, {1, 1, 1, 1}, 1}, // micro tiles, the bench unet's decoder in small
      {3, 40, 24, 5, 3, 2, 2, 16, 3, {0, 2, 1, 1}, 2}, // two groups across the pieces, lopsided pads
      {1, 5, 2, 3, 4, 3, 1, 4, 2, {1, 0, 0, 1}, 1},    // other scales: rows only
      {2, 4, 4, 2, 7, 1, 3, 6, 1, {0, 0, 0, 0}, 1},    // columns only, a 1x1 conv
  };
  int gathered = 0, masked = 0;
  for (const Case& c : cases) {
    const std::int64_t out_h = c.h * c.scale_h, out_w = c.w * c.scale_w;
    const Tensor a = uniform(rng, {c.n, c.a_channels, c.h, c.w}, -1, 1);
    const Tensor skip = uniform(rng, {c.n, c.b_channels, out_h, out_w}, -1, 1);
    const Tensor w = conv_weight(rng, {c.outputs, (c.a_channels + c.b_channels) / c.groups, c.k, c.k});
    for (const bool upsampled_first : {true, false}) {
      Builder b;
      const auto av = b.input("a", a), sv = b.input("skip", skip);
      const auto unit = b.op(Reshape{.shape = {c.n, c.a_channels, c.h, 1, c.w, 1}}, {av});
      const auto wide = b.op(BroadcastTo{.shape = {c.n, c.a_channels, c.h, c.scale_h, c.w, c.scale_w}}, {unit});
      const auto up = b.op(Reshape{.shape = {c.n, c.a_channels, out_h, out_w}}, {wide});
      const auto x = b.op(Concat{.axis = 1}, {upsampled_first ? up : sv, upsampled_first ? sv : up});
      Conv2d op;
      op.pads = c.pads;
      op.groups = c.groups;
      b.output("y", b.op(Relu{}, {b.op(op, {x, b.constant(w), b.constant(uniform(rng, {c.outputs}, -1, 1))})}));
      const Model model(b.graph());
      const TensorMap inputs{{"a", a}, {"skip", skip}};
      const TensorMap unfused = Executor(model, {1, false}).run(inputs);
      for (const int threads : {1, 2}) {
        const Executor fused(model, {threads, true});
        CAPTURE(to_string(Shape{c.n, c.a_channels, c.h, c.w}));
        CAPTURE(threads);
        gathered += contains(fused.describe(), "input padded from 2 values (1 upsampled), not written out");
        masked += contains(fused.describe(), "rows' edges masked");
        CHECK(fused.plan().kernels.size() == 1);
        const TensorMap out = fused.run(inputs);
        CHECK(std::memcmp(out.at("y").raw(), unfused.at("y").raw(), out.at("y").bytes()) == 0);
      }
      check_builder(b, "conv of concat(upsample(a), skip)");
    }
  }
  CHECK(gathered == 5 * 2 * 2);
  CHECK(masked == (exec::simd::masked_row_edges(exec::active_isa()) ? 1 : 0) * 2 * 2);  // the first case
  {  // not gathered: the concat also an output, the upsampled value read twice
    for (const int variant : {0, 1}) {
      Builder b;
      const auto av = b.input("a", uniform(rng, {1, 3, 4, 4}, -1, 1));
      const auto up = b.op(Reshape{.shape = {1, 3, 8, 8}},
                           {b.op(BroadcastTo{.shape = {1, 3, 4, 2, 4, 2}}, {b.op(Reshape{.shape = {1, 3, 4, 1, 4, 1}}, {av})})});
      const auto x = b.op(Concat{.axis = 1}, {up, b.input("skip", uniform(rng, {1, 2, 8, 8}, -1, 1))});
      b.output("y", b.op(Conv2d{.pads = {1, 1, 1, 1}}, {x, b.constant(conv_weight(rng, {4, 5, 3, 3}))}));
      if (variant == 0) b.output("x", x);
      else b.output("twice", b.op(Add{}, {up, up}));
      check_builder(b, variant == 0 ? "concat also an output" : "upsampled value also read by an add");
      const std::string plan = Executor(Model(b.graph()), {1, true}).describe();
      CHECK_MESSAGE(contains(plan, variant == 0 ? "concat (" : "input padded from 2 values, not written out"), plan);
    }
  }
}

TEST_CASE("a depthwise conv2d gives the bits of one single-channel conv per channel") {
  // groups = C = O takes the depthwise kernel; slicing each channel out and
  // convolving it alone (groups 1, one input and one output channel) takes
  // the direct or the packed-columns GEMM path. Each output element is the
  // same fma chain over the taps either way, padding taps included.
  Rng rng(37);
  struct Case {
    std::int64_t n, c, h, w, kh, kw;
    Ints strides, pads, dilations;
  };
  const std::vector<Case> cases{
      {1, 32, 14, 14, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}},  // a mobile net's 3x3, stride 1
      {2, 5, 15, 16, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}},   // stride 2, an even width
      {1, 3, 9, 31, 5, 5, {1, 1}, {2, 0, 2, 3}, {1, 1}},    // 5x5, lopsided pads, rows past 16 lanes
      {1, 4, 11, 13, 3, 2, {3, 2}, {0, 2, 1, 0}, {2, 3}},   // strides and dilations on both axes
      {3, 2, 1, 40, 1, 3, {1, 5}, {0, 0, 0, 0}, {1, 1}},    // one row; a stride past the window
      {1, 2, 2, 2, 1, 1, {7, 9}, {0, 0, 0, 0}, {1, 1}},     // strides wider than the plane
  };
  for (const Case& c : cases) {
    Conv2d op;
    op.strides = c.strides;
    op.pads = c.pads;
    op.dilations = c.dilations;
    const Tensor x = uniform(rng, {c.n, c.c, c.h, c.w}, -1, 1);
    const Tensor w = conv_weight(rng, {c.c, 1, c.kh, c.kw});
    const Tensor bias = uniform(rng, {c.c}, -1, 1);
    CAPTURE(to_string(Shape{c.n, c.c, c.h, c.w}));
    CAPTURE(to_string(c.strides));
    for (const bool weight_input : {false, true}) {
      for (const bool with_bias : {false, true}) {
        Builder depthwise, per_channel;
        for (Builder* b : {&depthwise, &per_channel}) {
          const auto xv = b->input("x", x);
          const auto wv = weight_input ? b->input("w", w) : b->constant(w);
          const std::optional<ValueId> bv = with_bias ? std::optional(b->constant(bias)) : std::nullopt;
          ValueId y;
          if (b == &depthwise) {
            Conv2d grouped = op;
            grouped.groups = c.c;
            std::vector<ValueId> in{xv, wv};
            if (bv) in.push_back(*bv);
            y = b->op(grouped, in);
          } else {
            std::vector<ValueId> planes;
            for (std::int64_t ch = 0; ch < c.c; ++ch) {
              auto one = [&](ValueId v) { return b->op(Slice{.axes = {0}, .starts = {ch}, .ends = {ch + 1}, .steps = {}}, {v}); };
              auto one_x = b->op(Slice{.axes = {1}, .starts = {ch}, .ends = {ch + 1}, .steps = {}}, {xv});
              std::vector<ValueId> in{one_x, one(wv)};
              if (bv) in.push_back(one(*bv));
              planes.push_back(b->op(op, in));
            }
            y = b->op(Concat{.axis = 1}, planes);
          }
          b->output("y", b->op(Relu{}, {y}));
        }
        TensorMap inputs{{"x", x}};
        if (weight_input) inputs.emplace("w", w);
        const Tensor expected = Executor(Model(per_channel.graph()), {1, false}).run(inputs).at("y");
        for (const bool fuse : {false, true})
          for (const int threads : {1, 2}) {
            const Executor executor(Model(depthwise.graph()), {threads, fuse});
            CHECK(executor.describe().find("conv2d depthwise") != std::string::npos);
            const Tensor got = executor.run(inputs).at("y");
            CHECK(std::memcmp(got.raw(), expected.raw(), expected.bytes()) == 0);
          }
      }
    }
  }
}

TEST_CASE("a stride-1 conv2d whose padding dwarfs its input is not read from a padded image") {
  // Padding 2^62 above a 1x1 input and a dilation of 2^62 (one tap in the padding, one on the
  // pixel) is a valid conv with one output; a padded image of 2^62 rows would be neither
  // allocatable nor addressable (its size wrapped, and the kernel read the wrong taps).
  Builder b;
  Conv2d op;
  op.pads = {std::int64_t(1) << 62, 0, 0, 0};
  op.dilations = {std::int64_t(1) << 62, 1};
  const auto x = b.input("x", Tensor::from<float>({1, 1, 1, 1}, {0.75f}));
  b.output("y", b.op(op, {x, b.constant(Tensor::from<float>({1, 1, 2, 1}, {1.0f, 2.0f}))}));
  const Executor executor(Model(b.graph()));
  CHECK(executor.describe().find("conv2d direct") == std::string::npos);
  const TensorMap out = executor.run({{"x", Tensor::from<float>({1, 1, 1, 1}, {0.75f})}});
  CHECK(out.at("y").values<float>()[0] == 1.5f);
}

TEST_CASE("pools: kernels, strides, four-sided pads, dilation, count_include_pad, NaN through max") {
  Rng rng(17);
  auto make = []<class Pool>(std::type_identity<Pool>, Ints kernel, Ints strides, Ints pads, Ints dilations, bool include = false) {
    Pool op;
    op.kernel = std::move(kernel);
    op.strides = std::move(strides);
    op.pads = std::move(pads);
    op.dilations = std::move(dilations);
    if constexpr (std::is_same_v<Pool, AvgPool2d>) op.count_include_pad = include;
    else (void)include;
    return op;
  };
  const std::vector<std::tuple<Ints, Ints, Ints, Ints>> windows{
      {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}}, {{3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}}, {{3, 2}, {2, 1}, {0, 1, 2, 0}, {1, 1}},
      {{2, 3}, {1, 2}, {1, 2, 0, 1}, {2, 2}}, {{1, 1}, {3, 3}, {0, 0, 0, 0}, {1, 1}}, {{3, 3}, {2, 2}, {2, 2, 2, 2}, {1, 1}},
      {{2, 2}, {1, 3}, {1, 0, 0, 1}, {2, 1}}};  // 2x2 (its own row loop) with stride, pads, dilation
  for (const auto& [kernel, strides, pads, dilations] : windows)
    // 70: rows of full vectors; 8 and 16 rows: a 2x2 stride-2 pool stacks its planes (the
    // last of 13 columns in no window; 38 columns, 19 windows: a second vector; 128
    // planes: several tasks).
    for (const Shape& xs : {Shape{1, 1, 7, 7}, Shape{2, 3, 13, 8}, Shape{1, 2, 9, 70}, Shape{2, 3, 8, 13}, Shape{4, 32, 16, 38}}) {
      pool_case(rng, "max_pool2d", xs, make(std::type_identity<MaxPool2d>{}, kernel, strides, pads, dilations));
      pool_case(rng, "max_pool2d with NaN", xs, make(std::type_identity<MaxPool2d>{}, kernel, strides, pads, dilations), true);
      for (bool include : {false, true})
        pool_case(rng, "avg_pool2d", xs, make(std::type_identity<AvgPool2d>{}, kernel, strides, pads, dilations, include));
    }
}

TEST_CASE("sdpa: causal, masks of several shapes, scale, batch broadcasting, Lq != Lk, several query blocks") {
  Rng rng(18);
  sdpa_case(rng, "sdpa", {5, 8}, {5, 8}, {5, 8}, std::nullopt, false, std::nullopt);
  sdpa_case(rng, "sdpa", {2, 4, 16, 32}, {2, 4, 16, 32}, {2, 4, 16, 32}, std::nullopt, true, std::nullopt);
  sdpa_case(rng, "sdpa", {2, 4, 16, 32}, {2, 4, 16, 32}, {2, 4, 16, 32}, Shape{16, 16}, false, 0.1);
  sdpa_case(rng, "sdpa", {3, 7, 8}, {3, 5, 8}, {3, 5, 3}, std::nullopt, true, std::nullopt);   // Lq > Lk, causal
  sdpa_case(rng, "sdpa", {3, 5, 8}, {3, 7, 8}, {3, 7, 3}, std::nullopt, true, std::nullopt);   // Lq < Lk, causal
  sdpa_case(rng, "sdpa", {2, 3, 5, 4}, {1, 3, 6, 4}, {3, 6, 2}, Shape{2, 1, 5, 6}, false, std::nullopt);
  sdpa_case(rng, "sdpa", {2, 3, 5, 4}, {3, 6, 4}, {2, 1, 6, 2}, Shape{1, 6}, true, 1.5);
  sdpa_case(rng, "sdpa", {4, 1, 4}, {4, 13, 4}, {1, 13, 1}, Shape{4, 1, 13}, false, std::nullopt, true);
  sdpa_case(rng, "sdpa with -inf in the mask", {2, 7, 8}, {2, 7, 8}, {2, 7, 8}, Shape{7, 7}, true, std::nullopt, true);
  sdpa_case(rng, "sdpa", {1, 1}, {1, 1}, {1, 1}, Shape{}, true, std::nullopt);
  // Query rows in several blocks: six batches (a task each, its K and V packed
  // once for three blocks), then two (blocks split between threads).
  sdpa_case(rng, "sdpa", {2, 3, 100, 8}, {2, 3, 100, 8}, {2, 3, 100, 5}, std::nullopt, true, std::nullopt);
  sdpa_case(rng, "sdpa", {2, 100, 8}, {2, 60, 8}, {2, 60, 5}, Shape{100, 60}, false, std::nullopt);
}

TEST_CASE("an sdpa reads and writes the heads of [B, L, H, D] in place of the transposes to and from [B, H, L, D]") {
  Rng rng(31);
  struct Case {
    Shape q, k, v;  // as [B, L, H, D]
    bool causal, mask;
    std::array<bool, 4> transposed;  // which of q, k, v and the output go through a transpose
  };
  const Case cases[] = {
      {{2, 64, 4, 16}, {2, 64, 4, 16}, {2, 64, 4, 8}, true, false, {true, true, true, true}},  // several query blocks
      {{3, 7, 2, 8}, {3, 5, 2, 8}, {3, 5, 2, 3}, false, true, {true, false, true, false}},
      {{1, 5, 3, 4}, {1, 9, 3, 4}, {1, 9, 3, 6}, true, false, {false, true, false, true}},
      {{2, 6, 3, 4}, {2, 6, 3, 4}, {2, 6, 3, 4}, false, false, {false, false, false, true}},  // only the output
  };
  for (const Case& c : cases) {
    Builder b;
    std::vector<ValueId> in;
    int gathered = 0;
    for (int i = 0; i < 3; ++i) {
      const Shape& s = i == 0 ? c.q : (i == 1 ? c.k : c.v);
      const ValueId x = b.input(std::string(1, "qkv"[i]), uniform(rng, s, -1, 1));
      if (c.transposed[i]) ++gathered;
      in.push_back(c.transposed[i] ? b.op(Transpose{.perm = {0, 2, 1, 3}}, {x})
                                   : b.op(Mul{}, {b.op(Transpose{.perm = {0, 2, 1, 3}}, {x}), b.constant(Tensor::scalar(1.0f))}));
    }
    if (c.mask) in.push_back(b.constant(uniform(rng, {c.q[1], c.k[1]}, -2, 2)));
    const ValueId y = b.op(Sdpa{.causal = c.causal, .scale = std::nullopt}, in);
    if (c.transposed[3]) ++gathered;
    b.output("y", c.transposed[3] ? b.op(Transpose{.perm = {0, 2, 1, 3}}, {y}) : y);
    const Model model(b.graph());
    const std::string label = detail::concat("q ", to_string(c.q), " k ", to_string(c.k), " v ", to_string(c.v));
    CAPTURE(label);
    // The sdpa's kernel covers the transposes it reads and writes through (and no more).
    const Executor fused(model, {1, true});
    bool found = false;
    for (const auto& kernel : fused.plan().kernels)
      if (contains(kernel->describe(), "sdpa")) {
        found = true;
        CHECK(kernel->nodes.size() == static_cast<std::size_t>(1 + gathered));
      }
    CHECK(found);
    check_builder(b, "sdpa through transposes " + label);
  }
  {  // transposes also read elsewhere (or an output) stay kernels of their own
    Builder b;
    const ValueId x = b.input("x", uniform(rng, {2, 6, 2, 4}, -1, 1));
    const ValueId t = b.op(Transpose{.perm = {0, 2, 1, 3}}, {x});
    const ValueId y = b.op(Sdpa{}, {t, t, t});
    b.output("y", b.op(Transpose{.perm = {0, 2, 1, 3}}, {y}));
    b.output("t", t);
    b.output("y_heads_major", y);
    const Executor fused(Model(b.graph()), {1, true});
    for (const auto& kernel : fused.plan().kernels)
      if (contains(kernel->describe(), "sdpa")) CHECK(kernel->nodes.size() == 1);
    check_builder(b, "sdpa through transposes that are also outputs");
  }
}

TEST_CASE("cast both ways, select and compares with NaN, every unary and binary op in f32 and i32") {
  Rng rng(19);
  {
    Builder b;
    Tensor t = Tensor::from<float>({10}, {-2.7f, 2.7f, -0.0f, 3e9f, -3e9f, inf, -inf, qnan, 2147483520.0f, -2147483648.0f});
    const auto x = b.input("x", t);
    const auto as_i32 = b.op(Cast{.to = DType::i32}, {x});
    b.output("i", as_i32);
    b.output("back", b.op(Cast{.to = DType::f32}, {as_i32}));
    b.output("same", b.op(Cast{.to = DType::f32}, {x}));
    const auto xi = b.input("xi", Tensor::from<std::int32_t>({4}, {INT32_MIN, INT32_MAX, 0, -7}));
    b.output("fi", b.op(Cast{.to = DType::f32}, {xi}));
    b.output("ii", b.op(Cast{.to = DType::i32}, {xi}));
    check_builder(b, "cast special values");
  }
  {
    Builder b;
    const auto c = b.input("c", Tensor::from<float>({6}, {0, 1, -0.0f, qnan, inf, -2}));
    const auto a = b.input("a", uniform(rng, {6}, -1, 1));
    const auto x = b.input("x", uniform(rng, {2, 6}, -1, 1));
    b.output("y", b.op(Select{}, {c, a, x}));
    const auto ci = b.input("ci", Tensor::from<std::int32_t>({2, 1}, {0, 5}));
    b.output("z", b.op(Select{}, {ci, b.op(Cast{.to = DType::i32}, {x}), b.constant(Tensor::scalar<std::int32_t>(-9))}));
    check_builder(b, "select with NaN, -0 and i32 conditions");
  }
  for (int seed = 0; seed < 3; ++seed) {
    Builder b;
    Tensor ta = small_ints_f32(rng, {4, 5}, -2, 2), tb = small_ints_f32(rng, {5}, -2, 2);
    sprinkle_specials(rng, ta, 0.2);
    const auto a = b.input("a", ta), c = b.input("b", tb);
    const auto ai = b.input("ai", ints(rng, {4, 1}, -2, 2)), ci = b.input("bi", ints(rng, {1, 5}, -2, 2));
    b.output("eq", b.op(Eq{}, {a, c}));
    b.output("ne", b.op(Ne{}, {a, c}));
    b.output("lt", b.op(Lt{}, {a, c}));
    b.output("le", b.op(Le{}, {a, c}));
    b.output("gt", b.op(Gt{}, {a, c}));
    b.output("ge", b.op(Ge{}, {a, c}));
    b.output("eqi", b.op(Eq{}, {ai, ci}));
    b.output("lei", b.op(Le{}, {ai, ci}));
    b.output("gti", b.op(Gt{}, {ai, ci}));
    check_builder(b, "compares with NaN and infinities");
  }
}

TEST_CASE("special values: NaN and infinities through maximum, minimum, relu, abs, neg, reduce_max, reduce_min, top_k") {
  Rng rng(20);
  for (int seed = 0; seed < 6; ++seed) {
    Builder b;
    Tensor ta = uniform(rng, {3, 4, 5}, -2, 2), tb = uniform(rng, {4, 1}, -2, 2);
    sprinkle_specials(rng, ta, 0.25);
    sprinkle_specials(rng, tb, 0.25);
    ta.values<float>()[0] = -0.0f;
    const auto a = b.input("a", ta), c = b.input("b", tb);
    b.output("max", b.op(Maximum{}, {a, c}));
    b.output("min", b.op(Minimum{}, {c, a}));
    b.output("relu", b.op(Relu{}, {a}));
    b.output("abs", b.op(Abs{}, {a}));
    b.output("neg", b.op(Neg{}, {a}));
    b.output("fused", b.op(Relu{}, {b.op(Maximum{}, {b.op(Neg{}, {a}), c})}));
    b.output("rmax", b.op(ReduceMax{.axes = {1}, .keep_dims = false}, {a}));
    b.output("rmin", b.op(ReduceMin{.axes = {0, 2}, .keep_dims = true}, {a}));
    b.output("rmax_all", b.op(ReduceMax{.axes = {0, 1, 2}, .keep_dims = false}, {a}));
    b.output("rsum", b.op(ReduceSum{.axes = {2}, .keep_dims = false}, {a}));
    const auto top = b.op_multi(TopK{.k = 3}, {a}, 2);
    b.output("top_values", top[0]);
    b.output("top_indices", top[1]);
    b.output("softmax", b.op(Softmax{.axis = -1}, {a}));
    b.output("exp", b.op(Exp{}, {a}));
    check_builder(b, detail::concat("special values #", seed));
  }
}

// ================================================================ fusion patterns

namespace {

/// matmul -> add(bias) -> activation -> add(residual), the transformer MLP tail.
Builder mlp_block(Rng& rng, const Shape& x_shape, std::int64_t n, int activation, bool residual, bool weight_constant) {
  Builder b;
  const std::int64_t k = x_shape.back();
  const float scale = 1.0f / std::sqrt(float(k));
  const auto x = b.input("x", uniform(rng, x_shape, -1, 1));
  const auto w = weight_constant ? b.constant(uniform(rng, {k, n}, -scale, scale), "w") : b.input("w", uniform(rng, {k, n}, -scale, scale));
  const auto bias = b.constant(uniform(rng, {n}, -1, 1), "bias");
  ValueId h = b.op(Add{}, {b.op(MatMul{}, {x, w}), bias});
  if (activation == 0) h = b.op(Relu{}, {h});
  if (activation == 1) h = b.op(Gelu{}, {h});
  if (activation == 2) h = b.op(Gelu{.approximate = "tanh"}, {h});
  if (residual) {
    Shape rs = x_shape;
    rs.back() = n;
    h = b.op(Add{}, {h, b.input("residual", uniform(rng, rs, -1, 1))});
  }
  b.output("y", h);
  return b;
}

bool plan_has_epilogue(const Builder& b) {
  const Model model(b.graph());
  const Executor e(model, {1, true});
  return e.describe().find("epilogue") != std::string::npos;
}

}  // namespace

TEST_CASE("fusion: matmul -> add(bias) -> relu/gelu -> add(residual) runs as one epilogue and matches the reference") {
  Rng rng(21);
  const std::vector<std::pair<Shape, std::int64_t>> shapes{{{200, 100}, 300}, {{7, 33}, 13}, {{3, 5, 16}, 16}, {{1, 1}, 1},
                                                           {{2, 97, 257}, 263}, {{13, 300}, 7}};
  for (const auto& [x_shape, n] : shapes)
    for (int activation : {0, 1, 2})
      for (bool residual : {false, true}) {
        const Builder b = mlp_block(rng, x_shape, n, activation, residual, true);
        const std::string what = detail::concat("mlp ", to_string(x_shape), " @ [", x_shape.back(), ", ", n, "] act ", activation,
                                                residual ? " + residual" : "");
        check_builder(b, what);
        CHECK_MESSAGE(plan_has_epilogue(b), what, ": no epilogue in the fused plan");
      }
  const Builder b = mlp_block(rng, {33, 40}, 50, 1, true, false);  // weights packed per run
  check_builder(b, "mlp with the weight as an input");
  CHECK(plan_has_epilogue(b));
}

TEST_CASE("fusion: matmul with a 1-D right operand followed by add(bias) -> relu") {
  // [M, K] @ [K] -> [M]: the epilogue's rows are not the product's rows.
  Rng rng(22);
  for (const auto& [sa, bias_shape] : {std::pair<Shape, Shape>{{5, 7}, {5}}, {{3, 5, 7}, {5}}, {{100, 33}, {100}}, {{1, 7}, {1}}}) {
    Builder b;
    const auto x = b.input("x", uniform(rng, sa, -1, 1));
    const auto v = b.constant(uniform(rng, {sa.back()}, -1, 1));
    const auto bias = b.constant(uniform(rng, bias_shape, -1, 1));
    b.output("y", b.op(Relu{}, {b.op(Add{}, {b.op(MatMul{}, {x, v}), bias})}));
    const std::string what = detail::concat("matrix-vector ", to_string(sa), " @ [", sa.back(), "] + bias -> relu");
    // In a child process: a wrong epilogue here writes out of bounds.
    isolated(what, [&] { return check_builder(b, what); });
  }
  for (const Shape& sb : {Shape{7, 5}, Shape{3, 7, 5}}) {  // a 1-D left operand
    Builder b;
    const auto v = b.input("v", uniform(rng, {7}, -1, 1));
    const auto w = b.constant(uniform(rng, sb, -1, 1));
    Shape out = sb;
    out.erase(out.end() - 2);
    b.output("y", b.op(Gelu{}, {b.op(Add{}, {b.op(MatMul{}, {v, w}), b.input("r", uniform(rng, out, -1, 1))})}));
    check_builder(b, detail::concat("vector-matrix [7] @ ", to_string(sb), " + r -> gelu"));
  }
}

TEST_CASE("fusion: conv2d -> add bias [1,O,1,1] -> relu, and other conv epilogues") {
  Rng rng(23);
  struct Case {
    Shape x, w;
    Shape bias;
    Ints strides, pads;
    std::int64_t groups;
  };
  const std::vector<Case> cases{
      {{1, 3, 13, 13}, {8, 3, 3, 3}, {1, 8, 1, 1}, {1, 1}, {1, 1, 1, 1}, 1},
      {{2, 4, 7, 9}, {6, 2, 3, 1}, {1, 6, 1, 1}, {2, 1}, {0, 1, 2, 0}, 2},
      {{3, 8, 5, 5}, {16, 8, 1, 1}, {16, 1, 1}, {1, 1}, {0, 0, 0, 0}, 1},       // 1x1, bias [O,1,1]
      {{1, 16, 20, 20}, {100, 16, 3, 3}, {1, 100, 1, 1}, {1, 1}, {1, 1, 1, 1}, 1}, // several tiles
      {{2, 3, 6, 6}, {4, 3, 3, 3}, {2, 4, 1, 1}, {1, 1}, {0, 0, 0, 0}, 1},       // per-batch bias
      {{2, 3, 6, 6}, {4, 3, 3, 3}, {1, 1, 4, 4}, {1, 1}, {0, 0, 0, 0}, 1},       // spatial leaf
      {{2, 3, 6, 6}, {4, 3, 3, 3}, {4, 4}, {1, 1}, {0, 0, 0, 0}, 1},             // spatial leaf, rank 2
      {{2, 3, 6, 6}, {4, 3, 3, 3}, {1, 1, 1, 4}, {1, 1}, {0, 0, 0, 0}, 1},       // a partial spatial broadcast: not fusable
      {{2, 3, 6, 6}, {4, 3, 3, 3}, {2, 4, 4, 4}, {1, 1}, {0, 0, 0, 0}, 1},       // a full residual
  };
  for (const Case& c : cases)
    for (bool conv_bias : {false, true}) {
      Builder b;
      Conv2d op;
      op.strides = c.strides;
      op.pads = c.pads;
      op.groups = c.groups;
      const auto x = b.input("x", uniform(rng, c.x, -1, 1));
      std::vector<ValueId> in{x, b.constant(conv_weight(rng, c.w))};
      if (conv_bias) in.push_back(b.constant(uniform(rng, {c.w[0]}, -1, 1)));
      const auto y = b.op(op, in);
      const auto biased = b.op(Add{}, {y, b.constant(uniform(rng, c.bias, -1, 1))});
      b.output("y", b.op(Relu{}, {biased}));
      check_builder(b, detail::concat("conv2d ", to_string(c.x), " * ", to_string(c.w), conv_bias ? " + conv bias" : "",
                                      " + ", to_string(c.bias), " -> relu"));
    }
  {
    Builder b;
    const auto x = b.input("x", uniform(rng, {1, 3, 13, 13}, -1, 1));
    const auto y = b.op(Conv2d{}, {x, b.constant(conv_weight(rng, {8, 3, 3, 3}))});
    b.output("y", b.op(Relu{}, {b.op(Add{}, {y, b.constant(uniform(rng, {1, 8, 1, 1}, -1, 1))})}));
    CHECK(plan_has_epilogue(b));
  }
}

TEST_CASE("fusion: elementwise chains with values used twice, outputs read later, reshape outputs") {
  Rng rng(24);
  const Shape s{7, 13};
  {
    Builder b;
    const auto x = b.input("x", uniform(rng, s, -2, 2));
    const auto y = b.input("y", uniform(rng, {13}, -2, 2));
    const auto a = b.op(Tanh{}, {b.op(Add{}, {x, y})});
    const auto sq = b.op(Mul{}, {a, a});                    // a read twice by one node
    const auto c = b.op(Sub{}, {sq, a});                    // and again by another
    const auto d = b.op(Sigmoid{}, {c});
    b.output("d", d);                                       // an output ...
    const auto e = b.op(Mul{}, {d, b.op(Exp{}, {d})});      // ... read later
    b.output("e", e);
    b.output("flat", b.op(Reshape{.shape = {-1}}, {e}));    // a reshape that is an output
    b.output("x_copy", x);                                  // an input routed to an output
    check_builder(b, "elementwise chain with reuse");
    const Model model(b.graph());
    const Executor fused(model, {1, true}), unfused(model, {1, false});
    CHECK(fused.plan().kernels.size() < unfused.plan().kernels.size());
  }
  {  // a long chain: more instructions than one group holds
    Builder b;
    const auto x = b.input("x", uniform(rng, s, -1, 1));
    ValueId v = x;
    for (int i = 0; i < 150; ++i) v = i % 2 ? b.op(Tanh{}, {v}) : b.op(Add{}, {v, b.constant(uniform(rng, {13}, -0.1f, 0.1f))});
    b.output("y", v);
    check_builder(b, "a 150-op elementwise chain");
  }
  {  // many leaves: more than one group holds
    Builder b;
    ValueId v = b.input("x", uniform(rng, s, -1, 1));
    for (int i = 0; i < 40; ++i) v = b.op(Add{}, {v, b.input("in" + std::to_string(i), uniform(rng, i % 2 ? Shape{13} : s, -1, 1))});
    b.output("y", v);
    check_builder(b, "an add chain with 41 leaves");
  }
  {  // broadcast_to absorbed as a leaf, and broadcast_to that is also an output
    Builder b;
    const auto x = b.input("x", uniform(rng, {1, 13}, -1, 1));
    const auto bt = b.op(BroadcastTo{.shape = {7, 13}}, {x});
    const auto bt2 = b.op(BroadcastTo{.shape = {7, 13}}, {x});
    b.output("bt2", bt2);
    const auto w = b.input("w", uniform(rng, s, -1, 1));
    b.output("y", b.op(Mul{}, {b.op(Add{}, {bt, w}), bt2}));
    b.output("z", b.op(Relu{}, {b.op(BroadcastTo{.shape = {2, 7, 13}}, {b.op(Neg{}, {x})})}));
    check_builder(b, "broadcast_to leaves");
  }
  {  // i32 and f32 mixed in one group: compare, select, cast
    Builder b;
    const auto x = b.input("x", uniform(rng, s, -3, 3));
    const auto xi = b.op(Cast{.to = DType::i32}, {b.op(Mul{}, {x, b.constant(Tensor::scalar(10.0f))})});
    const auto yi = b.op(Add{}, {b.op(Mul{}, {xi, xi}), b.constant(Tensor::scalar<std::int32_t>(3))});
    const auto cond = b.op(Gt{}, {yi, b.constant(Tensor::scalar<std::int32_t>(100))});
    b.output("y", b.op(Select{}, {cond, b.op(Cast{.to = DType::f32}, {yi}), x}));
    check_builder(b, "mixed-dtype group");
  }
}

TEST_CASE("fusion: a value every reader of which is in one group joins it (leaky relu, x * sigmoid(x)), epilogue included") {
  Rng rng(25);
  auto plan_of = [](const Builder& b) { return Executor(Model(b.graph()), {1, true}).describe(); };
  auto product = [&](Builder& b) {
    const auto x = b.input("x", uniform(rng, {37, 20}, -2, 2));
    const auto w = b.constant(uniform(rng, {20, 45}, -1, 1));
    return b.op(Add{}, {b.op(MatMul{}, {x, w}), b.constant(uniform(rng, {45}, -1, 1))});
  };
  {  // leaky relu as PyTorch exports it: select(h > 0, h, h * 0.2)
    Builder b;
    const auto h = product(b);
    const auto zero = b.constant(Tensor::scalar(0.0f)), slope = b.constant(Tensor::scalar(0.2f));
    b.output("y", b.op(Select{}, {b.op(Gt{}, {h, zero}), h, b.op(Mul{}, {h, slope})}));
    check_builder(b, "matmul + bias -> leaky relu");
    CHECK(contains(plan_of(b), "epilogue: add+gt+mul+select"));
  }
  {  // silu twice: each value read by a sigmoid and a mul of the same group
    Builder b;
    const auto h = product(b);
    const auto s1 = b.op(Mul{}, {h, b.op(Sigmoid{}, {h})});
    b.output("y", b.op(Mul{}, {s1, b.op(Sigmoid{}, {s1})}));
    check_builder(b, "matmul + bias -> silu -> silu");
    CHECK(contains(plan_of(b), "epilogue: add+sigmoid+mul+sigmoid+mul"));
  }
  {  // a reader outside the group (a matmul) or the value being an output keeps it out
    for (bool as_output : {false, true}) {
      Builder b;
      const auto h = product(b);
      const auto y = b.op(Mul{}, {h, b.op(Tanh{}, {h})});
      b.output("y", y);
      if (as_output)
        b.output("h", h);
      else
        b.output("z", b.op(MatMul{}, {h, b.constant(uniform(rng, {45, 3}, -1, 1))}));
      check_builder(b, as_output ? "h * tanh(h), h an output" : "h * tanh(h), h also read by a matmul");
      const std::string plan = plan_of(b);
      CHECK_MESSAGE(contains(plan, "elementwise tanh+mul"), plan);
    }
  }
}

TEST_CASE("fusion: epilogues over batched and broadcast matmuls, row and batch leaves, other output dtypes") {
  Rng rng(26);
  struct Case {
    Shape a, b;
    std::vector<Shape> leaves;
  };
  const std::vector<Case> cases{
      {{2, 1, 5, 13}, {3, 13, 9}, {{9}, {2, 3, 5, 9}}},
      {{2, 1, 5, 13}, {3, 13, 9}, {{3, 1, 1}, {5, 1}}},
      {{7, 3, 5, 13}, {13, 9}, {{7, 1, 1, 9}, {1}}},
      {{100, 33}, {33, 300}, {{100, 1}, {300}}},
      {{5, 13}, {4, 13, 9}, {{4, 5, 9}}},
      {{1, 200, 33}, {33, 263}, {{200, 263}}},
  };
  for (const Case& c : cases)
    for (bool constant : {true, false}) {
      Builder b;
      const auto x = b.input("x", uniform(rng, c.a, -1, 1));
      const auto w = constant ? b.constant(uniform(rng, c.b, -0.3f, 0.3f)) : b.input("w", uniform(rng, c.b, -0.3f, 0.3f));
      ValueId v = b.op(MatMul{}, {x, w});
      for (std::size_t i = 0; i < c.leaves.size(); ++i)
        v = b.op(i % 2 ? "mul" : "add", {v, b.input("leaf" + std::to_string(i), uniform(rng, c.leaves[i], -1, 1))});
      b.output("y", b.op(Tanh{}, {v}));
      const std::string what = detail::concat("epilogue ", to_string(c.a), " @ ", to_string(c.b), constant ? "" : " (b input)");
      check_builder(b, what);
      CHECK_MESSAGE(plan_has_epilogue(b), what);
    }
  {  // epilogues whose output is i32 or a comparison
    Builder b;
    const auto x = b.input("x", uniform(rng, {13, 7}, -2, 2));
    const auto w = b.constant(uniform(rng, {7, 5}, -1, 1));
    const auto p = b.op(Mul{}, {b.op(MatMul{}, {x, w}), b.constant(Tensor::scalar(100.0f))});
    b.output("i", b.op(Cast{.to = DType::i32}, {p}));
    b.output("gt", b.op(Gt{}, {b.op(MatMul{}, {x, w}), b.constant(Tensor::scalar(0.0f))}));
    check_builder(b, "epilogues into i32 and compare");
  }
  {  // x @ x, and x read again by the epilogue
    Builder b;
    const auto x = b.input("x", uniform(rng, {7, 7}, -1, 1));
    b.output("y", b.op(Sub{}, {b.op(MatMul{}, {x, x}), x}));
    check_builder(b, "x @ x - x");
  }
  {  // two matmuls feeding one group: only one can be its epilogue producer
    Builder b;
    const auto x = b.input("x", uniform(rng, {9, 16}, -1, 1));
    const auto p = b.op(MatMul{}, {x, b.constant(uniform(rng, {16, 8}, -0.3f, 0.3f))});
    const auto q = b.op(MatMul{}, {x, b.constant(uniform(rng, {16, 8}, -0.3f, 0.3f))});
    b.output("y", b.op(Mul{}, {b.op(Sigmoid{}, {p}), q}));  // a gated unit
    check_builder(b, "gated unit");
  }
}

TEST_CASE("in-place groups: a group writing over a leaf it reads last, through reshape aliases, with later readers") {
  Rng rng(27);
  for (int variant = 0; variant < 4; ++variant) {
    Builder b;
    const auto x = b.input("x", uniform(rng, {6, 10}, -1, 1));
    const auto a = b.op(Softmax{.axis = -1}, {x});                        // an arena value
    const auto r = b.op(Reshape{.shape = {3, 20}}, {a});                 // an alias of it
    const auto c = b.op(Exp{}, {r});                                     // may write over a
    const auto d = b.op(Add{}, {c, b.constant(uniform(rng, {20}, -1, 1))});
    ValueId e = b.op(Softmax{.axis = 0}, {d});
    if (variant == 1) b.output("a_late", b.op(Neg{}, {b.op(Reshape{.shape = {60}}, {a})}));  // a read after c
    if (variant == 2) e = b.op(Mul{}, {e, b.op(Reshape{.shape = {3, 20}}, {a})});           // a read by a later group
    if (variant == 3) b.output("r", r);                                                      // the alias as an output
    b.output("y", b.op(Tanh{}, {e}));
    b.output("d", d);
    check_builder(b, detail::concat("in-place variant ", variant));
  }
  {  // a long unfused chain: every step can run in place
    Builder b;
    ValueId v = b.op(Softmax{.axis = -1}, {b.input("x", uniform(rng, {33, 13}, -1, 1))});
    std::vector<ValueId> kept;
    for (int i = 0; i < 30; ++i) {
      v = i % 3 == 0 ? b.op(Sigmoid{}, {v}) : b.op(Add{}, {v, b.op(Softmax{.axis = 0}, {v})});
      if (i % 7 == 0) kept.push_back(v);
    }
    for (std::size_t k = 0; k < kept.size(); ++k) v = b.op(Add{}, {v, kept[k]});
    b.output("y", v);
    check_builder(b, "in-place chain");
  }
}

TEST_CASE("a value reshaped into a graph output is computed in the output's buffer, not copied there") {
  Rng rng(29);
  for (int variant = 0; variant < 5; ++variant) {
    Builder b;
    const auto x = b.input("x", uniform(rng, {12, 16}, -1, 1));
    // matmul + bias + activation in one kernel, its result reshaped into the output (as a 3-D linear layer ends).
    const auto h = b.op(Gelu{.approximate = "tanh"}, {b.op(Add{}, {b.op(MatMul{}, {x, b.constant(uniform(rng, {16, 8}, -0.3f, 0.3f))}),
                                                                   b.constant(uniform(rng, {8}, -1, 1))})});
    b.output("y", b.op(Reshape{.shape = {3, 4, 8}}, {h}));
    if (variant == 1) b.output("later", b.op(Softmax{.axis = 0}, {h}));                // read again after the reshape
    if (variant == 2) b.output("twice", b.op(Reshape{.shape = {96}}, {h}));            // reshaped into two outputs
    if (variant == 3) b.output("h", h);                                                // itself an output too
    if (variant == 4) b.output("x_again", b.op(Reshape{.shape = {192}}, {x}));          // a graph input reshaped out
    check_builder(b, detail::concat("reshaped into an output, variant ", variant));
  }
  Builder b;  // nothing else lives in the arena: the softmax is written straight into y
  b.output("y", b.op(Reshape{.shape = {64}}, {b.op(Softmax{.axis = -1}, {b.input("x", uniform(rng, {8, 8}, -1, 1))})}));
  for (bool fuse : {false, true}) CHECK(Executor(Model(b.graph()), {1, fuse}).arena_bytes() == 0);
}

TEST_CASE("a slice that is one contiguous run of its input is a view, not a copy; other slices copy") {
  Rng rng(30);
  {  // a diagonal state-space recurrence, as the ssm zoo model unrolls it: each step reads one row of u
    Builder b;
    const auto u = b.op(Softmax{.axis = -1}, {b.input("x", uniform(rng, {1, 6, 300}, -1, 1))});  // an arena value
    const auto decay = b.constant(uniform(rng, {300}, 0.5f, 0.9f));
    ValueId h = b.op(Slice{.axes = {1}, .starts = {0}, .ends = {1}, .steps = {}}, {u});
    std::vector<ValueId> states{h};
    for (std::int64_t t = 1; t < 6; ++t) {
      h = b.op(Add{}, {b.op(Mul{}, {h, decay}), b.op(Slice{.axes = {1}, .starts = {t}, .ends = {t + 1}, .steps = {}}, {u})});
      states.push_back(h);
    }
    b.output("y", b.op(Concat{.axis = 1}, states));
    check_builder(b, "unrolled recurrence over row views");
    const std::string plan = Executor(Model(b.graph()), {1, true}).describe();
    CHECK(contains(plan, "slice (view, no copy)"));
    CHECK_FALSE(contains(plan, "slice (strided copy)"));
  }
  const auto x = uniform(rng, {4, 3, 5}, -1, 1);
  const std::vector<Slice> slices{
      Slice{.axes = {0}, .starts = {1}, .ends = {3}, .steps = {}},                             // whole rows of axis 0: a view
      Slice{.axes = {0, 1}, .starts = {2, 1}, .ends = {3, 3}, .steps = {}},                    // one index, then a range: a view
      Slice{.axes = {0, 1, 2}, .starts = {2, 1, 0}, .ends = {3, 2, 5}, .steps = {}},           // a single row: a view
      Slice{.axes = {0, 1}, .starts = {0, 1}, .ends = {4, 3}, .steps = {}},                    // a range before a partial axis: copied
      Slice{.axes = {0}, .starts = {0}, .ends = {4}, .steps = {2}},               // a step: copied
      Slice{.axes = {0}, .starts = {3}, .ends = {-100}, .steps = {-1}},           // reversed: copied
      Slice{.axes = {2}, .starts = {1}, .ends = {4}, .steps = {}}};                            // inside the last axis: copied
  for (std::size_t i = 0; i < slices.size(); ++i)
    for (int source = 0; source < 3; ++source) {
      Builder b;
      const auto in = b.input("x", x);
      const ValueId from = source == 0 ? in : source == 1 ? b.op(Tanh{}, {in}) : b.constant(x);
      const auto view = b.op(slices[i], {from});
      b.output("y", b.op(Neg{}, {view}));
      b.output("view", view);                                               // as an output it is copied
      const auto second = b.op(Slice{slices[i]}, {from});                   // a second slice of the same value,
      b.output("z", b.op(Exp{}, {second}));                                 // read twice: a kernel of its own
      b.output("w", b.op(Abs{}, {second}));
      b.output("u", b.op(Sigmoid{}, {b.op(Slice{slices[i]}, {from})}));    // read once: in place, by the group
      check_builder(b, detail::concat("slice ", i, " of source ", source));
      CAPTURE(i);
      CAPTURE(source);
      // (A constant's slices fold while the graph is built.)
      const std::string plan = Executor(Model(b.graph()), {1, true}).describe();
      CHECK(contains(plan, "slice (view, no copy)") == (i < 3 && source != 2));
      std::size_t slice_kernels = 0;
      for (std::size_t at = plan.find("slice ("); at != std::string::npos; at = plan.find("slice (", at + 1)) ++slice_kernels;
      CHECK(slice_kernels == (source != 2 ? 2u : 0u));
    }
}

TEST_CASE("slices read in place by a group: an LSTM's gates, steps, reversal, a slice of the group's own leaf") {
  Rng rng(31);
  {  // an LSTM cell's gates: four column blocks of one product, sigmoid/tanh, the cell and hidden state
    Builder b;
    const auto gates = b.op(Tanh{}, {b.input("g", uniform(rng, {1, 5, 32}, -2, 2))});  // an arena value
    const auto c_prev = b.input("c", uniform(rng, {1, 5, 8}, -1, 1));
    auto gate = [&](std::int64_t k) { return b.op(Slice{.axes = {2}, .starts = {8 * k}, .ends = {8 * k + 8}, .steps = {}}, {gates}); };
    const auto i = b.op(Sigmoid{}, {gate(0)}), f = b.op(Sigmoid{}, {gate(1)});
    const auto g = b.op(Tanh{}, {gate(2)}), o = b.op(Sigmoid{}, {gate(3)});
    const auto c = b.op(Add{}, {b.op(Mul{}, {f, c_prev}), b.op(Mul{}, {i, g})});
    b.output("c", c);
    b.output("h", b.op(Mul{}, {o, b.op(Tanh{}, {c})}));
    check_builder(b, "LSTM gates from slices");
    CHECK_FALSE(contains(Executor(Model(b.graph()), {1, true}).describe(), "slice ("));
  }
  {  // steps, a reversal and a broadcast slice in one group
    Builder b;
    const auto x = b.op(Exp{}, {b.input("x", uniform(rng, {6, 10}, -1, 1))});
    const auto every_other = b.op(Slice{.axes = {1}, .starts = {0}, .ends = {10}, .steps = {2}}, {x});      // [6, 5]
    const auto reversed = b.op(Slice{.axes = {0, 1}, .starts = {5, 9}, .ends = {-100, 4}, .steps = {-1, -1}}, {x});  // [6, 5]
    const auto column = b.op(Slice{.axes = {1}, .starts = {3}, .ends = {4}, .steps = {}}, {x});             // [6, 1]
    b.output("y", b.op(Mul{}, {b.op(Add{}, {every_other, reversed}), column}));
    check_builder(b, "strided, reversed and broadcast slices");
  }
  {  // a group whose plain leaf is also read reversed: its output must not be written over that leaf
    Builder b;
    const auto r = b.op(Tanh{}, {b.input("x", uniform(rng, {1000}, -1, 1))});  // several blocks
    const auto d = b.op(Sub{}, {r, b.op(Slice{.axes = {0}, .starts = {999}, .ends = {-2000}, .steps = {-1}}, {r})});
    b.output("y", b.op(Softmax{.axis = 0}, {d}));  // (d in the arena, where it could be written over r)
    check_builder(b, "r - reversed(r)");
  }
}

TEST_CASE("a batch-1 concat's inputs are computed in place in its output; other concats copy") {
  Rng rng(32);
  const Tensor x1 = uniform(rng, {1, 4, 8, 8}, -1, 1), x2 = uniform(rng, {2, 4, 8, 8}, -1, 1);
  const std::int64_t concat_bytes = 8 * 8 * 8 * 4;  // the concat of two [1, 4, 8, 8] values
  {  // two computed inputs: the arena holds the concat alone
    Builder b;
    const auto x = b.input("x", x1);
    b.output("y", b.op(Neg{}, {b.op(Concat{.axis = 1}, {b.op(Tanh{}, {x}), b.op(Exp{}, {x})})}));
    check_builder(b, "two computed inputs");
    for (bool fuse : {false, true}) CHECK(Executor(Model(b.graph()), {1, fuse}).arena_bytes() == concat_bytes);
  }
  {  // the same at batch 2: each input is two runs of the output, so copied
    Builder b;
    const auto x = b.input("x", x2);
    b.output("y", b.op(Neg{}, {b.op(Concat{.axis = 1}, {b.op(Tanh{}, {x}), b.op(Exp{}, {x})})}));
    check_builder(b, "batch 2");
    CHECK(Executor(Model(b.graph()), {1, true}).arena_bytes() > 2 * concat_bytes);
  }
  {  // a u-net's skip and upsampled inputs (through a reshape), the skip read again after the concat
    Builder b;
    const auto x = b.input("x", x1);
    const auto skip = b.op(Relu{}, {b.op(Tanh{}, {x})});
    const auto low = b.op(Sigmoid{}, {b.input("low", uniform(rng, {1, 4, 4, 4}, -1, 1))});
    const auto wide = b.op(BroadcastTo{.shape = {1, 4, 4, 2, 4, 2}}, {b.op(Reshape{.shape = {1, 4, 4, 1, 4, 1}}, {low})});
    const auto up = b.op(Reshape{.shape = {1, 4, 8, 8}}, {wide});
    const auto joined = b.op(Concat{.axis = 1}, {skip, up});
    b.output("y", b.op(Add{}, {b.op(Slice{.axes = {1}, .starts = {2}, .ends = {6}, .steps = {}}, {joined}), skip}));
    b.output("low_again", b.op(Neg{}, {low}));
    check_builder(b, "skip and upsampled inputs");
  }
  {  // an input twice, a graph input and a constant: copied; the computed one in place
    Builder b;
    const auto x = b.input("x", x1);
    const auto t = b.op(Tanh{}, {x});
    b.output("y", b.op(Exp{}, {b.op(Concat{.axis = 1}, {t, x, t, b.constant(uniform(rng, {1, 2, 8, 8}, -1, 1))})}));
    check_builder(b, "an input twice, a graph input and a constant");
  }
  {  // a recurrence whose states are read by the next step and by the concat (as the ssm's)
    Builder b;
    const auto u = b.input("u", uniform(rng, {1, 5, 32}, -1, 1));
    const auto decay = b.constant(uniform(rng, {32}, 0.5f, 0.9f));
    ValueId h = b.op(Tanh{}, {b.op(Slice{.axes = {1}, .starts = {0}, .ends = {1}, .steps = {}}, {u})});
    std::vector<ValueId> states{h};
    for (std::int64_t t = 1; t < 5; ++t) {
      h = b.op(Add{}, {b.op(Mul{}, {h, decay}), b.op(Slice{.axes = {1}, .starts = {t}, .ends = {t + 1}, .steps = {}}, {u})});
      states.push_back(h);
    }
    b.output("y", b.op(Neg{}, {b.op(Concat{.axis = 1}, states)}));
    check_builder(b, "recurrent states");
  }
}

TEST_CASE("products concatenated along their last axis are written into the concat's rows, not copied") {
  Rng rng(33);
  const auto expert = [&](Builder& b, ValueId x, std::int64_t k, std::int64_t n) {  // matmul + bias + tanh
    return b.op(Tanh{}, {b.op(Add{}, {b.op(MatMul{}, {x, b.constant(uniform(rng, {k, n}, -0.3f, 0.3f))}),
                                      b.constant(uniform(rng, {n}, -1, 1))})});
  };
  const auto plan_of = [](const Builder& b, bool fuse) { return Executor(Model(b.graph()), {1, fuse}).describe(); };
  const auto count = [](const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  {  // a mixture's experts, [6, 5, n] each through a reshape, joined along features and weighted
    Builder b;
    const auto x = b.input("x", uniform(rng, {30, 16}, -1, 1));
    std::vector<ValueId> outs;
    for (std::int64_t n : {24, 8, 24}) outs.push_back(b.op(Reshape{.shape = {6, 5, n}}, {expert(b, x, 16, n)}));
    const auto joined = b.op(Concat{.axis = 2}, outs);
    b.output("y", b.op(Mul{}, {joined, b.input("w", uniform(rng, {6, 5, 56}, -1, 1))}));
    check_builder(b, "experts joined along features");
    const std::string plan = plan_of(b, true);
    CHECK(count(plan, "rows 56 apart (into a concat)") == 3);
    CHECK(contains(plan, "concat (strided copy)"));  // (a kernel still, copying nothing)
    CHECK_FALSE(contains(plan_of(b, false), "apart"));  // unfused, the bias add writes the product's value
  }
  {  // rows of 12 = [3, 4] joined along axis 1 of [2, 3 + 5, 4]: the product's rows are the concat's
    Builder b;
    const auto x = b.input("x", uniform(rng, {2, 7}, -1, 1));
    const auto placed = b.op(Reshape{.shape = {2, 3, 4}}, {expert(b, x, 7, 12)});
    const auto copied = b.op(Exp{}, {b.input("z", uniform(rng, {2, 5, 4}, -1, 1))});
    b.output("y", b.op(Neg{}, {b.op(Concat{.axis = 1}, {copied, placed})}));
    check_builder(b, "rows of 12 joined along a middle axis");
    CHECK(contains(plan_of(b, true), "rows 32 apart (into a concat)"));
  }
  {  // a batched product (several right operands) and a bare product, joined along the last axis
    Builder b;
    const auto x = b.input("x", uniform(rng, {3, 4, 5}, -1, 1));
    const auto batched = b.op(MatMul{}, {x, b.input("v", uniform(rng, {3, 5, 6}, -1, 1))});
    const auto bare = b.op(MatMul{}, {x, b.constant(uniform(rng, {5, 7}, -1, 1))});
    const auto twice = b.op(MatMul{}, {x, b.constant(uniform(rng, {5, 2}, -1, 1))});
    b.output("y", b.op(Sigmoid{}, {b.op(Concat{.axis = -1}, {batched, bare, twice, twice})}));
    check_builder(b, "batched and bare products");
    // (the product read twice by the concat has no one place: copied)
    for (bool fuse : {false, true}) CHECK(count(plan_of(b, fuse), "rows 17 apart") == 2);
  }
  {  // a product read by more than the concat stays put; one whose epilogue reads it twice is placed
    Builder b;
    const auto x = b.input("x", uniform(rng, {8, 16}, -1, 1));
    const auto shared = expert(b, x, 16, 8);
    const auto product = b.op(MatMul{}, {x, b.constant(uniform(rng, {16, 8}, -1, 1))});
    const auto squared = b.op(Mul{}, {product, product});
    b.output("y", b.op(Abs{}, {b.op(Concat{.axis = 1}, {shared, squared})}));
    b.output("shared", b.op(Neg{}, {shared}));
    check_builder(b, "a shared product, and an epilogue reading its product twice");
    CHECK(count(plan_of(b, true), "apart") == 1);  // the squared product only
  }
}

TEST_CASE("a reduction computes the group only it reads slab by slab, never writing it out") {
  Rng rng(34);
  const auto plan_of = [](const Builder& b) { return Executor(Model(b.graph()), {1, true}).describe(); };
  {  // a mixture's weighted sum: experts [6, 5, 8, 40] times weights [6, 5, 8, 1], summed over the experts
    Builder b;
    const auto experts = b.op(Tanh{}, {b.input("x", uniform(rng, {6, 5, 8, 40}, -2, 2))});
    const auto weighted = b.op(Mul{}, {experts, b.input("w", uniform(rng, {6, 5, 8, 1}, 0, 1))});
    b.output("y", b.op(ReduceSum{.axes = {2}}, {weighted}));
    check_builder(b, "weighted sum over experts");
    CHECK(contains(plan_of(b), "reduce_sum over 8 elements per output, of tanh+mul over [240, 40] computed 320 at a time"));
  }
  {  // sums of squares and means over neighbouring axes, kept or not; max and min of a slice read in place
    Builder b;
    const auto x = b.op(Exp{}, {b.input("x", uniform(rng, {3, 4, 5, 300}, -1, 1))});  // an arena value
    b.output("squares", b.op(ReduceSum{.axes = {-1}}, {b.op(Mul{}, {b.op(Sin{}, {x}), b.op(Sin{}, {x})})}));
    b.output("mean", b.op(ReduceMean{.axes = {1, 2}, .keep_dims = true}, {b.op(Sub{}, {b.op(Cos{}, {x}), x})}));
    const auto part = [&] { return b.op(Slice{.axes = {3}, .starts = {1}, .ends = {300}, .steps = {3}}, {x}); };
    b.output("max", b.op(ReduceMax{.axes = {2, 3}}, {b.op(Neg{}, {part()})}));
    b.output("min", b.op(ReduceMin{.axes = {0, 1, 2, 3}}, {b.op(Abs{}, {part()})}));
    check_builder(b, "squares, means, max and min");
    std::size_t fused = 0;
    const std::string plan = plan_of(b);
    for (std::size_t at = plan.find(" at a time"); at != std::string::npos; at = plan.find(" at a time", at + 1)) ++fused;
    CHECK(fused == 4);
  }
  {  // not fused: axes apart, a slab over 64 KiB or under 256 floats, a group also read elsewhere, a product's epilogue
    Builder b;
    const auto x = b.input("x", uniform(rng, {4, 3, 300}, -1, 1));
    b.output("apart", b.op(ReduceSum{.axes = {0, 2}}, {b.op(Tanh{}, {x})}));
    b.output("large", b.op(ReduceMean{.axes = {0}}, {b.op(Sigmoid{}, {b.input("big", uniform(rng, {200, 100}, -1, 1))})}));
    b.output("small", b.op(ReduceSum{.axes = {1}}, {b.op(Abs{}, {b.input("few", uniform(rng, {50, 255}, -1, 1))})}));
    const auto shared = b.op(Exp{}, {x});
    b.output("shared_sum", b.op(ReduceSum{.axes = {2}}, {shared}));
    b.output("shared", shared);
    const auto product = b.op(MatMul{}, {x, b.constant(uniform(rng, {300, 260}, -0.1f, 0.1f))});
    b.output("epilogue", b.op(ReduceMax{.axes = {2}}, {b.op(Relu{}, {product})}));
    check_builder(b, "reductions left unfused");
    CHECK_FALSE(contains(plan_of(b), " at a time"));
  }
}

TEST_CASE("large transposes and transposing copies run in tiles and match the reference") {
  Rng rng(28);
  const std::vector<std::pair<Shape, Ints>> cases{{{130, 70}, {1, 0}},         {{2, 65, 67}, {0, 2, 1}},
                                                  {{33, 3, 97}, {2, 1, 0}},     {{5, 64, 32}, {0, 2, 1}},
                                                  {{31, 2, 33, 3}, {2, 1, 0, 3}}, {{1, 257, 1, 31}, {3, 1, 2, 0}}};
  for (const auto& [s, perm] : cases) {
    Builder b;
    const auto x = b.input("x", uniform(rng, s, -3, 3));
    b.output("y", b.op(Transpose{.perm = perm}, {x}));
    const auto xi = b.input("xi", ints(rng, s, -1000, 1000));
    b.output("yi", b.op(Transpose{.perm = perm}, {xi}));
    check_builder(b, detail::concat("transpose ", to_string(s), " perm ", to_string(perm)));
  }
  // The last two: nearest-neighbour upsampling (each element repeated 2 and 3 times along rows).
  for (const auto& [from, to] : {std::pair<Shape, Shape>{{67, 1}, {67, 70}}, {{3, 40, 1}, {3, 40, 35}}, {{1, 33}, {70, 33}},
                                 {{2, 5, 1, 9, 1}, {2, 5, 2, 9, 2}}, {{3, 1, 7, 1}, {3, 3, 7, 3}}}) {
    Builder b;
    const auto x = b.input("x", uniform(rng, from, -3, 3));
    b.output("y", b.op(BroadcastTo{.shape = to}, {x}));
    const auto xi = b.input("xi", ints(rng, from, -1000, 1000));
    b.output("yi", b.op(BroadcastTo{.shape = to}, {xi}));
    check_builder(b, detail::concat("broadcast_to ", to_string(from), " -> ", to_string(to)));
  }
  {  // a slice of a transpose, and a pad of one
    Builder b;
    const auto x = b.input("x", uniform(rng, {50, 45}, -3, 3));
    const auto t = b.op(Transpose{.perm = {1, 0}}, {x});
    b.output("s", b.op(Slice{.axes = {0, 1}, .starts = {44, 1}, .ends = {-100, 49}, .steps = {-2, 3}}, {t}));
    b.output("p", b.op(Pad{.pads = {1, 2, 3, 4}, .value = 0.5}, {t}));
    check_builder(b, "slice and pad of a transpose");
  }
}

TEST_CASE("tensors large enough to be split across 2, 3 and 4 threads match the reference") {
  Rng rng(33);
  const std::vector<RunConfig> configs{{1, true, false}, {2, true, true}, {3, true, false}, {4, false, true}, {3, false, false}};
  const Shape big{3, 77, 301};  // 69531 elements: many blocks, rows and tiles
  {
    Builder b;
    const auto x = b.input("x", uniform(rng, big, -2, 2));
    const auto col = b.input("col", uniform(rng, {77, 1}, -2, 2));
    const auto ew = b.op(Tanh{}, {b.op(Mul{}, {b.op(Add{}, {x, col}), b.constant(uniform(rng, {301}, -1, 1))})});
    b.output("ew", ew);
    b.output("sum_last", b.op(ReduceSum{.axes = {2}, .keep_dims = false}, {x}));
    b.output("max_first", b.op(ReduceMax{.axes = {0}, .keep_dims = true}, {x}));
    b.output("mean_02", b.op(ReduceMean{.axes = {0, 2}, .keep_dims = false}, {x}));
    b.output("min_all", b.op(ReduceMin{.axes = {0, 1, 2}, .keep_dims = false}, {x}));
    b.output("softmax_last", b.op(Softmax{.axis = -1}, {x}));
    b.output("softmax_mid", b.op(Softmax{.axis = 1}, {x}));
    b.output("ln", b.op(LayerNorm{}, {x, b.constant(uniform(rng, {301}, -1, 1))}));
    b.output("t", b.op(Transpose{.perm = {2, 0, 1}}, {x}));
    b.output("t2", b.op(Transpose{.perm = {0, 2, 1}}, {x}));
    b.output("cat", b.op(Concat{.axis = 1}, {x, ew}));
    b.output("pad", b.op(Pad{.pads = {0, 3, 1, 1, 0, 2}, .value = 9.0}, {x}));
    b.output("slice", b.op(Slice{.axes = {1, 2}, .starts = {-1, 0}, .ends = {-78, 301}, .steps = {-1, 2}}, {x}));
    b.output("bcast", b.op(BroadcastTo{.shape = {2, 77, 301}}, {col}));
    b.output("gather", b.op(Gather{.axis = 2}, {x, b.input("idx", ints(rng, {40}, -301, 300))}));
    const auto top = b.op_multi(TopK{.k = 7}, {x}, 2);
    b.output("top_values", top[0]);
    b.output("top_indices", top[1]);
    check_builder(b, "large tensors", configs);
  }
  {
    Builder b;
    const auto img = b.input("img", uniform(rng, {2, 8, 40, 37}, -1, 1));
    Conv2d op;
    op.pads = {1, 2, 1, 0};
    op.strides = {1, 2};
    const auto c = b.op(op, {img, b.constant(conv_weight(rng, {130, 8, 3, 3})), b.constant(uniform(rng, {130}, -1, 1))});
    b.output("conv", b.op(Relu{}, {b.op(Add{}, {c, b.constant(uniform(rng, {1, 130, 1, 1}, -1, 1))})}));
    MaxPool2d mp;
    mp.kernel = {3, 3};
    mp.strides = {2, 2};
    mp.pads = {1, 1, 1, 1};
    b.output("pool", b.op(mp, {img}));
    const auto q = b.input("q", uniform(rng, {2, 4, 70, 16}, -1, 1));
    b.output("sdpa", b.op(Sdpa{.causal = true, .scale = std::nullopt}, {q, q, b.input("v", uniform(rng, {2, 4, 70, 24}, -1, 1))}));
    const auto a = b.input("a", uniform(rng, {4, 150, 64}, -0.5f, 0.5f));
    b.output("mm", b.op(Gelu{}, {b.op(MatMul{}, {a, b.input("w", uniform(rng, {64, 300}, -0.5f, 0.5f))})}));
    check_builder(b, "large conv, pool, sdpa, matmul", configs);
  }
}

TEST_CASE("zero-copy buffers need only 4-byte alignment; an Executor outlives its Model and Builder") {
  Rng rng(34);
  auto build = [&] {
    Builder b;
    const auto x = b.input("x", uniform(rng, {37, 45}, -1, 1));
    const auto h = b.op(Relu{}, {b.op(Add{}, {b.op(MatMul{}, {x, b.constant(uniform(rng, {45, 29}, -0.3f, 0.3f))}),
                                             b.constant(uniform(rng, {29}, -1, 1))})});
    b.output("h", h);
    b.output("s", b.op(Softmax{.axis = 0}, {b.op(MatMul{}, {h, b.op(Transpose{.perm = {1, 0}}, {h})})}));
    const auto img = b.input("img", uniform(rng, {1, 3, 11, 11}, -1, 1));
    Conv2d conv;
    conv.pads = {1, 1, 1, 1};
    const auto c = b.op(conv, {img, b.constant(conv_weight(rng, {3, 3, 3, 3}))});
    b.output("c", b.op(Add{}, {c, img}));  // a residual read by the conv's epilogue
    return b;
  };
  const Builder b = build();
  TensorMap inputs;
  for (const NamedValue& in : b.graph().inputs) inputs.emplace(in.name, b.example(in.value));
  const TensorMap expected = evaluate(b.graph(), inputs);
  std::unique_ptr<Executor> executor;
  {
    const Builder copy = b;
    executor = std::make_unique<Executor>(Model(copy.graph()), ExecutorOptions{2, true});
  }  // the Builder and the Model are gone
  const Graph& g = executor->model().graph();
  // Every buffer at an address that is 4 mod 64.
  std::vector<std::vector<std::byte>> storage;
  std::vector<InputBuffer> in;
  std::vector<OutputBuffer> out;
  for (const NamedValue& i : g.inputs) {
    const Tensor& t = inputs.at(i.name);
    storage.emplace_back(t.bytes() + 128);
    std::byte* p = storage.back().data();
    p += (68 - reinterpret_cast<std::uintptr_t>(p) % 64) % 64;
    std::memcpy(p, t.raw(), t.bytes());
    in.push_back({p, t.bytes()});
  }
  for (const NamedValue& o : g.outputs) {
    const std::size_t bytes = static_cast<std::size_t>(g.type(o.value).elements()) * 4;
    storage.emplace_back(bytes + 128);
    std::byte* p = storage.back().data();
    p += (68 - reinterpret_cast<std::uintptr_t>(p) % 64) % 64;
    out.push_back({p, bytes});
  }
  for (int run = 0; run < 3; ++run) {
    executor->run(in, out);
    for (std::size_t o = 0; o < g.outputs.size(); ++o) {
      Tensor got(g.type(g.outputs[o].value));
      std::memcpy(got.raw(), out[o].data, got.bytes());
      const std::string m = mismatch(got, expected.at(g.outputs[o].name));
      CHECK_MESSAGE(m.empty(), "output '", g.outputs[o].name, "': ", m);
    }
  }
  check_builder(b, "unaligned buffers model");
}

TEST_CASE("zero-size tensors pass through every kind of kernel") {
  Rng rng(29);
  Builder b;
  const auto x = b.input("x", uniform(rng, {0, 5}, -1, 1));
  const auto y = b.input("y", uniform(rng, {4, 0}, -1, 1));
  b.output("ew", b.op(Add{}, {b.op(Exp{}, {x}), b.constant(uniform(rng, {5}, -1, 1))}));
  b.output("ew2", b.op(Relu{}, {y}));
  b.output("mm", b.op(MatMul{}, {y, b.constant(uniform(rng, {0, 3}, -1, 1))}));      // K = 0: zeros
  b.output("mm2", b.op(Relu{}, {b.op(MatMul{}, {x, b.constant(uniform(rng, {5, 3}, -1, 1))})}));
  b.output("sum", b.op(ReduceSum{.axes = {1}, .keep_dims = false}, {y}));            // zeros
  b.output("mean", b.op(ReduceMean{.axes = {1}, .keep_dims = true}, {y}));           // NaN
  b.output("max", b.op(ReduceMax{.axes = {1}, .keep_dims = false}, {x}));
  b.output("softmax", b.op(Softmax{.axis = -1}, {y}));
  b.output("ln", b.op(LayerNorm{}, {x}));
  b.output("t", b.op(Transpose{.perm = {1, 0}}, {y}));
  b.output("cat", b.op(Concat{.axis = 0}, {x, x}));
  b.output("pad", b.op(Pad{.pads = {1, 0, 2, 1}, .value = 3.0}, {x}));
  b.output("gather", b.op(Gather{.axis = 1}, {x, b.input("idx", ints(rng, {2}, -5, 4))}));
  b.output("gather_none", b.op(Gather{.axis = 0}, {b.input("table", uniform(rng, {3, 2}, -1, 1)), b.input("none", Tensor(DType::i32, {0}))}));
  const auto top = b.op_multi(TopK{.k = 0}, {b.input("z", uniform(rng, {3, 4}, -1, 1))}, 2);
  b.output("top", top[0]);
  b.output("top_i", top[1]);
  b.output("sdpa", b.op(Sdpa{}, {b.input("q", uniform(rng, {2, 3, 4}, -1, 1)), b.input("k", uniform(rng, {2, 0, 4}, -1, 1)),
                                 b.input("v", uniform(rng, {2, 0, 5}, -1, 1))}));
  b.output("conv", b.op(Conv2d{}, {b.input("img", uniform(rng, {0, 2, 3, 3}, -1, 1)), b.constant(conv_weight(rng, {4, 2, 2, 2}))}));
  check_builder(b, "zero-size tensors");
}

TEST_CASE("nodes whose outputs nothing reads still leave the other results intact") {
  Rng rng(30);
  Builder b;
  const auto x = b.input("x", uniform(rng, {8, 16}, -1, 1));
  const auto p = b.op(MatMul{}, {x, b.constant(uniform(rng, {16, 16}, -0.3f, 0.3f))});
  b.op(Exp{}, {p});                                        // dead, reads the product
  const auto h = b.op(Relu{}, {b.op(Add{}, {p, b.constant(uniform(rng, {16}, -1, 1))})});
  b.op(Softmax{.axis = 0}, {h});                           // dead
  b.op_multi(TopK{.k = 2}, {h}, 2);                        // dead, two outputs
  b.op(Reshape{.shape = {128}}, {h});                      // a dead alias
  b.output("y", b.op(Mul{}, {h, x}));
  check_builder(b, "dead nodes");
}

TEST_CASE("a value named as two graph outputs fills both output buffers") {
  Rng rng(25);
  Builder b;
  const auto x = b.input("x", uniform(rng, {3, 4}, -1, 1));
  const auto y = b.op(Relu{}, {x});
  b.output("first", y);
  b.output("second", y);
  b.output("z", b.op(Exp{}, {y}));
  check_builder(b, "one value, two outputs");
}

// ================================================================ random chains

namespace {

/// Builds a random graph of 2-8 steps around one "current" value.
class ChainMaker {
 public:
  explicit ChainMaker(Rng& rng) : rng_(rng) {}

  Builder make() {
    Shape shape;
    if (coin(rng_, 0.25))
      shape = {pick<std::int64_t>(rng_, {1, 2}), pick<std::int64_t>(rng_, {1, 3, 4}), pick<std::int64_t>(rng_, {1, 5, 7}),
               pick<std::int64_t>(rng_, {3, 8})};
    else
      shape = {pick<std::int64_t>(rng_, {1, 2, 7}), pick<std::int64_t>(rng_, {1, 3, 5, 13}),
               pick<std::int64_t>(rng_, {1, 4, 7, 16, 33})};
    cur_ = input(shape);
    const int steps = uniform_int(rng_, 2, 8);
    for (int s = 0; s < steps; ++s) step();
    b_.output("out", cur_);
    if (coin(rng_, 0.25)) b_.output("flat", b_.op(Reshape{.shape = {-1}}, {cur_}));
    // Earlier values as outputs too: most of them are read by later nodes.
    int extra = 0;
    for (ValueId v : produced_)
      if (v != cur_ && coin(rng_, 0.2)) b_.output("aux" + std::to_string(extra++), v);
    return std::move(b_);
  }

 private:
  const Shape& shape() const { return b_.type(cur_).shape; }
  ValueId input(const Shape& s) { return b_.input("in" + std::to_string(inputs_++), uniform(rng_, s, -2, 2)); }
  ValueId constant(const Shape& s, float range = 1) { return b_.constant(uniform(rng_, s, -range, range)); }
  ValueId add(ValueId v) {
    produced_.push_back(v);
    return v;
  }
  /// A value that broadcasts against the current one.
  ValueId partner() {
    std::vector<ValueId> same;
    for (ValueId v : produced_)
      if (b_.type(v).shape == shape() && v != cur_) same.push_back(v);
    const int choice = uniform_int(rng_, 0, 4);
    if (choice == 0 && !same.empty()) return pick(rng_, same);  // an earlier value, used again
    if (choice == 1) return cur_;                                // the current value twice
    if (choice == 2) return input(broadcast_operand(rng_, shape()));
    return constant(broadcast_operand(rng_, shape()));
  }
  ValueId binary(ValueId a, ValueId c) {
    if (coin(rng_)) std::swap(a, c);
    switch (uniform_int(rng_, 0, 4)) {
      case 0: return b_.op(Add{}, {a, c});
      case 1: return b_.op(Sub{}, {a, c});
      case 2: return b_.op(Mul{}, {a, c});
      case 3: return b_.op(Maximum{}, {a, c});
      default: return b_.op(Minimum{}, {a, c});
    }
  }
  ValueId activation(ValueId v) {
    switch (uniform_int(rng_, 0, 7)) {
      case 0: return b_.op(Relu{}, {v});
      case 1: return b_.op(Tanh{}, {v});
      case 2: return b_.op(Sigmoid{}, {v});
      case 3: return b_.op(Neg{}, {v});
      case 4: return b_.op(Abs{}, {v});
      case 5: return b_.op(Gelu{}, {v});
      case 6: return b_.op(Gelu{.approximate = "tanh"}, {v});
      default: return b_.op(Erf{}, {v});
    }
  }

  void step() {
    const std::size_t rank = shape().size();
    const std::int64_t last = shape().back();
    switch (uniform_int(rng_, 0, 12)) {
      case 0:
      case 1: cur_ = add(activation(cur_)); break;
      case 2:
      case 3: cur_ = add(binary(cur_, partner())); break;
      case 4: {  // a broadcast_to feeding a binary op
        const ValueId small = coin(rng_) ? constant(broadcast_operand(rng_, shape(), 0.6)) : input(broadcast_operand(rng_, shape(), 0.6));
        cur_ = add(binary(cur_, b_.op(BroadcastTo{.shape = shape()}, {small})));
        break;
      }
      case 5: {  // reshape: merge the two leading axes, or flatten to 2-D
        Shape to = shape();
        if (rank >= 3 && coin(rng_)) {
          to[1] *= to[0];
          to.erase(to.begin());
        } else {
          to = {-1, last};
        }
        cur_ = add(b_.op(Reshape{.shape = to}, {cur_}));
        break;
      }
      case 6: {  // transpose
        Ints perm(rank);
        std::iota(perm.begin(), perm.end(), 0);
        if (rank >= 2 && coin(rng_, 0.7)) std::swap(perm[rank - 1], perm[rank - 2]);
        else std::shuffle(perm.begin(), perm.end(), rng_);
        cur_ = add(b_.op(Transpose{.perm = perm}, {cur_}));
        break;
      }
      case 7:
      case 8: {  // matmul with a constant weight, often with the MLP tail
        const std::int64_t n = pick<std::int64_t>(rng_, {last, last, 5, 16, 33});
        const float scale = 1.0f / std::sqrt(float(std::max<std::int64_t>(last, 1)));
        const ValueId before = cur_;
        ValueId v = b_.op(MatMul{}, {cur_, constant({last, n}, scale)});
        if (coin(rng_, 0.7)) v = b_.op(Add{}, {v, constant({n})});
        if (coin(rng_, 0.6)) v = activation(v);
        if (n == last && coin(rng_, 0.5)) v = b_.op(Add{}, {v, before});  // residual
        cur_ = add(v);
        break;
      }
      case 9: {
        const int r = static_cast<int>(rank);
        cur_ = add(b_.op(Softmax{.axis = coin(rng_) ? -1 : uniform_int(rng_, -r, r - 1)}, {cur_}));
        break;
      }
      case 10:
        cur_ = add(b_.op(LayerNorm{.eps = 1e-3}, {cur_, constant({last}), constant({last})}));
        break;
      case 11: {  // reduce_sum keep_dims, broadcast back against the value
        const ValueId reduced = b_.op(ReduceSum{.axes = {coin(rng_) ? -1 : 0}, .keep_dims = true}, {cur_});
        cur_ = add(coin(rng_, 0.7) ? b_.op(Sub{}, {cur_, reduced}) : reduced);
        break;
      }
      default: {
        if (rank == 4) {  // conv2d -> add bias [1, O, 1, 1] -> relu
          const std::int64_t c = shape()[1], o = pick<std::int64_t>(rng_, {c, 2, 4});
          Conv2d op;
          op.pads = {1, 1, 1, 1};
          ValueId v = b_.op(op, {cur_, b_.constant(conv_weight(rng_, {o, c, 3, 3}))});
          v = b_.op(Add{}, {v, constant({1, o, 1, 1})});
          cur_ = add(b_.op(Relu{}, {v}));
        } else {  // a condition from an input: select between the value and a partner
          const ValueId cond = b_.op(Gt{}, {input(broadcast_operand(rng_, shape())), constant({})});
          cur_ = add(b_.op(Select{}, {cond, cur_, partner()}));
        }
        break;
      }
    }
  }

  Rng& rng_;
  Builder b_;
  ValueId cur_ = 0;
  int inputs_ = 0;
  std::vector<ValueId> produced_;
};

}  // namespace

TEST_CASE("200 random chains of 2-8 ops: fused, unfused and the reference agree") {
  int failures = 0, epilogues = 0, conv_epilogues = 0, residual_epilogues = 0, groups = 0, aliases = 0;
  for (int i = 0; i < 200 * scale(); ++i) {
    Rng rng(5000 + static_cast<unsigned>(i));
    const Builder b = ChainMaker(rng).make();
    const Model model(b.graph());
    const Executor fused(model, {1, true});
    const std::string plan = fused.describe();
    epilogues += contains(plan, "epilogue");
    conv_epilogues += contains(plan, "conv2d") && contains(plan, "epilogue: add+relu");
    residual_epilogues += contains(plan, "relu+add over") || contains(plan, "gelu+add over");
    groups += fused.plan().fused_groups > 0;
    aliases += contains(plan, "reshape (alias");
    failures += check_builder(b, label("chain", i)) > 0;
  }
  CHECK(failures == 0);
  // The chains do exercise what they are meant to.
  CAPTURE(epilogues);
  CAPTURE(conv_epilogues);
  CAPTURE(residual_epilogues);
  CAPTURE(groups);
  CAPTURE(aliases);
  CHECK(epilogues >= 20);
  CHECK(conv_epilogues >= 3);
  CHECK(residual_epilogues >= 3);
  CHECK(groups >= 100);
  CHECK(aliases >= 10);
}

// ================================================================ determinism

namespace {

/// matmul 64x256 @ 256x256 + bias -> gelu -> layer_norm -> sdpa on
/// [2, 4, 16, 32] (causal) -> softmax.
Builder mid_model(Rng& rng) {
  Builder b;
  const auto x = b.input("x", uniform(rng, {64, 256}, -1, 1));
  const auto w = b.constant(uniform(rng, {256, 256}, -0.0625f, 0.0625f), "w");
  const auto bias = b.constant(uniform(rng, {256}, -0.5f, 0.5f), "bias");
  const auto h = b.op(Gelu{}, {b.op(Add{}, {b.op(MatMul{}, {x, w}), bias})});
  const auto ln = b.op(LayerNorm{}, {h, b.constant(uniform(rng, {256}, 0.5f, 1.5f), "scale"), b.constant(uniform(rng, {256}, -0.1f, 0.1f), "shift")});
  const auto r = b.op(Reshape{.shape = {2, 4, 16, 128}}, {ln});
  auto part = [&](std::int64_t k) { return b.op(Slice{.axes = {3}, .starts = {32 * k}, .ends = {32 * k + 32}, .steps = {}}, {r}); };
  const auto att = b.op(Sdpa{.causal = true, .scale = std::nullopt}, {part(0), part(1), part(2)});
  b.output("y", b.op(Softmax{.axis = -1}, {att}));
  b.output("ln", ln);
  return b;
}

/// A small model for the concurrency test: a few microseconds a run.
Builder small_model(Rng& rng) {
  Builder b;
  const auto x = b.input("x", uniform(rng, {8, 32}, -1, 1));
  const auto w = b.constant(uniform(rng, {32, 32}, -0.2f, 0.2f));
  const auto h = b.op(Gelu{}, {b.op(Add{}, {b.op(MatMul{}, {x, w}), b.constant(uniform(rng, {32}, -1, 1))})});
  const auto ln = b.op(LayerNorm{}, {h});
  const auto r = b.op(Reshape{.shape = {2, 2, 4, 16}}, {ln});
  const auto att = b.op(Sdpa{.causal = true, .scale = std::nullopt}, {r, r, r});
  b.output("y", b.op(Softmax{.axis = -1}, {att}));
  b.output("sum", b.op(ReduceSum{.axes = {0}, .keep_dims = false}, {ln}));
  return b;
}

TensorMap inputs_of(const Builder& b) {
  TensorMap inputs;
  for (const NamedValue& in : b.graph().inputs) inputs.emplace(in.name, b.example(in.value));
  return inputs;
}

bool same_bytes(const TensorMap& a, const TensorMap& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, t] : a) {
    const auto it = b.find(name);
    if (it == b.end() || !t.bitwise_equal(it->second)) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("the thread pool runs every item exactly once, on a valid thread, for any count, grain and size") {
  for (const int size : {1, 2, 3, 8, 70})  // 70 threads: more chunks than one claim word holds
    for (const std::int64_t count : {1, 2, 7, 64, 1000, 100000})
      for (const std::int64_t grain : {1, 3, 5000}) {
        exec::ThreadPool pool(size);
        std::vector<std::atomic<int>> runs(static_cast<std::size_t>(count));
        std::atomic<bool> bad_thread{false};
        for (int repeat = 0; repeat < 3; ++repeat)
          pool.parallel_for(count, grain, [&](std::int64_t begin, std::int64_t end, int thread) {
            if (thread < 0 || thread >= size) bad_thread = true;
            for (std::int64_t i = begin; i < end; ++i) runs[static_cast<std::size_t>(i)]++;
          });
        CAPTURE(size);
        CAPTURE(count);
        CAPTURE(grain);
        CHECK(std::all_of(runs.begin(), runs.end(), [](const std::atomic<int>& r) { return r.load() == 3; }));
        CHECK_FALSE(bad_thread.load());
      }
}

TEST_CASE("elementwise groups of transcendentals are handed to threads in smaller pieces, with the same bytes") {
  // Each op's cost comes from its BlockFor: polynomial functions weigh more than arithmetic.
  CHECK(exec::block_cost(Tanh{}) == exec::kTranscendentalCost);
  CHECK(exec::block_cost(Sigmoid{}) == exec::kTranscendentalCost);
  CHECK(exec::block_cost(Gelu{.approximate = "tanh"}) == exec::kTranscendentalCost);
  CHECK(exec::block_cost(Add{}) == 1);
  CHECK(exec::block_cost(Relu{}) == 1);
  using Group = exec::ElementwiseGroup;
  const std::vector<Group::Leaf> leaves{{ValueId{0}, {16, 256}, {}, 0}, {ValueId{1}, {16, 256}, {}, 0}};
  auto instr = [](const AnyOp& op, std::vector<int> args) {
    return Group::Instr{exec::block_function(op, {TensorType{DType::f32, {16, 256}}, TensorType{DType::f32, {16, 256}}}),
                        std::move(args), std::string(op_name(op)), exec::block_cost(op)};
  };
  const Group add({16, 256}, ValueId{2}, leaves, {instr(Add{}, {0, 1})}, false);
  CHECK(add.min_blocks_per_task() * Group::block == Group::kMinTaskWork);  // 16384 elements: this one is not split
  // An LSTM step's gate maths: sigmoid, sigmoid, tanh, mul, mul, add (cost 27 an element).
  const Group gates({16, 256}, ValueId{2}, leaves,
                    {instr(Sigmoid{}, {0}), instr(Sigmoid{}, {1}), instr(Tanh{}, {0}), instr(Mul{}, {2, 3}),
                     instr(Mul{}, {3, 4}), instr(Add{}, {5, 6})},
                    false);
  CHECK(gates.min_blocks_per_task() == Group::kMinTaskWork / (Group::block * 27));
  CHECK(gates.min_blocks_per_task() * Group::block * 2 <= 16 * 256);  // at least two pieces
  // Split or not, a group's bytes are the same.
  Rng rng(47);
  Builder b;
  const auto g = b.input("g", uniform(rng, {16, 1024}, -3, 3));
  auto gate = [&](std::int64_t k) { return b.op(Slice{.axes = {1}, .starts = {256 * k}, .ends = {256 * k + 256}, .steps = {}}, {g}); };
  const auto c = b.op(Add{}, {b.op(Mul{}, {b.op(Sigmoid{}, {gate(1)}), b.input("c", uniform(rng, {16, 256}, -1, 1))}),
                              b.op(Mul{}, {b.op(Sigmoid{}, {gate(0)}), b.op(Tanh{}, {gate(2)})})});
  b.output("h", b.op(Mul{}, {b.op(Sigmoid{}, {gate(3)}), b.op(Tanh{}, {c})}));
  const Model model(b.graph());
  const TensorMap inputs = inputs_of(b);
  const TensorMap one = Executor(model, {1, true}).run(inputs);
  for (int threads : {2, 3, 4}) CHECK_MESSAGE(same_bytes(Executor(model, {threads, true}).run(inputs), one), "threads = ", threads);
  check_builder(b, "LSTM gates over [16, 256]");
}

TEST_CASE("determinism: a mid-size model is bit-identical for threads 1, 2 and 4 and across 100 runs") {
  Rng rng(31);
  const Builder b = mid_model(rng);
  const TensorMap inputs = inputs_of(b);
  const Model model(b.graph());
  check_graph(b.graph(), inputs, "mid-size model", {{1, true, false}, {2, false, true}});
  const Executor one(model, {1, true});
  const TensorMap baseline = one.run(inputs);
  for (int threads : {2, 4}) {
    const Executor e(model, {threads, true});
    CHECK_MESSAGE(same_bytes(e.run(inputs), baseline), "threads = ", threads, " differs from threads = 1");
  }
  // Other inputs in between must leave no trace.
  const TensorMap other{{"x", uniform(rng, {64, 256}, -3, 3)}};
  const Executor two(model, {2, true});
  int differing = 0;
  for (int run = 0; run < 100; ++run) {
    if (run % 10 == 5) two.run(other);
    differing += !same_bytes(two.run(inputs), baseline);
  }
  CHECK(differing == 0);
}

TEST_CASE("stress: 16 threads x 1000 runs, on one shared Executor and on one Executor each, give a single-thread run's bytes") {
  Rng rng(32);
  const Builder b = small_model(rng);
  const TensorMap inputs = inputs_of(b);
  const Model model(b.graph());
  check_graph(b.graph(), inputs, "small model");
  const TensorMap baseline = Executor(model, {1, true}).run(inputs);
  for (const bool shared : {true, false}) {
    for (int threads : {1, 2}) {
      CAPTURE(shared);
      CAPTURE(threads);
      const Executor shared_executor(model, {threads, true});
      const Tensor& x = inputs.at("x");
      std::atomic<int> mismatches{0}, errors{0};
      std::vector<std::thread> callers;
      for (int t = 0; t < 16; ++t)
        callers.emplace_back([&, t] {
          std::optional<Executor> own;
          if (!shared) own.emplace(model, ExecutorOptions{threads, true});
          const Executor& executor = shared ? shared_executor : *own;
          const Graph& g = model.graph();
          std::vector<Tensor> outs;
          for (const NamedValue& o : g.outputs) outs.emplace_back(g.type(o.value));
          std::vector<OutputBuffer> out_buffers;
          for (Tensor& o : outs) out_buffers.push_back({o.raw(), o.bytes()});
          const InputBuffer in[] = {{x.raw(), x.bytes()}};
          try {
            for (int run = 0; run < 1000; ++run) {
              if ((run + t) % 100 == 0) {  // the named-tensor API too
                mismatches += !same_bytes(executor.run(inputs), baseline);
                continue;
              }
              executor.run(in, out_buffers);
              for (std::size_t o = 0; o < outs.size(); ++o)
                mismatches += !outs[o].bitwise_equal(baseline.at(g.outputs[o].name));
            }
          } catch (...) {
            ++errors;
          }
        });
      for (auto& c : callers) c.join();
      CHECK(mismatches.load() == 0);
      CHECK(errors.load() == 0);
    }
  }
}

TEST_CASE("a run stops between kernels when cancelled or past its deadline; the limit on working memory is checked") {
  Rng rng(33);
  const Builder b = small_model(rng);
  const TensorMap inputs = inputs_of(b);
  const Executor executor(Model(b.graph()), {1, true});
  const TensorMap baseline = executor.run(inputs);
  std::atomic<bool> cancel{true};
  CHECK_THROWS_WITH_AS(executor.run(inputs, {.cancel = &cancel}), doctest::Contains("run cancelled after 0 of"), Error);
  auto code_of = [&](const RunControl& control) -> std::optional<ErrorCode> {
    try {
      executor.run(inputs, control);
    } catch (const Error& e) {
      return e.code();
    }
    return std::nullopt;
  };
  CHECK(code_of({.cancel = &cancel}) == ErrorCode::run_cancelled);
  CHECK(code_of({.deadline = std::chrono::steady_clock::now()}) == ErrorCode::run_deadline);
  cancel = false;
  CHECK(same_bytes(executor.run(inputs, {.cancel = &cancel}), baseline));
  const auto now = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(executor.run(inputs, {.deadline = now}), doctest::Contains("run stopped at its deadline"), Error);
  CHECK(same_bytes(executor.run(inputs, {.deadline = now + std::chrono::hours(1)}), baseline));
  CHECK(same_bytes(executor.run(inputs), baseline));  // a stopped run leaves no trace in the next

  const std::uint64_t needed = executor.working_memory_bytes();
  REQUIRE(needed > 0);
  LoadOptions limits;
  limits.max_memory_bytes = needed;
  CHECK(same_bytes(Executor(Model(b.graph(), limits), {1, true}).run(inputs), baseline));
  limits.max_memory_bytes = needed - 1;
  const std::string expected = "exceeds the limit of " + std::to_string(needed - 1) + " (LoadOptions::max_memory_bytes)";
  CHECK_THROWS_WITH_AS(Executor(Model(b.graph(), limits), {1, true}), doctest::Contains(expected.c_str()), Error);
}

TEST_CASE("working memory past 2^64 bytes is over any limit instead of wrapping") {
  // 40 outputs naming one f32 value of 2^57 elements: 40 * 2^59 bytes does not fit in 64 bits.
  Json doc = {{"format", "rml-graph"}, {"version", 1},
              {"values", {{{"id", 0}, {"dtype", "f32"}, {"shape", {std::int64_t(1) << 57}}},
                          {{"id", 1}, {"dtype", "f32"}, {"shape", {std::int64_t(1) << 57}}}}},
              {"inputs", {{{"name", "x"}, {"value", 0}}}},
              {"nodes", {{{"op", "relu"}, {"inputs", {0}}, {"outputs", {1}}, {"attrs", Json::object()}}}}};
  for (int i = 0; i < 40; ++i) doc["outputs"].push_back({{"name", "y" + std::to_string(i)}, {"value", 1}});
  LoadOptions limits;
  limits.max_tensor_elements = std::int64_t(1) << 57;
  limits.max_memory_bytes = std::numeric_limits<std::uint64_t>::max() - 1;
  const Model model(parse_valid_graph(doc.dump(), ".", limits), limits);
  CHECK_THROWS_WITH_AS(Executor{model}, doctest::Contains("(LoadOptions::max_memory_bytes)"), Error);
}

// ================================================================ errors

namespace {

Builder gather_model() {
  Builder b;
  const auto table = b.input("table", Tensor::from<float>({5, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}));
  const auto idx = b.input("idx", Tensor::from<std::int32_t>({4}, {0, 4, -1, 2}));
  b.output("rows", b.op(Relu{}, {b.op(Gather{.axis = 0}, {table, idx})}));
  b.output("neg", b.op(Neg{}, {table}));
  return b;
}

}  // namespace

TEST_CASE("errors: missing input, wrong type, unknown input, wrong buffer sizes and counts throw rml::Error naming them") {
  const Builder b = gather_model();
  const Model model(b.graph());
  const TensorMap good = inputs_of(b);
  for (const RunConfig& config : all_configs()) {
    CAPTURE(config_string(config));
    const Executor e(model, {config.threads, config.fuse});
    TensorMap missing = good;
    missing.erase("idx");
    CHECK_THROWS_WITH_AS(e.run(missing), Contains("idx"), Error);
    TensorMap wrong = good;
    wrong.at("idx") = Tensor::from<std::int32_t>({3}, {0, 1, 2});
    CHECK_THROWS_WITH_AS(e.run(wrong), Contains("idx"), Error);
    wrong = good;
    wrong.at("table") = Tensor(DType::i32, {5, 3});
    CHECK_THROWS_WITH_AS(e.run(wrong), Contains("table"), Error);
    TensorMap extra = good;
    extra.emplace("bogus", Tensor::scalar(1.0f));
    CHECK_THROWS_WITH_AS(e.run(extra), Contains("bogus"), Error);

    const Tensor& table = good.at("table");
    const Tensor& idx = good.at("idx");
    Tensor rows(DType::f32, {4, 3}), neg(DType::f32, {5, 3});
    const InputBuffer in[] = {{table.raw(), table.bytes()}, {idx.raw(), idx.bytes()}};
    const OutputBuffer out[] = {{rows.raw(), rows.bytes()}, {neg.raw(), neg.bytes()}};
    const InputBuffer short_idx[] = {{table.raw(), table.bytes()}, {idx.raw(), idx.bytes() - 4}};
    CHECK_THROWS_WITH_AS(e.run(short_idx, out), Contains("idx"), Error);
    const InputBuffer long_table[] = {{table.raw(), table.bytes() + 4}, {idx.raw(), idx.bytes()}};
    CHECK_THROWS_WITH_AS(e.run(long_table, out), Contains("table"), Error);
    const OutputBuffer short_out[] = {{rows.raw(), rows.bytes()}, {neg.raw(), 8}};
    CHECK_THROWS_WITH_AS(e.run(in, short_out), Contains("neg"), Error);
    CHECK_THROWS_AS(e.run(std::span(in).first(1), out), Error);
    CHECK_THROWS_AS(e.run(in, std::span(out).first(1)), Error);
    CHECK_THROWS_AS(e.run(std::span<const InputBuffer>{}, std::span<const OutputBuffer>{}), Error);
    // Nothing was damaged: a good run still gives the reference.
    e.run(in, out);
    const TensorMap expected = evaluate(b.graph(), good);
    CHECK(mismatch(rows, expected.at("rows")) == "");
    CHECK(mismatch(neg, expected.at("neg")) == "");
  }
}

TEST_CASE("errors: a gather index out of range at run time throws rml::Error, and the executor still works") {
  const Builder b = gather_model();
  const Model model(b.graph());
  const TensorMap good = inputs_of(b);
  const TensorMap expected = evaluate(b.graph(), good);
  for (const RunConfig& config : all_configs()) {
    CAPTURE(config_string(config));
    const Executor e(model, {config.threads, config.fuse});
    for (std::int32_t bad : {5, -6, 1000, INT32_MIN}) {
      TensorMap inputs = good;
      inputs.at("idx").values<std::int32_t>()[2] = bad;
      CHECK_THROWS_WITH_AS(run_executor(e, inputs, config.zero_copy), Contains("out of range"), Error);
      const TensorMap after = run_executor(e, good, config.zero_copy);
      CHECK(mismatch(after.at("rows"), expected.at("rows")) == "");
      CHECK(mismatch(after.at("neg"), expected.at("neg")) == "");
    }
  }
}

TEST_CASE("errors: ExecutorOptions{.threads = 0} (or negative) throws rml::Error") {
  const Builder b = gather_model();
  const Model model(b.graph());
  CHECK_THROWS_WITH_AS(Executor(model, ExecutorOptions{.threads = 0}), Contains("threads"), Error);
  CHECK_THROWS_AS(Executor(model, ExecutorOptions{.threads = -2}), Error);
  CHECK_THROWS_AS(Executor(model, ExecutorOptions{.threads = 0, .fuse = false}), Error);
  CHECK_NOTHROW(Executor(model, ExecutorOptions{.threads = 1}));
}

// ================================================================ the plan

TEST_CASE("describe() names the fused groups and the arena bytes; fusing uses fewer kernels") {
  Rng rng(41);
  Builder b;
  const auto x = b.input("x", uniform(rng, {16, 32}, -1, 1));
  ValueId v = x;
  for (int i = 0; i < 6; ++i) v = b.op(Tanh{}, {b.op(Mul{}, {v, b.constant(uniform(rng, {32}, -1, 1))})});
  const auto s = b.op(Softmax{.axis = -1}, {v});
  b.output("y", b.op(Relu{}, {b.op(Add{}, {b.op(MatMul{}, {s, b.constant(uniform(rng, {32, 8}, -1, 1))}), b.constant(uniform(rng, {8}, -1, 1))})}));
  const Model model(b.graph());
  const Executor fused(model, {2, true}), unfused(model, {1, false});
  const std::string text = fused.describe();
  CAPTURE(text);
  CHECK(contains(text, "fused groups"));
  CHECK(contains(text, detail::concat("arena ", fused.arena_bytes(), " bytes")));
  CHECK(contains(text, "threads 2"));
  CHECK(contains(text, "epilogue"));
  CHECK(fused.plan().fused_groups >= 2);
  CHECK(text.find(detail::concat(fused.plan().fused_groups, " fused groups")) != std::string::npos);
  CHECK(fused.plan().kernels.size() < unfused.plan().kernels.size());
  CHECK(unfused.plan().kernels.size() == b.graph().nodes.size());
  CHECK(unfused.plan().fused_groups == 0);
  CHECK(contains(unfused.describe(), "unfused"));
  CHECK(contains(unfused.describe(), detail::concat("arena ", unfused.arena_bytes(), " bytes")));
  check_builder(b, "describe model");
}

TEST_CASE("a weight read by many matmuls is packed once per plan, and each product is unchanged") {
  // An unrolled recurrence: every step multiplies by the same constant matrix.
  Rng rng(11);
  Builder b;
  const Tensor w = uniform(rng, {64, 48}, -0.2f, 0.2f), u = uniform(rng, {48, 64}, -0.2f, 0.2f);
  const ValueId weight = b.constant(w, "w"), other = b.constant(u, "u");
  ValueId h = b.input("x", uniform(rng, {3, 64}, -1, 1));
  for (int step = 0; step < 6; ++step) h = b.op(MatMul{}, {b.op(Tanh{}, {b.op(MatMul{}, {h, weight})}), other});
  b.output("y", h);
  for (const bool fuse : {true, false}) {
    CAPTURE(fuse);
    const Executor e(Model(b.graph()), ExecutorOptions{.threads = 1, .fuse = fuse});
    CHECK(e.packed_weight_bytes() == exec::PackedB::bytes(64, 48) + exec::PackedB::bytes(48, 64));
    CHECK(contains(e.describe(), detail::concat("packed weights ", e.packed_weight_bytes(), " bytes")));
  }
  check_builder(b, "an unrolled recurrence sharing its weights");
}

TEST_CASE("arena_bytes() is far below the sum of the intermediate values on a long chain: lifetimes share memory") {
  Rng rng(42);
  Builder b;
  const Shape s{64, 64};
  ValueId v = b.input("x", uniform(rng, s, -1, 1));
  for (int i = 0; i < 24; ++i) v = i % 3 == 2 ? b.op(Softmax{.axis = i % 2 ? 0 : -1}, {v}) : b.op(Tanh{}, {b.op(Add{}, {v, b.constant(uniform(rng, {64}, -1, 1))})});
  b.output("y", v);
  const Graph& g = b.graph();
  std::size_t intermediate = 0;
  for (std::size_t id = 0; id < g.values.size(); ++id) {
    const bool output = std::any_of(g.outputs.begin(), g.outputs.end(), [&](const NamedValue& o) { return o.value == id; });
    if (g.values[id].kind == ValueKind::node_output && !output) intermediate += static_cast<std::size_t>(g.values[id].type.elements()) * 4;
  }
  const Model model(g);
  for (bool fuse : {false, true}) {
    const Executor e(model, {1, fuse});
    CAPTURE(fuse);
    CAPTURE(intermediate);
    CHECK(e.arena_bytes() > 0);
    CHECK(e.arena_bytes() * 4 < intermediate);
    CHECK(e.arena_bytes() <= 3 * 64 * 64 * 4);  // at most three [64, 64] values are ever alive at once
  }
  check_builder(b, "long chain");
}
