// Reference kernels of the reductions and the running sum. Sums accumulate in double.
#pragma once

#include <limits>

#include "rml/ops/reduce.hpp"
#include "rml/ref/common.hpp"

namespace rml::ref {

namespace detail {

/// Folds every element of x into the accumulator of its output position
/// (the index with the reduced axes dropped), then finishes each one.
template <class Acc, class T, class Combine, class Finish>
void reduce_into(const Ints& axes, const Tensor& x, Tensor& out, Acc init, Combine combine,
                 Finish finish) {
  const Ints reduced = normalize_axes(axes, x.rank(), "reduce");
  Shape kept_shape;  // x's shape with reduced axes set to 1
  for (std::size_t d = 0; d < x.rank(); ++d)
    kept_shape.push_back(std::find(reduced.begin(), reduced.end(), std::int64_t(d)) != reduced.end()
                             ? 1 : x.shape()[d]);
  std::vector<Acc> acc(static_cast<std::size_t>(out.elements()), init);
  const auto target = broadcast_offsets(x.shape(), kept_shape);
  const auto values = x.values<T>();
  for (std::size_t i = 0; i < values.size(); ++i) acc[target[i]] = combine(acc[target[i]], values[i]);
  auto y = out.values<T>();
  for (std::size_t i = 0; i < acc.size(); ++i) y[i] = finish(acc[i]);
}

template <class T>
T pick_nan_or(T a, T b, bool want_larger) {
  if (a != a) return a;
  if (b != b) return b;
  return (want_larger ? b > a : b < a) ? b : a;
}

}  // namespace detail

inline void reference(const ReduceSum& op, Inputs in, std::span<Tensor> out) {
  visit_dtype(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    // Integer sums wrap modulo 2^32 like NumPy's int32.
    using Acc = std::conditional_t<std::is_same_v<T, float>, double, std::uint32_t>;
    detail::reduce_into<Acc, T>(op.axes, in[0], out[0], Acc(0),
                                [](Acc a, T v) { return Acc(a + Acc(v)); },
                                [](Acc a) { return static_cast<T>(a); });
  });
}

inline void reference(const ReduceMean& op, Inputs in, std::span<Tensor> out) {
  const double count = out[0].elements() == 0 ? 1.0 : double(in[0].elements()) / double(out[0].elements());
  detail::reduce_into<double, float>(op.axes, in[0], out[0], 0.0,
                                     [](double a, float v) { return a + v; },
                                     [&](double a) { return float(a / count); });
}

template <class Op>
  requires std::same_as<Op, ReduceMax> || std::same_as<Op, ReduceMin>
void reference(const Op& op, Inputs in, std::span<Tensor> out) {
  static constexpr bool larger = std::is_same_v<Op, ReduceMax>;
  visit_dtype(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    using Limits = std::numeric_limits<T>;
    const T init = larger ? (Limits::has_infinity ? -Limits::infinity() : Limits::lowest())
                          : (Limits::has_infinity ? Limits::infinity() : Limits::max());
    detail::reduce_into<T, T>(op.axes, in[0], out[0], init,
                              [](T a, T v) { return detail::pick_nan_or(a, v, larger); },
                              [](T a) { return a; });
  });
}

inline void reference(const CumSum& op, Inputs in, std::span<Tensor> out) {
  const Shape& shape = in[0].shape();
  const std::size_t axis = normalize_axis(op.axis, shape.size(), "cumsum");
  const std::int64_t outer = span_size(shape, 0, axis), dim = shape[axis],
                     inner = span_size(shape, axis + 1, shape.size());
  visit_dtype(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    using Acc = std::conditional_t<std::is_same_v<T, float>, double, std::uint32_t>;  // i32 wraps
    const T* x = in[0].values<T>().data();
    T* y = out[0].values<T>().data();
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) {
        Acc sum = 0;
        for (std::int64_t step = 0; step < dim; ++step) {
          const std::int64_t at = (o * dim + (op.reverse ? dim - 1 - step : step)) * inner + i;
          const Acc before = sum;
          sum = Acc(sum + Acc(x[at]));
          y[at] = static_cast<T>(op.exclusive ? before : sum);
        }
      }
  });
}

}  // namespace rml::ref
