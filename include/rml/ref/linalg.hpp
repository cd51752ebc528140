// Reference matmul: plain loops, batch axes broadcast, double accumulation.
#pragma once

#include "rml/ops/linalg.hpp"
#include "rml/ref/common.hpp"

namespace rml::ref {

inline void reference(const MatMul&, Inputs in, std::span<Tensor> out) {
  Shape a = in[0].shape(), b = in[1].shape();
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const std::int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  const Shape a_batch(a.begin(), a.end() - 2), b_batch(b.begin(), b.end() - 2);
  const Shape batch = broadcast_shapes(a_batch, b_batch, "matmul");
  const auto a_offsets = broadcast_offsets(batch, a_batch);
  const auto b_offsets = broadcast_offsets(batch, b_batch);
  visit_dtype(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    using Acc = std::conditional_t<std::is_same_v<T, float>, double, std::uint32_t>;
    const T* x = in[0].values<T>().data();
    const T* w = in[1].values<T>().data();
    T* y = out[0].values<T>().data();
    for (std::size_t bi = 0; bi < a_offsets.size(); ++bi) {
      const T* xa = x + a_offsets[bi] * m * k;
      const T* wb = w + b_offsets[bi] * k * n;
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
          Acc sum = 0;
          for (std::int64_t p = 0; p < k; ++p) sum += Acc(xa[i * k + p]) * Acc(wb[p * n + j]);
          *y++ = static_cast<T>(sum);
        }
    }
  });
}

}  // namespace rml::ref
