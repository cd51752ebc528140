// What the reference kernels share: input access and index helpers for
// broadcasting and N-d iteration (plain loops: obviously correct, and cheap
// to compile).
#pragma once

#include <span>
#include <vector>

#include "rml/core/tensor.hpp"

namespace rml::ref {

/// A kernel's inputs: tensors owned elsewhere.
class Inputs {
 public:
  explicit Inputs(std::span<const Tensor* const> tensors) : tensors_(tensors) {}
  const Tensor& operator[](std::size_t i) const { return *tensors_[i]; }
  std::size_t size() const { return tensors_.size(); }

 private:
  std::span<const Tensor* const> tensors_;
};

/// Calls fn(index) for every multi-index of `shape` in row-major order.
template <class Fn>
void for_each_index(const Shape& shape, Fn&& fn) {
  if (element_count(shape) == 0) return;
  Shape index(shape.size(), 0);
  while (true) {
    fn(std::as_const(index));
    std::size_t axis = shape.size();
    while (axis > 0) {
      --axis;
      if (++index[axis] < shape[axis]) break;
      index[axis] = 0;
      if (axis == 0) return;
    }
    if (shape.empty()) return;
  }
}

/// For each row-major position of `out_shape`, the flat offset of the element
/// an operand of `operand_shape` contributes under NumPy broadcasting.
inline std::vector<std::int64_t> broadcast_offsets(const Shape& out_shape, const Shape& operand_shape) {
  const Shape strides = contiguous_strides(operand_shape);
  const std::size_t lead = out_shape.size() - operand_shape.size();
  std::vector<std::int64_t> offsets;
  offsets.reserve(static_cast<std::size_t>(element_count(out_shape)));
  for_each_index(out_shape, [&](const Shape& index) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < operand_shape.size(); ++d)
      if (operand_shape[d] != 1) offset += index[lead + d] * strides[d];
    offsets.push_back(offset);
  });
  return offsets;
}

/// Product of shape[begin, end).
inline std::int64_t span_size(const Shape& shape, std::size_t begin, std::size_t end) {
  std::int64_t n = 1;
  for (std::size_t d = begin; d < end; ++d) n *= shape[d];
  return n;
}

}  // namespace rml::ref
