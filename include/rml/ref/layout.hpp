// Reference kernels of the layout ops.
#pragma once

#include <cstring>

#include "rml/ops/layout.hpp"
#include "rml/ref/common.hpp"

namespace rml::ref {

inline void reference(const Reshape&, Inputs in, std::span<Tensor> out) {
  if (in[0].bytes() != 0) std::memcpy(out[0].raw(), in[0].raw(), in[0].bytes());
}

/// Output axis d walks input axis perm[d].
inline void reference(const Transpose& op, Inputs in, std::span<Tensor> out) {
  const Shape strides = contiguous_strides(in[0].shape());
  visit_dtype(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* x = in[0].values<T>().data();
    T* y = out[0].values<T>().data();
    for_each_index(out[0].shape(), [&](const Shape& index) {
      std::int64_t offset = 0;
      for (std::size_t d = 0; d < index.size(); ++d) offset += index[d] * strides[static_cast<std::size_t>(op.perm[d])];
      *y++ = x[offset];
    });
  });
}

inline void reference(const BroadcastTo&, Inputs in, std::span<Tensor> out) {
  const auto at = broadcast_offsets(out[0].shape(), in[0].shape());
  visit_dtype(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    const auto x = in[0].values<T>();
    auto y = out[0].values<T>();
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = x[at[i]];
  });
}

inline void reference(const Slice& op, Inputs in, std::span<Tensor> out) {
  const auto ranges = op.ranges(in[0].shape());
  const Shape strides = contiguous_strides(in[0].shape());
  visit_dtype(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    auto x = in[0].values<T>();
    T* y = out[0].values<T>().data();
    for_each_index(out[0].shape(), [&](const Shape& index) {
      std::int64_t offset = 0;
      for (std::size_t d = 0; d < index.size(); ++d)
        offset += (ranges[d].start + index[d] * ranges[d].step) * strides[d];
      *y++ = x[offset];
    });
  });
}

inline void reference(const Concat& op, Inputs in, std::span<Tensor> out) {
  const std::size_t axis = normalize_axis(op.axis, out[0].rank(), "concat");
  const std::int64_t outer = span_size(out[0].shape(), 0, axis);
  const std::size_t element = dtype_size(out[0].dtype());
  const std::size_t out_row = static_cast<std::size_t>(span_size(out[0].shape(), axis, out[0].rank())) * element;
  std::size_t column = 0;  // byte offset of this input's block within an output row
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::size_t row = static_cast<std::size_t>(span_size(in[i].shape(), axis, in[i].rank())) * element;
    for (std::int64_t o = 0; o < outer; ++o)
      if (row) std::memcpy(out[0].raw() + o * out_row + column, in[i].raw() + o * row, row);
    column += row;
  }
}

inline void reference(const Pad& op, Inputs in, std::span<Tensor> out) {
  const Shape strides = contiguous_strides(out[0].shape());
  visit_dtype(in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    auto y = out[0].values<T>();
    std::fill(y.begin(), y.end(), static_cast<T>(op.value));
    const T* x = in[0].values<T>().data();
    for_each_index(in[0].shape(), [&](const Shape& index) {
      std::int64_t offset = 0;
      for (std::size_t d = 0; d < index.size(); ++d) offset += (index[d] + op.pads[d]) * strides[d];
      y[offset] = *x++;
    });
  });
}

}  // namespace rml::ref
