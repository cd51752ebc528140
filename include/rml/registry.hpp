// The op list, and everything generated from it: name lookup, the op
// variant (rml/op_variant.hpp), shape inference with arity checks, equality and hashing.
#pragma once

#include <algorithm>
#include <array>
#include <concepts>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "rml/ops/attention.hpp"
#include "rml/ops/conv_pool.hpp"
#include "rml/ops/elementwise.hpp"
#include "rml/ops/index.hpp"
#include "rml/ops/layout.hpp"
#include "rml/ops/linalg.hpp"
#include "rml/ops/nn.hpp"
#include "rml/ops/reduce.hpp"
#include "rml/op_variant.hpp"

namespace rml {

/// What every op struct must provide. The registry checks each op against
/// it one piece at a time, so a missing piece is a compile error naming it.
template <class Op>
concept OpTraits = requires(const Op& op, InputTypes in) {
  { Op::name } -> std::convertible_to<std::string_view>;
  { Op::summary } -> std::convertible_to<std::string_view>;
  { Op::inputs } -> std::convertible_to<std::string_view>;
  { Op::shape_rule } -> std::convertible_to<std::string_view>;
  { Op::arity } -> std::convertible_to<Arity>;
  Op::fields();
  { op.infer(in) } -> std::same_as<Types>;
};

template <class Op>
constexpr bool check_op_traits() {
  static_assert(requires { Op::name; }, "op struct lacks `static constexpr std::string_view name`");
  static_assert(requires { Op::summary; }, "op struct lacks `summary` (one line of semantics)");
  static_assert(requires { Op::inputs; }, "op struct lacks `inputs` (documents its operands)");
  static_assert(requires { Op::shape_rule; }, "op struct lacks `shape_rule` (documents it)");
  static_assert(requires { Op::arity; }, "op struct lacks `static constexpr Arity arity`");
  static_assert(requires { Op::fields(); }, "op struct lacks `static constexpr auto fields()`");
  static_assert(requires(const Op& op, InputTypes in) { { op.infer(in) } -> std::same_as<Types>; },
                "op struct lacks `Types infer(InputTypes) const` (its shape rule)");
  return true;
}

/// Properties passes query instead of listing ops.
template <class Op>
constexpr bool is_elementwise = requires { requires Op::elementwise; };
template <class Op>
constexpr bool is_commutative = requires { requires Op::commutative; };
/// An op whose evaluation checks its inputs' values (gather's indices): its
/// kernels run even when every output is empty, bounding their own loops.
/// Other ops with only empty outputs run no kernel at all.
template <class Op>
constexpr bool checks_input_values = requires { requires Op::checks_input_values; };

template <class... Ops>
struct OpList {
  static_assert((check_op_traits<Ops>() && ...));

  using Variant = OpVariant<Ops...>;
  static constexpr std::size_t size = sizeof...(Ops);
  static constexpr std::array<std::string_view, size> names{Ops::name...};
  // Per-op constants as tables, so querying one is an index, not a visit.
  static constexpr std::array<Arity, size> arities{Ops::arity...};
  static constexpr std::array<bool, size> elementwise{is_elementwise<Ops>...};
  static constexpr std::array<bool, size> commutative{is_commutative<Ops>...};
  static constexpr std::array<bool, size> checks_values{checks_input_values<Ops>...};

  static constexpr bool names_unique() {
    for (std::size_t i = 0; i < size; ++i)
      for (std::size_t j = i + 1; j < size; ++j)
        if (names[i] == names[j]) return false;
    return true;
  }
  static_assert(names_unique(), "two ops in the OpList share a name");

  static constexpr std::optional<std::size_t> find(std::string_view name) {
    for (std::size_t i = 0; i < size; ++i)
      if (names[i] == name) return i;
    return std::nullopt;
  }

  /// The op with this name, its attributes at their defaults.
  static Variant make(std::string_view name) {
    static constexpr std::array<Variant (*)(), size> makers{
        []() -> Variant { return Variant(std::in_place_type<Ops>); }...};
    const auto index = find(name);
    if (!index) throw ExportError(ErrorCode::unknown_op, detail::concat("unknown op '", name, "'"));
    return makers[*index]();
  }

  /// Calls fn(std::type_identity<Op>{}) for every op, in list order.
  template <class Fn>
  static constexpr void for_each(Fn&& fn) {
    (fn(std::type_identity<Ops>{}), ...);
  }
};

/// Every op rml-graph has. Adding an op: write its struct, its reference
/// kernel in rml/ref/, and list it here.
using Registry = OpList<
    // elementwise
    Neg, Abs, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Relu, Erf, Sin, Cos, Reciprocal,  //
    Add, Sub, Mul, Div, Pow, Maximum, Minimum,                                        //
    Eq, Ne, Lt, Le, Gt, Ge, Select, Cast,                                             //
    // layout and indexing
    Reshape, Transpose, BroadcastTo, Slice, Concat, Pad, Gather, TopK,  //
    // reductions and linear algebra
    ReduceSum, ReduceMean, ReduceMax, ReduceMin, CumSum, MatMul, Conv2d, MaxPool2d, AvgPool2d,  //
    // fused nn ops
    Softmax, LayerNorm, Gelu, Sdpa>;

using AnyOp = Registry::Variant;

/// std::visit for the op variant: calls fn with the op `op` holds, through one
/// flat table of function pointers (OpVariant::visit). libstdc++'s std::visit
/// generated its table by recursive instantiation at every call site, which
/// took a third of a consumer's compile time with 54 ops.
template <class Fn, class Op>
  requires std::same_as<std::remove_cvref_t<Op>, AnyOp>
decltype(auto) visit_op(Fn&& fn, Op&& op) {
  return AnyOp::visit(fn, op);
}

/// `op` as an AnyOp, constructed in place.
template <class Op>
AnyOp as_any_op(Op&& op) {
  return AnyOp(std::in_place_type<std::remove_cvref_t<Op>>, std::forward<Op>(op));
}

inline std::string_view op_name(const AnyOp& op) { return Registry::names[op.index()]; }

inline Arity op_arity(const AnyOp& op) { return Registry::arities[op.index()]; }

inline bool is_elementwise_op(const AnyOp& op) { return Registry::elementwise[op.index()]; }

inline bool is_commutative_op(const AnyOp& op) { return Registry::commutative[op.index()]; }

/// True when a node of `op` with outputs of these types runs no kernel:
/// every output is empty and the op checks no input values.
inline bool nothing_to_compute(const AnyOp& op, const Types& outputs) {
  return !Registry::checks_values[op.index()] &&
         std::all_of(outputs.begin(), outputs.end(), [](const TensorType& t) { return t.elements() == 0; });
}

/// Output types of `op` applied to inputs of these types: the arity check,
/// then the op's shape rule. Errors name the op.
inline Types infer_types(const AnyOp& op, InputTypes inputs) {
  const Arity arity = op_arity(op);
  if (inputs.size() < arity.min || inputs.size() > arity.max) {
    if (arity.max == Arity::variadic)
      fail(ErrorCode::wrong_arity, "op '", op_name(op), "' takes at least ", arity.min, " inputs, got ", inputs.size());
    if (arity.min == arity.max)
      fail(ErrorCode::wrong_arity, "op '", op_name(op), "' takes ", arity.min, " inputs, got ", inputs.size());
    fail(ErrorCode::wrong_arity, "op '", op_name(op), "' takes ", arity.min, " to ", arity.max, " inputs, got ",
         inputs.size());
  }
  try {
    return visit_op([&](const auto& o) { return o.infer(inputs); }, op);
  } catch (...) {
    rethrow_with_context("op '", op_name(op), "'");
  }
}

/// Same op with equal attributes.
inline bool same_op(const AnyOp& a, const AnyOp& b) {
  if (a.index() != b.index()) return false;
  return visit_op(
      [&](const auto& x) {
        return attributes_equal(x, get<std::decay_t<decltype(x)>>(b));
      },
      a);
}

inline std::size_t hash_op(const AnyOp& op) {
  return visit_op([](const auto& o) { return attributes_hash(o); }, op);
}

template <class Op>
bool holds(const AnyOp& op) {
  return op.index() == AnyOp::index_of<Op>;
}

}  // namespace rml
