// Reductions over a set of axes (sum, mean, max, min) and the running sum along one axis.
#pragma once

#include <algorithm>
#include <limits>
#include <string_view>
#include <tuple>

#include "rml/ops/rules.hpp"

namespace rml {

/// Reduces `axes` (NumPy axis=tuple semantics: an empty list reduces nothing);
/// keep_dims leaves them as size 1. `Kind` supplies the name and dtype rule;
/// the attributes live here so `ReduceSum{.axes = {1}}` reads naturally.
template <class Kind>
struct Reduce {
  static constexpr std::string_view name = Kind::name, summary = Kind::summary;
  static constexpr Arity arity{1, 1};
  static constexpr Accepts accepts = Kind::accepts;
  static constexpr std::string_view inputs = accepts == Accepts::f32 ? "x: f32" : "x: f32|i32";
  static constexpr std::string_view shape_rule =
      "out = x without `axes` (kept as 1 with keep_dims)";
  Ints axes;
  bool keep_dims = false;
  static constexpr auto fields() {
    return std::tuple{required("axes", &Reduce::axes), optional("keep_dims", &Reduce::keep_dims)};
  }
  Types infer(InputTypes in) const {
    require_accepted(accepts, in[0], 0);
    const Shape& x = in[0].shape;
    const Ints reduced = normalize_axes(axes, x.size(), "attribute 'axes'");
    Shape out;
    for (std::size_t d = 0; d < x.size(); ++d) {
      const bool is_reduced = std::find(reduced.begin(), reduced.end(), std::int64_t(d)) != reduced.end();
      if (is_reduced && Kind::needs_identity && x[d] == 0)
        fail(ErrorCode::invalid_shape, "cannot reduce the empty axis ", d, " of ", to_string(x), ": ", name, " has no identity");
      if (!is_reduced) out.push_back(x[d]);
      else if (keep_dims) out.push_back(1);
    }
    return {{in[0].dtype, out}};
  }
};

struct SumKind {
  static constexpr std::string_view name = "reduce_sum", summary = "sum over `axes` (0 over empty axes)";
  static constexpr Accepts accepts = Accepts::any;
  static constexpr bool needs_identity = false;
};
struct MeanKind {
  static constexpr std::string_view name = "reduce_mean", summary = "mean over `axes` (NaN over empty axes)";
  static constexpr Accepts accepts = Accepts::f32;
  static constexpr bool needs_identity = false;
};
struct MaxKind {
  static constexpr std::string_view name = "reduce_max", summary = "maximum over `axes`; NaN propagates";
  static constexpr Accepts accepts = Accepts::any;
  static constexpr bool needs_identity = true;
};
struct MinKind {
  static constexpr std::string_view name = "reduce_min", summary = "minimum over `axes`; NaN propagates";
  static constexpr Accepts accepts = Accepts::any;
  static constexpr bool needs_identity = true;
};

using ReduceSum = Reduce<SumKind>;
using ReduceMean = Reduce<MeanKind>;
using ReduceMax = Reduce<MaxKind>;
using ReduceMin = Reduce<MinKind>;

/// Running sums along `axis`: out[i] = x[0] + ... + x[i] in index order (from the last
/// element with `reverse`; without x[i] itself when `exclusive`). f32 sums are carried in
/// double and each output rounded once, so an output does not depend on how long the
/// axis is; i32 sums wrap modulo 2^32.
struct CumSum {
  static constexpr std::string_view name = "cumsum";
  static constexpr std::string_view summary =
      "running sum along `axis` (from the end with reverse; exclusive leaves out the element itself)";
  static constexpr std::string_view inputs = "x: f32|i32";
  static constexpr std::string_view shape_rule = "out = x";
  static constexpr Arity arity{1, 1};
  std::int64_t axis = 0;
  bool exclusive = false;
  bool reverse = false;
  static constexpr auto fields() {
    return std::tuple{required("axis", &CumSum::axis), optional("exclusive", &CumSum::exclusive),
                      optional("reverse", &CumSum::reverse)};
  }
  Types infer(InputTypes in) const {
    require_min_rank(in[0], 1, 0);
    normalize_axis(axis, in[0].shape.size(), "attribute 'axis'");
    return {in[0]};
  }
};

}  // namespace rml
