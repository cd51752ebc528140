// Fused neural-network ops: softmax, layer_norm, gelu.
#pragma once

#include <string>
#include <string_view>
#include <tuple>

#include "rml/ops/rules.hpp"

namespace rml {

/// exp(x - max) / sum(exp(x - max)) along `axis`.
struct Softmax {
  static constexpr std::string_view name = "softmax";
  static constexpr std::string_view summary = "exp(x - max) / sum exp(x - max) along `axis`";
  static constexpr std::string_view inputs = "x: f32";
  static constexpr std::string_view shape_rule = "out = x";
  static constexpr Arity arity{1, 1};
  std::int64_t axis = -1;
  static constexpr auto fields() { return std::tuple{optional("axis", &Softmax::axis)}; }
  Types infer(InputTypes in) const {
    require_f32(in[0], 0);
    normalize_axis(axis, in[0].shape.size(), "attribute 'axis'");
    return {in[0]};
  }
};

/// (x - mean) / sqrt(var + eps) over the last axis (biased variance), then
/// optionally * scale and + bias, each of shape [last dim].
struct LayerNorm {
  static constexpr std::string_view name = "layer_norm";
  static constexpr std::string_view summary =
      "(x - mean) / sqrt(var + eps) over the last axis, then * scale + bias";
  static constexpr std::string_view inputs = "x: f32, scale?: f32 [D], bias?: f32 [D]";
  static constexpr std::string_view shape_rule = "out = x; scale and bias are [x.shape[-1]]";
  static constexpr Arity arity{1, 3};
  double eps = 1e-5;
  static constexpr auto fields() { return std::tuple{optional("eps", &LayerNorm::eps)}; }
  Types infer(InputTypes in) const {
    for (std::size_t i = 0; i < in.size(); ++i) require_f32(in[i], i);
    require_min_rank(in[0], 1, 0);
    if (!(eps >= 0)) fail(ErrorCode::invalid_attribute, "attribute 'eps' must be non-negative, got ", eps);
    for (std::size_t i = 1; i < in.size(); ++i)
      if (in[i].shape != Shape{in[0].shape.back()})
        fail(ErrorCode::invalid_shape, "input ", i, " must have shape [", in[0].shape.back(), "], got ",
             to_string(in[i].shape));
    return {in[0]};
  }
};

/// x * Phi(x) exactly ("none") or with the tanh approximation ("tanh").
struct Gelu {
  static constexpr std::string_view name = "gelu";
  static constexpr std::string_view summary =
      "none: 0.5x(1 + erf(x/sqrt2)); tanh: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))";
  static constexpr std::string_view inputs = "x: f32";
  static constexpr std::string_view shape_rule = "out = x";
  static constexpr Arity arity{1, 1};
  static constexpr bool elementwise = true;
  std::string approximate = "none";
  static constexpr auto fields() { return std::tuple{optional("approximate", &Gelu::approximate)}; }
  bool uses_tanh() const {
    if (approximate == "none") return false;
    if (approximate == "tanh") return true;
    fail(ErrorCode::invalid_attribute, "attribute 'approximate' must be \"none\" or \"tanh\", got \"", approximate, "\"");
  }
  Types infer(InputTypes in) const {
    require_f32(in[0], 0);
    uses_tanh();
    return {in[0]};
  }
};

}  // namespace rml
