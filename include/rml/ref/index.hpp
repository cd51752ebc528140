// Reference kernels of gather and top_k.
#pragma once

#include <algorithm>
#include <cstring>
#include <numeric>

#include "rml/ops/index.hpp"
#include "rml/ref/common.hpp"

namespace rml::ref {

inline void reference(const Gather& op, Inputs in, std::span<Tensor> out) {
  const Tensor& data = in[0];
  const std::size_t axis = normalize_axis(op.axis, data.rank(), "gather");
  const std::int64_t dim = data.shape()[axis];
  const auto indices = in[1].values<std::int32_t>();
  // Every index is checked, even when the output is empty.
  for (std::size_t i = 0; i < indices.size(); ++i)
    if (indices[i] < -dim || indices[i] >= dim)
      fail(ErrorCode::index_out_of_range, "gather: index ", indices[i], " at position ", i, " is out of range for axis ", op.axis,
           " of size ", dim);
  if (out[0].elements() == 0) return;  // else `outer` could be 2^60 rows of nothing (or overflow)
  const std::int64_t outer = span_size(data.shape(), 0, axis);
  const std::size_t block = static_cast<std::size_t>(span_size(data.shape(), axis + 1, data.rank())) *
                            dtype_size(data.dtype());
  std::byte* y = out[0].raw();
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < indices.size(); ++i) {
      const std::int64_t index = indices[i] < 0 ? indices[i] + dim : indices[i];
      if (block) std::memcpy(y, data.raw() + (o * dim + index) * block, block);
      y += block;
    }
}

inline void reference(const TopK& op, Inputs in, std::span<Tensor> out) {
  const std::int64_t dim = in[0].shape().back();
  const std::int64_t rows = dim == 0 ? 0 : in[0].elements() / dim;
  visit_dtype(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = in[0].values<T>().data();
    T* values = out[0].values<T>().data();
    std::int32_t* indices = out[1].values<std::int32_t>().data();
    std::vector<std::int32_t> order(static_cast<std::size_t>(dim));
    // "a before b": a larger, NaN larger than any number; equal keeps index order.
    auto before = [](T a, T b) { return (a != a && b == b) || a > b; };
    for (std::int64_t r = 0; r < rows; ++r, x += dim) {
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](std::int32_t a, std::int32_t b) { return before(x[a], x[b]); });
      for (std::int64_t j = 0; j < op.k; ++j) {
        *values++ = x[order[j]];
        *indices++ = order[j];
      }
    }
  });
}

}  // namespace rml::ref
