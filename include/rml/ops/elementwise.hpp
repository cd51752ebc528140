// Elementwise ops: unary maths, binary arithmetic with NumPy broadcasting,
// comparisons giving f32 0/1, select and cast.
#pragma once

#include <cmath>
#include <concepts>
#include <string_view>
#include <tuple>

#include "rml/ops/rules.hpp"

namespace rml {

/// Same shape and dtype out as in. `Derived::apply(x)` is the scalar maths.
template <class Derived, Accepts A = Accepts::f32>
struct Unary {
  static constexpr Arity arity{1, 1};
  static constexpr Accepts accepts = A;
  static constexpr bool elementwise = true;
  static constexpr std::string_view inputs = A == Accepts::f32 ? "x: f32" : "x: f32|i32";
  static constexpr std::string_view shape_rule = "out = x";
  static constexpr auto fields() { return std::tuple{}; }
  Types infer(InputTypes in) const {
    require_accepted(A, in[0], 0);
    return {in[0]};
  }
};

/// NumPy-broadcast of two operands of one dtype; `Derived::apply(a, b)`.
template <class Derived, Accepts A = Accepts::any>
struct Binary {
  static constexpr Arity arity{2, 2};
  static constexpr Accepts accepts = A;
  static constexpr bool elementwise = true;
  static constexpr std::string_view inputs =
      A == Accepts::f32 ? "a: f32, b: f32" : "a: T, b: T (T = f32|i32)";
  static constexpr std::string_view shape_rule = "out = broadcast(a, b)";
  static constexpr auto fields() { return std::tuple{}; }
  Types infer(InputTypes in) const {
    require_accepted(A, in[0], 0);
    require_same_dtype(in);
    return {{in[0].dtype, broadcast_shapes(in[0].shape, in[1].shape, "operands")}};
  }
};

/// A comparison: broadcast like Binary, result f32 1.0 where true, 0.0 where false.
template <class Derived>
struct Compare {
  static constexpr Arity arity{2, 2};
  static constexpr bool elementwise = true;
  static constexpr std::string_view inputs = "a: T, b: T (T = f32|i32)";
  static constexpr std::string_view shape_rule = "out: f32 = broadcast(a, b)";
  static constexpr auto fields() { return std::tuple{}; }
  Types infer(InputTypes in) const {
    require_same_dtype(in);
    return {{DType::f32, broadcast_shapes(in[0].shape, in[1].shape, "operands")}};
  }
};

/// Family membership, for code that treats a family at once.
template <class Op>
concept UnaryOp = requires { Op::accepts; } && std::derived_from<Op, Unary<Op, Op::accepts>>;
template <class Op>
concept BinaryOp = requires { Op::accepts; } && std::derived_from<Op, Binary<Op, Op::accepts>>;
template <class Op>
concept CompareOp = std::derived_from<Op, Compare<Op>>;

// Integer arithmetic wraps modulo 2^32, like NumPy's int32 (and unlike C++,
// where signed overflow is undefined).
template <class T, class Fn>
T wrapping(T a, T b, Fn fn) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(fn(static_cast<std::uint32_t>(a), static_cast<std::uint32_t>(b)));
  else
    return fn(a, b);
}

// Unary maths. Transcendental functions are evaluated in double and rounded
// once, so the reference is as close to the true value as f32 allows.
struct Neg : Unary<Neg, Accepts::any> {
  static constexpr std::string_view name = "neg", summary = "-x";
  template <class T> static T apply(T x) {
    if constexpr (std::is_integral_v<T>) return wrapping(T(0), x, [](auto a, auto b) { return a - b; });
    else return -x;  // keeps -0.0 and NaN signs as NumPy does
  }
};
struct Abs : Unary<Abs, Accepts::any> {
  static constexpr std::string_view name = "abs", summary = "|x|";
  template <class T> static T apply(T x) { return x < 0 ? Neg::apply(x) : (x == 0 ? T(0) : x); }
};
struct Relu : Unary<Relu, Accepts::any> {
  static constexpr std::string_view name = "relu", summary = "max(x, 0); NaN stays NaN";
  template <class T> static T apply(T x) { return x > 0 ? x : (x != x ? x : T(0)); }
};
struct Exp : Unary<Exp> {
  static constexpr std::string_view name = "exp", summary = "e^x";
  static float apply(float x) { return float(std::exp(double(x))); }
};
struct Log : Unary<Log> {
  static constexpr std::string_view name = "log", summary = "natural logarithm; log 0 = -inf, log of a negative = NaN";
  static float apply(float x) { return float(std::log(double(x))); }
};
struct Sqrt : Unary<Sqrt> {
  static constexpr std::string_view name = "sqrt", summary = "square root; NaN below 0";
  static float apply(float x) { return float(std::sqrt(double(x))); }
};
struct Rsqrt : Unary<Rsqrt> {
  static constexpr std::string_view name = "rsqrt", summary = "1 / sqrt(x)";
  static float apply(float x) { return float(1.0 / std::sqrt(double(x))); }
};
struct Tanh : Unary<Tanh> {
  static constexpr std::string_view name = "tanh", summary = "hyperbolic tangent";
  static float apply(float x) { return float(std::tanh(double(x))); }
};
struct Sigmoid : Unary<Sigmoid> {
  static constexpr std::string_view name = "sigmoid", summary = "1 / (1 + e^-x)";
  static float apply(float x) { return float(1.0 / (1.0 + std::exp(-double(x)))); }
};
struct Erf : Unary<Erf> {
  static constexpr std::string_view name = "erf", summary = "Gauss error function";
  static float apply(float x) { return float(std::erf(double(x))); }
};
struct Sin : Unary<Sin> {
  static constexpr std::string_view name = "sin", summary = "sine (radians)";
  static float apply(float x) { return float(std::sin(double(x))); }
};
struct Cos : Unary<Cos> {
  static constexpr std::string_view name = "cos", summary = "cosine (radians)";
  static float apply(float x) { return float(std::cos(double(x))); }
};
struct Reciprocal : Unary<Reciprocal> {
  static constexpr std::string_view name = "reciprocal", summary = "1 / x";
  static float apply(float x) { return 1.0f / x; }
};

struct Add : Binary<Add> {
  static constexpr std::string_view name = "add", summary = "a + b";
  static constexpr bool commutative = true;
  template <class T> static T apply(T a, T b) { return wrapping(a, b, [](auto x, auto y) { return x + y; }); }
};
struct Sub : Binary<Sub> {
  static constexpr std::string_view name = "sub", summary = "a - b";
  template <class T> static T apply(T a, T b) { return wrapping(a, b, [](auto x, auto y) { return x - y; }); }
};
struct Mul : Binary<Mul> {
  static constexpr std::string_view name = "mul", summary = "a * b";
  static constexpr bool commutative = true;
  template <class T> static T apply(T a, T b) { return wrapping(a, b, [](auto x, auto y) { return x * y; }); }
};
struct Div : Binary<Div, Accepts::f32> {
  static constexpr std::string_view name = "div", summary = "a / b (IEEE: x/0 = ±inf, 0/0 = NaN)";
  static float apply(float a, float b) { return a / b; }
};
struct Pow : Binary<Pow, Accepts::f32> {
  static constexpr std::string_view name = "pow", summary = "a ^ b (C pow semantics)";
  static float apply(float a, float b) { return float(std::pow(double(a), double(b))); }
};
struct Maximum : Binary<Maximum> {
  static constexpr std::string_view name = "maximum", summary = "larger of a and b; NaN if either is NaN";
  static constexpr bool commutative = true;
  template <class T> static T apply(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? b : a)); }
};
struct Minimum : Binary<Minimum> {
  static constexpr std::string_view name = "minimum", summary = "smaller of a and b; NaN if either is NaN";
  static constexpr bool commutative = true;
  template <class T> static T apply(T a, T b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
};

// Comparisons (IEEE: every comparison with NaN is false except ne).
struct Eq : Compare<Eq> {
  static constexpr std::string_view name = "eq", summary = "a == b";
  static constexpr bool commutative = true;
  template <class T> static bool apply(T a, T b) { return a == b; }
};
struct Ne : Compare<Ne> {
  static constexpr std::string_view name = "ne", summary = "a != b";
  static constexpr bool commutative = true;
  template <class T> static bool apply(T a, T b) { return a != b; }
};
struct Lt : Compare<Lt> {
  static constexpr std::string_view name = "lt", summary = "a < b";
  template <class T> static bool apply(T a, T b) { return a < b; }
};
struct Le : Compare<Le> {
  static constexpr std::string_view name = "le", summary = "a <= b";
  template <class T> static bool apply(T a, T b) { return a <= b; }
};
struct Gt : Compare<Gt> {
  static constexpr std::string_view name = "gt", summary = "a > b";
  template <class T> static bool apply(T a, T b) { return a > b; }
};
struct Ge : Compare<Ge> {
  static constexpr std::string_view name = "ge", summary = "a >= b";
  template <class T> static bool apply(T a, T b) { return a >= b; }
};

/// select(cond, a, b): a where cond is non-zero, else b; all three broadcast.
struct Select {
  static constexpr std::string_view name = "select";
  static constexpr std::string_view summary = "a where cond != 0, else b";
  static constexpr std::string_view inputs = "cond: f32|i32, a: T, b: T";
  static constexpr std::string_view shape_rule = "out: T = broadcast(cond, a, b)";
  static constexpr Arity arity{3, 3};
  static constexpr bool elementwise = true;
  static constexpr auto fields() { return std::tuple{}; }
  Types infer(InputTypes in) const {
    if (in[1].dtype != in[2].dtype)
      fail(ErrorCode::dtype_mismatch, "input 2 is ", dtype_name(in[2].dtype), " but input 1 is ", dtype_name(in[1].dtype));
    const Shape ab = broadcast_shapes(in[1].shape, in[2].shape, "operands");
    return {{in[1].dtype, broadcast_shapes(in[0].shape, ab, "condition and operands")}};
  }
};

/// cast(x, to): f32 -> i32 truncates toward zero, saturates at the i32 range
/// and maps NaN to 0 (C++ leaves those undefined; rml does not).
struct Cast {
  static constexpr std::string_view name = "cast";
  static constexpr std::string_view summary =
      "convert to `to`; f32->i32 truncates toward zero, saturates, NaN -> 0";
  static constexpr std::string_view inputs = "x: f32|i32";
  static constexpr std::string_view shape_rule = "out: to = x";
  static constexpr Arity arity{1, 1};
  static constexpr bool elementwise = true;
  DType to = DType::f32;
  static constexpr auto fields() { return std::tuple{required("to", &Cast::to)}; }
  Types infer(InputTypes in) const { return {{to, in[0].shape}}; }

  template <class To, class From>
  static To apply(From x) {
    if constexpr (std::is_same_v<To, std::int32_t> && std::is_same_v<From, float>) {
      if (x != x) return 0;
      if (x >= 2147483648.0f) return INT32_MAX;
      if (x <= -2147483648.0f) return INT32_MIN;
      return static_cast<std::int32_t>(x);
    } else {
      return static_cast<To>(x);
    }
  }
};

}  // namespace rml
