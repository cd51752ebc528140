// Pattern matching over a Rewriter's graph, generated from the op registry:
// `op<Div>(op<ReduceSum>(any(x)), scalar(n))` matches a value computed by a
// div node whose first input is a reduce_sum of anything (captured in x) and
// whose second is a constant with one repeated value (captured in n). A
// pattern is a callable `bool(const Rewriter&, ValueId)`; captures are
// references the caller owns. Commutative binary ops (the registry's
// `commutative` flag) match their operands in either order.
#pragma once

#include <cmath>
#include <tuple>
#include <utility>

#include "rml/passes/rewriter.hpp"

namespace rml::passes {

/// Any value, captured.
inline auto any(ValueId& out) {
  return [&out](const Rewriter&, ValueId v) {
    out = v;
    return true;
  };
}

/// The value captured earlier (a variable used twice in the pattern).
inline auto same(const ValueId& bound) {
  return [&bound](const Rewriter&, ValueId v) { return v == bound; };
}

/// A constant, captured.
inline auto constant(ValueId& out) {
  return [&out](const Rewriter& rw, ValueId v) {
    if (!rw.is_constant(v)) return false;
    out = v;
    return true;
  };
}

/// The one value every element of an f32 constant holds, if there is one.
inline std::optional<float> splat_value(const Rewriter& rw, ValueId v) {
  if (!rw.is_constant(v) || rw.type(v).dtype != DType::f32 || rw.data(v).elements() == 0) return std::nullopt;
  const auto values = rw.data(v).values<float>();
  for (float x : values)
    if (std::bit_cast<std::uint32_t>(x) != std::bit_cast<std::uint32_t>(values[0])) return std::nullopt;
  return values[0];
}

/// An f32 constant with one repeated value, captured.
inline auto scalar(float& out) {
  return [&out](const Rewriter& rw, ValueId v) {
    const auto value = splat_value(rw, v);
    if (value) out = *value;
    return value.has_value();
  };
}

/// An f32 constant whose repeated value is `expected` to within `relative` (an
/// exporter may round a literal such as sqrt(2/pi) differently).
inline auto scalar_near(double expected, double relative = 1e-6) {
  return [=](const Rewriter& rw, ValueId v) {
    const auto value = splat_value(rw, v);
    return value && std::abs(double(*value) - expected) <= relative * std::abs(expected);
  };
}

/// `pattern`, on a value with exactly one reader (so rewriting it changes nothing else).
template <class Pattern>
auto single_use(Pattern pattern) {
  return [pattern](const Rewriter& rw, ValueId v) { return rw.single_use(v) && pattern(rw, v); };
}

/// A value computed (as output 0) by an `Op` node whose inputs match `Subs`.
template <class Op, class... Subs>
class OpPattern {
 public:
  explicit OpPattern(Subs... subs) : subs_(std::move(subs)...) {}

  /// Also captures the op (its attributes) and the node's index.
  OpPattern& bind(const Op*& op) {
    op_out_ = &op;
    return *this;
  }
  OpPattern& bind_node(std::size_t& node) {
    node_out_ = &node;
    return *this;
  }

  bool operator()(const Rewriter& rw, ValueId v) const {
    const Node* node = rw.producer(v);
    if (!node || node->outputs.front() != v) return false;
    const Op* op = get_if<Op>(&node->op);
    if (!op || node->inputs.size() != sizeof...(Subs)) return false;
    bool matched = inputs_match(rw, node->inputs, std::index_sequence_for<Subs...>{}, false);
    if constexpr (is_commutative<Op> && sizeof...(Subs) == 2)
      if (!matched) matched = inputs_match(rw, node->inputs, std::index_sequence_for<Subs...>{}, true);
    if (!matched) return false;
    if (op_out_) *op_out_ = op;
    if (node_out_) *node_out_ = static_cast<std::size_t>(rw.producer_index(v));
    return true;
  }

 private:
  template <std::size_t... I>
  bool inputs_match(const Rewriter& rw, const std::vector<ValueId>& in, std::index_sequence<I...>, bool swapped) const {
    auto slot = [&](std::size_t i) { return swapped ? in[1 - i] : in[i]; };
    return (std::get<I>(subs_)(rw, slot(I)) && ...);
  }

  std::tuple<Subs...> subs_;
  const Op** op_out_ = nullptr;
  std::size_t* node_out_ = nullptr;
};

template <class Op, class... Subs>
OpPattern<Op, Subs...> op(Subs... subs) {
  return OpPattern<Op, Subs...>(std::move(subs)...);
}

/// The factors of a product: `v` split through mul nodes whose result only that
/// product reads (so (a * b) * c, a * (b * c) and c * (a * b) give the same list).
inline std::vector<ValueId> factors(const Rewriter& rw, ValueId v, bool root = true) {
  const Node* node = rw.producer(v);
  if (!node || !holds<Mul>(node->op) || (!root && !rw.single_use(v))) return {v};
  std::vector<ValueId> out = factors(rw, node->inputs[0], false);
  const std::vector<ValueId> right = factors(rw, node->inputs[1], false);
  out.insert(out.end(), right.begin(), right.end());
  return out;
}

}  // namespace rml::passes
