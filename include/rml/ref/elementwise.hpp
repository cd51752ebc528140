// Reference kernels of the elementwise ops: each output element from the
// operands' elements NumPy broadcasting pairs with it (broadcast_offsets).
#pragma once

#include <algorithm>

#include "rml/ops/elementwise.hpp"
#include "rml/ref/common.hpp"

namespace rml::ref {

template <UnaryOp Op>
void reference(const Op&, Inputs in, std::span<Tensor> out) {
  visit_dtype(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (Op::accepts == Accepts::any || std::is_same_v<T, float>) {
      auto x = in[0].values<T>();
      std::transform(x.begin(), x.end(), out[0].values<T>().begin(), [](T v) { return Op::apply(v); });
    }
  });
}

template <BinaryOp Op>
void reference(const Op&, Inputs in, std::span<Tensor> out) {
  visit_dtype(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (Op::accepts == Accepts::any || std::is_same_v<T, float>) {
      const auto a = in[0].values<T>(), b = in[1].values<T>();
      const auto at_a = broadcast_offsets(out[0].shape(), in[0].shape()), at_b = broadcast_offsets(out[0].shape(), in[1].shape());
      auto y = out[0].values<T>();
      for (std::size_t i = 0; i < y.size(); ++i) y[i] = T(Op::apply(a[at_a[i]], b[at_b[i]]));
    }
  });
}

template <CompareOp Op>
void reference(const Op&, Inputs in, std::span<Tensor> out) {
  visit_dtype(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    const auto a = in[0].values<T>(), b = in[1].values<T>();
    const auto at_a = broadcast_offsets(out[0].shape(), in[0].shape()), at_b = broadcast_offsets(out[0].shape(), in[1].shape());
    auto y = out[0].values<float>();
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = Op::apply(a[at_a[i]], b[at_b[i]]) ? 1.0f : 0.0f;
  });
}

inline void reference(const Select&, Inputs in, std::span<Tensor> out) {
  const Shape& shape = out[0].shape();
  const auto at_c = broadcast_offsets(shape, in[0].shape()), at_a = broadcast_offsets(shape, in[1].shape()),
             at_b = broadcast_offsets(shape, in[2].shape());
  visit_dtype(in[0].dtype(), [&](auto cond_zero) {
    using C = decltype(cond_zero);
    visit_dtype(in[1].dtype(), [&](auto zero) {
      using T = decltype(zero);
      const auto c = in[0].values<C>();
      const auto a = in[1].values<T>(), b = in[2].values<T>();
      auto y = out[0].values<T>();
      for (std::size_t i = 0; i < y.size(); ++i) y[i] = c[at_c[i]] != C(0) ? a[at_a[i]] : b[at_b[i]];
    });
  });
}

inline void reference(const Cast& op, Inputs in, std::span<Tensor> out) {
  visit_dtype(in[0].dtype(), [&](auto from_zero) {
    using From = decltype(from_zero);
    visit_dtype(op.to, [&](auto to_zero) {
      using To = decltype(to_zero);
      auto x = in[0].values<From>();
      std::transform(x.begin(), x.end(), out[0].values<To>().begin(),
                     [](From v) { return Cast::apply<To>(v); });
    });
  });
}

}  // namespace rml::ref
