// Reference kernels of the elementwise ops, broadcasting through xtensor.
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
      auto result = view<T>(out[0]);
      xt::noalias(result) = xt::make_lambda_xfunction([](T a, T b) { return T(Op::apply(a, b)); },
                                                      view<T>(in[0]), view<T>(in[1]));
    }
  });
}

template <CompareOp Op>
void reference(const Op&, Inputs in, std::span<Tensor> out) {
  visit_dtype(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    auto result = view<float>(out[0]);
    xt::noalias(result) = xt::make_lambda_xfunction(
        [](T a, T b) { return Op::apply(a, b) ? 1.0f : 0.0f; }, view<T>(in[0]), view<T>(in[1]));
  });
}

inline void reference(const Select&, Inputs in, std::span<Tensor> out) {
  visit_dtype(in[0].dtype(), [&](auto cond_zero) {
    using C = decltype(cond_zero);
    visit_dtype(in[1].dtype(), [&](auto zero) {
      using T = decltype(zero);
      auto result = view<T>(out[0]);
      xt::noalias(result) = xt::make_lambda_xfunction(
          [](C c, T a, T b) { return c != C(0) ? a : b; }, view<C>(in[0]), view<T>(in[1]), view<T>(in[2]));
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
