// Reference softmax, layer_norm and gelu, computed in double.
#pragma once

#include <cmath>
#include <limits>
#include <numbers>

#include "rml/ops/nn.hpp"
#include "rml/ref/common.hpp"

namespace rml::ref {

inline void reference(const Softmax& op, Inputs in, std::span<Tensor> out) {
  const Shape& shape = in[0].shape();
  const std::size_t axis = normalize_axis(op.axis, shape.size(), "softmax");
  const std::int64_t outer = span_size(shape, 0, axis), dim = shape[axis],
                     inner = span_size(shape, axis + 1, shape.size());
  const float* x = in[0].values<float>().data();
  float* y = out[0].values<float>().data();
  std::vector<double> e(static_cast<std::size_t>(dim));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      const std::int64_t base = o * dim * inner + i;
      double max = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j < dim; ++j) max = std::max(max, double(x[base + j * inner]));
      double sum = 0;
      for (std::int64_t j = 0; j < dim; ++j) sum += e[j] = std::exp(double(x[base + j * inner]) - max);
      for (std::int64_t j = 0; j < dim; ++j) y[base + j * inner] = float(e[j] / sum);
    }
}

inline void reference(const LayerNorm& op, Inputs in, std::span<Tensor> out) {
  const std::int64_t dim = in[0].shape().back();
  const std::int64_t rows = dim == 0 ? 0 : in[0].elements() / dim;
  const float* x = in[0].values<float>().data();
  const float* scale = in.size() > 1 ? in[1].values<float>().data() : nullptr;
  const float* bias = in.size() > 2 ? in[2].values<float>().data() : nullptr;
  float* y = out[0].values<float>().data();
  for (std::int64_t r = 0; r < rows; ++r, x += dim, y += dim) {
    double mean = 0, variance = 0;
    for (std::int64_t j = 0; j < dim; ++j) mean += x[j];
    mean /= double(dim);
    for (std::int64_t j = 0; j < dim; ++j) variance += (x[j] - mean) * (x[j] - mean);
    variance /= double(dim);
    const double inv_std = 1.0 / std::sqrt(variance + op.eps);
    for (std::int64_t j = 0; j < dim; ++j) {
      double v = (x[j] - mean) * inv_std;
      if (scale) v *= scale[j];
      if (bias) v += bias[j];
      y[j] = float(v);
    }
  }
}

inline double gelu_value(double x, bool tanh_form) {
  if (tanh_form) {
    const double inner = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
    return 0.5 * x * (1.0 + std::tanh(inner));
  }
  return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
}

inline void reference(const Gelu& op, Inputs in, std::span<Tensor> out) {
  const bool tanh_form = op.uses_tanh();
  auto x = in[0].values<float>();
  std::transform(x.begin(), x.end(), out[0].values<float>().begin(),
                 [&](float v) { return float(gelu_value(v, tanh_form)); });
}

}  // namespace rml::ref
