// fuse_gelu: 0.5 x (1 + erf(x / sqrt 2)) and 0.5 x (1 + tanh(sqrt(2/pi)
// (x + 0.044715 x^3))), with the factors multiplied in any order, become gelu
// with the matching `approximate`. JAX's exact form, 0.5 x erfc(-x / sqrt 2),
// reaches rml as 1 - erf(-x / sqrt 2) and is matched too.
#pragma once

#include <numbers>

#include "rml/passes/common.hpp"

namespace rml::passes {

struct FuseGelu {
  static constexpr std::string_view name = "fuse_gelu";

  static void run(Rewriter& rw) {
    const std::size_t count = rw.graph().nodes.size();
    for (std::size_t n = 0; n < count; ++n) {
      const Node node = rw.graph().nodes[n];
      if (!is_live(rw, node) || !holds<Mul>(node.op)) continue;
      const std::vector<ValueId> parts = factors(rw, node.outputs[0]);
      if (parts.size() != 3) continue;
      // Try each factor as x: the others must be 0.5 and the (1 + f(x)) term.
      for (std::size_t xi = 0; xi < 3; ++xi) {
        const ValueId x = parts[xi], a = parts[(xi + 1) % 3], b = parts[(xi + 2) % 3];
        std::optional<std::string> form = half(rw, a) ? which_form(rw, b, x) : half(rw, b) ? which_form(rw, a, x) : std::nullopt;
        if (!form || rw.type(x) != rw.type(node.outputs[0])) continue;
        rw.replace_uses(node.outputs[0], rw.add(Gelu{*form}, {x}));
        break;
      }
    }
  }

 private:
  static bool half(const Rewriter& rw, ValueId v) { return scalar_near(0.5, 0)(rw, v); }

  /// "none" or "tanh" when `term` is 1 + erf(x / sqrt 2), 1 - erf(-x / sqrt 2)
  /// or 1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)).
  static std::optional<std::string> which_form(const Rewriter& rw, ValueId term, ValueId x) {
    ValueId inner;
    const auto one = scalar_near(1.0, 0);
    if (op<Add>(one, op<Erf>(any(inner)))(rw, term) && scaled_by(rw, inner, x, false)) return "none";
    if (op<Sub>(one, op<Erf>(any(inner)))(rw, term) && scaled_by(rw, inner, x, true)) return "none";
    if (op<Add>(one, op<Tanh>(any(inner)))(rw, term) && tanh_argument(rw, inner, x)) return "tanh";
    return std::nullopt;
  }

  /// v = x / sqrt 2 (or -x / sqrt 2 when `negated`), as a multiplication or a division.
  static bool scaled_by(const Rewriter& rw, ValueId v, ValueId x, bool negated) {
    const double r = std::numbers::sqrt2 / 2;
    ValueId y;
    const bool multiplied = op<Mul>(any(y), scalar_near(negated ? -r : r))(rw, v);
    const bool divided = !multiplied && op<Div>(any(y), scalar_near(negated ? -std::numbers::sqrt2 : std::numbers::sqrt2))(rw, v);
    if (!multiplied && !divided) {
      // -x first, then the positive factor: JAX writes mul(neg(x), 0.7071)
      if (!negated) return false;
      ValueId z;
      return (op<Mul>(op<Neg>(any(z)), scalar_near(r))(rw, v) || op<Div>(op<Neg>(any(z)), scalar_near(std::numbers::sqrt2))(rw, v)) && z == x;
    }
    return y == x;
  }

  /// v = sqrt(2/pi) (x + 0.044715 x^3), the cube as x*x*x in any order or pow(x, 3).
  static bool tanh_argument(const Rewriter& rw, ValueId v, ValueId x) {
    const std::vector<ValueId> outer = factors(rw, v);
    if (outer.size() != 2) return false;
    const double c = std::sqrt(2.0 / std::numbers::pi);
    for (std::size_t i = 0; i < 2; ++i) {
      if (!scalar_near(c, 1e-6)(rw, outer[i])) continue;
      ValueId cubic_term;
      if (!op<Add>(same(x), any(cubic_term))(rw, outer[1 - i])) continue;
      const std::vector<ValueId> t = factors(rw, cubic_term);
      std::size_t xs = 0, coefficient = 0, cubes = 0;
      for (ValueId f : t) {
        if (f == x) ++xs;
        else if (scalar_near(0.044715, 1e-6)(rw, f)) ++coefficient;
        else if (op<Pow>(same(x), scalar_near(3.0, 0))(rw, f)) ++cubes;
        else return false;
      }
      return coefficient == 1 && ((xs == 3 && cubes == 0) || (xs == 0 && cubes == 1));
    }
    return false;
  }
};

}  // namespace rml::passes
