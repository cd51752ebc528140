// Tensor: an owning, 64-byte aligned, row-major buffer with a dtype and a shape.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "rml/core/dtype.hpp"
#include "rml/core/shape.hpp"

namespace rml {

/// The dtype and shape of a value; what every shape rule computes.
struct TensorType {
  DType dtype = DType::f32;
  Shape shape;

  std::int64_t elements() const { return element_count(shape); }
  friend bool operator==(const TensorType&, const TensorType&) = default;
};

inline std::string to_string(const TensorType& type) {
  return std::string(dtype_name(type.dtype)) + to_string(type.shape);
}

/// Owns its elements (deep copy on copy). Data is 64-byte aligned so kernels
/// can use aligned vector loads.
class Tensor {
 public:
  static constexpr std::size_t alignment = 64;

  /// A rank-0 f32 zero.
  Tensor() : Tensor(DType::f32, {}) {}
  /// Zero-filled tensor of the given type.
  Tensor(DType dtype, Shape shape) : type_{dtype, std::move(shape)} {
    count_ = element_count(type_.shape, "tensor");
    allocate();
    if (bytes() != 0) std::memset(data_.get(), 0, bytes());
  }
  explicit Tensor(const TensorType& type) : Tensor(type.dtype, type.shape) {}

  template <class T>
  static Tensor from(Shape shape, const std::vector<T>& values) {
    Tensor t(dtype_of<T>(), std::move(shape));
    if (static_cast<std::int64_t>(values.size()) != t.elements())
      fail(ErrorCode::invalid_shape, "tensor of shape ", to_string(t.shape()), " needs ", t.elements(), " values, got ",
           values.size());
    std::copy(values.begin(), values.end(), t.values<T>().begin());
    return t;
  }
  /// A rank-0 tensor.
  template <class T>
  static Tensor scalar(T value) { return from<T>({}, {value}); }

  Tensor(const Tensor& other) : type_(other.type_), count_(other.count_) {
    allocate();
    if (bytes() != 0) std::memcpy(data_.get(), other.data_.get(), bytes());
  }
  Tensor& operator=(const Tensor& other) {
    if (this != &other) *this = Tensor(other);
    return *this;
  }
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  const TensorType& type() const { return type_; }
  std::size_t rank() const { return type_.shape.size(); }
  std::int64_t elements() const { return count_; }
  std::size_t bytes() const { return static_cast<std::size_t>(count_) * dtype_size(type_.dtype); }

  std::byte* raw() { return data_.get(); }
  const std::byte* raw() const { return data_.get(); }

  template <class T>
  std::span<T> values() {
    check_dtype<T>();
    return {reinterpret_cast<T*>(data_.get()), static_cast<std::size_t>(count_)};
  }
  template <class T>
  std::span<const T> values() const {
    check_dtype<T>();
    return {reinterpret_cast<const T*>(data_.get()), static_cast<std::size_t>(count_)};
  }

  /// Same dtype, shape and bytes (so NaN payloads and -0 count, as they should
  /// for "bit for bit").
  bool bitwise_equal(const Tensor& other) const {
    return type_ == other.type_ &&
           (bytes() == 0 || std::memcmp(data_.get(), other.data_.get(), bytes()) == 0);
  }

  /// Same elements viewed with another shape of the same element count.
  Tensor reshaped(Shape shape) && {
    if (element_count(shape) != count_)
      fail(ErrorCode::invalid_shape, "cannot reshape ", to_string(type_.shape), " to ", to_string(shape));
    type_.shape = std::move(shape);
    return std::move(*this);
  }

 private:
  struct AlignedDelete {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{alignment}); }
  };

  void allocate() {
    const std::size_t n = std::max<std::size_t>(bytes(), 1);
    data_.reset(static_cast<std::byte*>(::operator new[](n, std::align_val_t{alignment})));
  }

  template <class T>
  void check_dtype() const {
    if (dtype_of<T>() != type_.dtype)
      fail(ErrorCode::dtype_mismatch, "tensor holds ", dtype_name(type_.dtype), ", read as ", dtype_name(dtype_of<T>()));
  }

  TensorType type_{DType::f32, {}};
  std::int64_t count_ = 1;
  std::unique_ptr<std::byte[], AlignedDelete> data_ = nullptr;
};

/// Tensors by name: a run's inputs and outputs.
using TensorMap = std::map<std::string, Tensor>;

}  // namespace rml
