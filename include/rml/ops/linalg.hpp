// Matrix product with NumPy matmul semantics.
#pragma once

#include <string_view>
#include <tuple>

#include "rml/ops/rules.hpp"

namespace rml {

/// NumPy matmul: the last two axes multiply, leading (batch) axes broadcast;
/// a 1-D operand is a row (left) or column (right) vector whose axis is dropped.
struct MatMul {
  static constexpr std::string_view name = "matmul";
  static constexpr std::string_view summary = "a @ b, batched, batch axes broadcast (NumPy matmul)";
  static constexpr std::string_view inputs = "a: T, b: T (T = f32|i32)";
  static constexpr std::string_view shape_rule =
      "[..., m, k] @ [..., k, n] -> [broadcast(...), m, n]; 1-D operands promoted then dropped";
  static constexpr Arity arity{2, 2};
  static constexpr auto fields() { return std::tuple{}; }
  Types infer(InputTypes in) const {
    require_same_dtype(in);
    require_min_rank(in[0], 1, 0);
    require_min_rank(in[1], 1, 1);
    Shape a = in[0].shape, b = in[1].shape;
    const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
    if (a_vector) a.insert(a.begin(), 1);
    if (b_vector) b.push_back(1);
    const std::int64_t m = a[a.size() - 2], k = a.back(), k2 = b[b.size() - 2], n = b.back();
    if (k != k2)
      fail(ErrorCode::invalid_shape, "contracted dimensions differ: ", to_string(in[0].shape), " @ ",
           to_string(in[1].shape));
    Shape out = broadcast_shapes(std::span(a).first(a.size() - 2),
                                 std::span(b).first(b.size() - 2), "batch dimensions");
    if (!a_vector) out.push_back(m);
    if (!b_vector) out.push_back(n);
    return {{in[0].dtype, out}};
  }
};

}  // namespace rml
