// Elementwise ops: unary maths, binary arithmetic with NumPy broadcasting,
// comparisons, select and cast. Expected values are hand-computed literals.
#include "op_test_util.hpp"

using namespace op_test;
using doctest::Contains;

// ---------------------------------------------------------------- unary

TEST_CASE("neg negates, turning 0 into -0.0 and -0.0 into +0") {
  const Tensor y = run(rml::Neg{}, {f32({4}, {1.5f, -2.0f, 0.0f, -0.0f})});
  check_f32(y, {4}, {-1.5f, 2.0f, -0.0f, 0.0f});
  CHECK(sign_bits(y) == std::vector<bool>{true, false, true, false});
}

TEST_CASE("neg keeps NaN and flips infinities") {
  check_f32(run(rml::Neg{}, {f32({3}, {qnan, inf, -inf})}), {3}, {qnan, -inf, inf});
}

TEST_CASE("neg on i32 wraps INT32_MIN onto itself (NumPy int32)") {
  check_i32(run(rml::Neg{}, {i32({4}, {3, -7, 0, i32_min})}), {4}, {-3, 7, 0, i32_min});
}

TEST_CASE("unary ops keep rank-0 and size-0 shapes") {
  check_f32(run(rml::Neg{}, {Tensor::scalar(2.0f)}), {}, {-2.0f});
  check_f32(run(rml::Exp{}, {f32({2, 0, 3}, {})}), {2, 0, 3}, {});
  check_i32(run(rml::Abs{}, {i32({0}, {})}), {0}, {});
}

TEST_CASE("abs gives +0 for -0.0, inf for -inf, and wraps INT32_MIN on i32") {
  const Tensor y = run(rml::Abs{}, {f32({4}, {-1.5f, 2.0f, -0.0f, -inf})});
  check_f32(y, {4}, {1.5f, 2.0f, 0.0f, inf});
  CHECK_FALSE(std::signbit(y.values<float>()[2]));
  check_f32(run(rml::Abs{}, {f32({1}, {qnan})}), {1}, {qnan});
  check_i32(run(rml::Abs{}, {i32({3}, {-3, 4, i32_min})}), {3}, {3, 4, i32_min});
}

TEST_CASE("relu zeroes negatives and keeps NaN (f32 and i32)") {
  check_f32(run(rml::Relu{}, {f32({5}, {-1.0f, 0.0f, 2.5f, qnan, -inf})}), {5},
            {0.0f, 0.0f, 2.5f, qnan, 0.0f});
  check_i32(run(rml::Relu{}, {i32({4}, {-5, 0, 7, i32_min})}), {4}, {0, 0, 7, 0});
}

TEST_CASE("exp matches known values, with exp(-inf) = 0 and exp(inf) = inf") {
  check_near(run(rml::Exp{}, {f32({6}, {0.0f, 1.0f, -1.0f, 2.0f, -inf, inf})}), {6},
             {1.0f, 2.71828183f, 0.367879441f, 7.3890561f, 0.0f, inf});
}

TEST_CASE("log matches known values; log 0 = -inf and log of a negative is NaN") {
  check_near(run(rml::Log{}, {f32({6}, {1.0f, 2.0f, 0.5f, 0.0f, -1.0f, inf})}), {6},
             {0.0f, 0.693147181f, -0.693147181f, -inf, qnan, inf});
}

TEST_CASE("sqrt is exact on squares, NaN below 0 and keeps -0.0") {
  const Tensor y = run(rml::Sqrt{}, {f32({6}, {4.0f, 2.0f, 0.0f, -0.0f, -1.0f, inf})});
  check_near(y, {6}, {2.0f, 1.41421356f, 0.0f, -0.0f, qnan, inf});
  CHECK(std::signbit(y.values<float>()[3]));
}

TEST_CASE("rsqrt is 1/sqrt(x): rsqrt(0) = inf, rsqrt(inf) = 0, NaN below 0") {
  check_near(run(rml::Rsqrt{}, {f32({5}, {4.0f, 2.0f, 0.0f, inf, -4.0f})}), {5},
             {0.5f, 0.707106781f, inf, 0.0f, qnan});
}

TEST_CASE("tanh matches known values and saturates at +-1") {
  check_near(run(rml::Tanh{}, {f32({6}, {0.0f, 0.5f, -0.5f, 1.0f, inf, -inf})}), {6},
             {0.0f, 0.462117157f, -0.462117157f, 0.761594156f, 1.0f, -1.0f});
}

TEST_CASE("sigmoid matches known values and saturates without NaN") {
  check_near(run(rml::Sigmoid{}, {f32({7}, {0.0f, 2.0f, -2.0f, 1.0f, 1000.0f, -1000.0f, -inf})}),
             {7}, {0.5f, 0.880797078f, 0.119202922f, 0.731058579f, 1.0f, 0.0f, 0.0f});
}

TEST_CASE("erf matches known values and is odd") {
  check_near(run(rml::Erf{}, {f32({6}, {0.0f, 1.0f, -1.0f, 0.5f, 2.0f, inf})}), {6},
             {0.0f, 0.842700793f, -0.842700793f, 0.520499878f, 0.995322265f, 1.0f});
}

TEST_CASE("sin and cos take radians") {
  check_near(run(rml::Sin{}, {f32({3}, {0.0f, 1.0f, -0.5f})}), {3},
             {0.0f, 0.841470985f, -0.479425539f});
  check_near(run(rml::Cos{}, {f32({3}, {0.0f, 1.0f, 2.0f})}), {3},
             {1.0f, 0.540302306f, -0.416146837f});
  check_near(run(rml::Sin{}, {f32({1}, {inf})}), {1}, {qnan});
}

TEST_CASE("reciprocal is 1/x with IEEE infinities for +-0") {
  check_f32(run(rml::Reciprocal{}, {f32({5}, {2.0f, -4.0f, 0.0f, -0.0f, inf})}), {5},
            {0.5f, -0.25f, inf, -inf, 0.0f});
}

TEST_CASE("f32-only unary ops reject i32 with 'must be f32'") {
  for (const char* name :
       {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos", "reciprocal"}) {
    CAPTURE(name);
    CHECK_THROWS_WITH_AS(run(rml::Registry::make(name), {i32({2}, {1, 2})}),
                         Contains("input 0 must be f32, got i32"), rml::Error);
  }
}

TEST_CASE("unary ops take exactly one input") {
  CHECK_THROWS_WITH_AS(run(rml::Neg{}, {f32({1}, {1}), f32({1}, {1})}),
                       Contains("op 'neg' takes 1 inputs, got 2"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Exp{}, {}), Contains("op 'exp' takes 1 inputs, got 0"), rml::Error);
}

// ---------------------------------------------------------------- binary

TEST_CASE("add broadcasts a row over a matrix (NumPy)") {
  check_f32(run(rml::Add{}, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})}), {2, 3},
            {11, 22, 33, 14, 25, 36});
}

TEST_CASE("add broadcasts size-1 dims on both sides") {
  check_f32(run(rml::Add{}, {f32({2, 1}, {1, 2}), f32({1, 3}, {10, 20, 30})}), {2, 3},
            {11, 21, 31, 12, 22, 32});
}

TEST_CASE("add broadcasts across differing ranks in either order") {
  // [3] + [2, 1, 1] -> [2, 1, 3]
  check_f32(run(rml::Add{}, {f32({3}, {1, 2, 3}), f32({2, 1, 1}, {10, 20})}), {2, 1, 3},
            {11, 12, 13, 21, 22, 23});
}

TEST_CASE("add broadcasts a rank-0 scalar, and two scalars give a scalar") {
  check_f32(run(rml::Add{}, {Tensor::scalar(1.5f), f32({2, 2}, {1, 2, 3, 4})}), {2, 2},
            {2.5f, 3.5f, 4.5f, 5.5f});
  check_f32(run(rml::Add{}, {Tensor::scalar(1.0f), Tensor::scalar(2.0f)}), {}, {3.0f});
}

TEST_CASE("add with a size-0 dim gives a size-0 result; 1 stretches to 0") {
  check_f32(run(rml::Add{}, {f32({0, 3}, {}), f32({3}, {1, 2, 3})}), {0, 3}, {});
  check_f32(run(rml::Add{}, {f32({1}, {5}), f32({0}, {})}), {0}, {});
}

TEST_CASE("add on i32 is exact and wraps modulo 2^32") {
  check_i32(run(rml::Add{}, {i32({3}, {1, i32_max, i32_min}), i32({3}, {2, 1, -1})}), {3},
            {3, i32_min, i32_max});
}

TEST_CASE("binary shapes that do not broadcast are an error naming both") {
  CHECK_THROWS_WITH_AS(run(rml::Add{}, {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}),
                       Contains("op 'add': operands: shapes [2] and [3] do not broadcast"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Mul{}, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2}, {1, 2})}),
                       Contains("shapes [2, 3] and [2] do not broadcast"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Add{}, {f32({0}, {}), f32({2}, {1, 2})}),
                       Contains("do not broadcast"), rml::Error);
}

TEST_CASE("binary operands of different dtypes are an error") {
  CHECK_THROWS_WITH_AS(run(rml::Add{}, {f32({1}, {1}), i32({1}, {1})}),
                       Contains("op 'add': input 1 is i32 but input 0 is f32"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Maximum{}, {i32({1}, {1}), f32({1}, {1})}),
                       Contains("input 1 is f32 but input 0 is i32"), rml::Error);
}

TEST_CASE("binary ops take exactly two inputs") {
  CHECK_THROWS_WITH_AS(run(rml::Add{}, {f32({1}, {1}), f32({1}, {1}), f32({1}, {1})}),
                       Contains("op 'add' takes 2 inputs, got 3"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Pow{}, {f32({1}, {1})}), Contains("op 'pow' takes 2 inputs, got 1"),
                       rml::Error);
}

TEST_CASE("sub is a - b, not b - a, and wraps on i32") {
  check_f32(run(rml::Sub{}, {f32({2}, {5, 3}), f32({2}, {1, 4})}), {2}, {4, -1});
  check_f32(run(rml::Sub{}, {f32({2, 1}, {10, 20}), f32({2}, {1, 2})}), {2, 2}, {9, 8, 19, 18});
  check_i32(run(rml::Sub{}, {i32({2}, {i32_min, i32_max}), i32({2}, {1, -1})}), {2},
            {i32_max, i32_min});
}

TEST_CASE("mul is exact on small values and wraps modulo 2^32 on i32") {
  check_f32(run(rml::Mul{}, {f32({3}, {1.5f, -2, 0}), Tensor::scalar(4.0f)}), {3}, {6, -8, 0});
  // 65536^2 = 2^32 -> 0; 65536 * 32768 = 2^31 -> INT32_MIN;
  // 100000^2 = 10^10 = 2 * 2^32 + 1410065408.
  check_i32(run(rml::Mul{}, {i32({3}, {65536, 65536, 100000}), i32({3}, {65536, 32768, 100000})}),
            {3}, {0, i32_min, 1410065408});
}

TEST_CASE("div follows IEEE: x/0 = +-inf, 0/0 = NaN, x/-0 flips the sign") {
  check_f32(run(rml::Div{}, {f32({5}, {6, 1, -1, 0, 1}), f32({5}, {4, 0, 0, 0, -0.0f})}), {5},
            {1.5f, inf, -inf, qnan, -inf});
}

TEST_CASE("div broadcasts the divisor") {
  check_f32(run(rml::Div{}, {f32({2, 2}, {2, 4, 6, 8}), f32({2, 1}, {2, 4})}), {2, 2},
            {1, 2, 1.5f, 2});
}

TEST_CASE("div and pow are f32-only") {
  CHECK_THROWS_WITH_AS(run(rml::Div{}, {i32({1}, {4}), i32({1}, {2})}),
                       Contains("op 'div': input 0 must be f32, got i32"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Pow{}, {i32({1}, {4}), i32({1}, {2})}),
                       Contains("op 'pow': input 0 must be f32, got i32"), rml::Error);
}

TEST_CASE("pow follows C pow: integer exponents of negatives, 0^0 = 1, NaN for fractional") {
  check_near(run(rml::Pow{}, {f32({6}, {2, -2, 4, 0, -8, 2}), f32({6}, {3, 3, 0.5f, 0, 0.5f, -1})}),
             {6}, {8, -8, 2, 1, qnan, 0.5f});
  check_f32(run(rml::Pow{}, {f32({2}, {3, 10}), Tensor::scalar(2.0f)}), {2}, {9, 100});
}

TEST_CASE("maximum and minimum propagate NaN from either side") {
  const Tensor a = f32({5}, {1, 5, qnan, 2, -inf});
  const Tensor b = f32({5}, {3, 2, 1, qnan, 0});
  check_f32(run(rml::Maximum{}, {a, b}), {5}, {3, 5, qnan, qnan, 0});
  check_f32(run(rml::Minimum{}, {a, b}), {5}, {1, 2, qnan, qnan, -inf});
}

TEST_CASE("maximum and minimum on i32 broadcast like NumPy") {
  const Tensor a = i32({2, 1}, {i32_min, 3});
  const Tensor b = i32({3}, {-1, 3, i32_max});
  check_i32(run(rml::Maximum{}, {a, b}), {2, 3}, {-1, 3, i32_max, 3, 3, i32_max});
  check_i32(run(rml::Minimum{}, {a, b}), {2, 3}, {i32_min, i32_min, i32_min, -1, 3, 3});
}

// ---------------------------------------------------------------- compare

TEST_CASE("comparisons give f32 1.0 where true and 0.0 where false") {
  const Tensor a = f32({3}, {1, 2, 3});
  const Tensor b = f32({3}, {2, 2, 2});
  check_f32(run(rml::Eq{}, {a, b}), {3}, {0, 1, 0});
  check_f32(run(rml::Ne{}, {a, b}), {3}, {1, 0, 1});
  check_f32(run(rml::Lt{}, {a, b}), {3}, {1, 0, 0});
  check_f32(run(rml::Le{}, {a, b}), {3}, {1, 1, 0});
  check_f32(run(rml::Gt{}, {a, b}), {3}, {0, 0, 1});
  check_f32(run(rml::Ge{}, {a, b}), {3}, {0, 1, 1});
}

TEST_CASE("comparisons of i32 operands still give f32") {
  const Tensor a = i32({3}, {i32_min, 0, i32_max});
  const Tensor b = i32({3}, {0, 0, 0});
  check_f32(run(rml::Lt{}, {a, b}), {3}, {1, 0, 0});
  check_f32(run(rml::Ge{}, {a, b}), {3}, {0, 1, 1});
  check_f32(run(rml::Eq{}, {a, b}), {3}, {0, 1, 0});
}

TEST_CASE("every comparison with NaN is false except ne; -0.0 equals 0") {
  const Tensor a = f32({2}, {qnan, -0.0f});
  const Tensor b = f32({2}, {qnan, 0.0f});
  check_f32(run(rml::Eq{}, {a, b}), {2}, {0, 1});
  check_f32(run(rml::Ne{}, {a, b}), {2}, {1, 0});
  check_f32(run(rml::Lt{}, {a, b}), {2}, {0, 0});
  check_f32(run(rml::Le{}, {a, b}), {2}, {0, 1});
  check_f32(run(rml::Gt{}, {a, b}), {2}, {0, 0});
  check_f32(run(rml::Ge{}, {a, b}), {2}, {0, 1});
}

TEST_CASE("comparisons broadcast and reject mixed dtypes or shapes") {
  check_f32(run(rml::Gt{}, {f32({2, 1}, {1, 3}), f32({3}, {0, 2, 4})}), {2, 3}, {1, 0, 0, 1, 1, 0});
  check_f32(run(rml::Eq{}, {Tensor::scalar(2.0f), f32({0}, {})}), {0}, {});
  CHECK_THROWS_WITH_AS(run(rml::Eq{}, {f32({1}, {1}), i32({1}, {1})}),
                       Contains("op 'eq': input 1 is i32 but input 0 is f32"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Lt{}, {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}),
                       Contains("op 'lt': operands: shapes [2] and [3] do not broadcast"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Ge{}, {f32({1}, {1})}), Contains("op 'ge' takes 2 inputs, got 1"),
                       rml::Error);
}

// ---------------------------------------------------------------- select

TEST_CASE("select takes a where cond is non-zero (NaN counts as true, -0.0 as false)") {
  check_f32(run(rml::Select{}, {f32({5}, {1, 0, -2, qnan, -0.0f}), f32({5}, {1, 2, 3, 4, 5}),
                                f32({5}, {-1, -2, -3, -4, -5})}),
            {5}, {1, -2, 3, 4, -5});
}

TEST_CASE("select accepts an i32 condition and i32 operands") {
  check_f32(run(rml::Select{}, {i32({2}, {0, 7}), f32({2}, {1, 2}), f32({2}, {3, 4})}), {2},
            {3, 2});
  check_i32(run(rml::Select{}, {f32({2}, {1, 0}), i32({2}, {1, 2}), i32({2}, {3, 4})}), {2},
            {1, 4});
}

TEST_CASE("select broadcasts condition and operands together") {
  // cond [2,1], a [3], b scalar -> [2, 3]
  check_f32(run(rml::Select{}, {f32({2, 1}, {1, 0}), f32({3}, {1, 2, 3}), Tensor::scalar(9.0f)}),
            {2, 3}, {1, 2, 3, 9, 9, 9});
  // the condition alone may set the output shape
  check_i32(run(rml::Select{}, {f32({2, 2}, {1, 0, 0, 1}), i32({}, {5}), i32({}, {6})}), {2, 2},
            {5, 6, 6, 5});
}

TEST_CASE("select shape-rule errors: operand dtypes, operand shapes, condition shape") {
  CHECK_THROWS_WITH_AS(run(rml::Select{}, {f32({1}, {1}), f32({1}, {1}), i32({1}, {1})}),
                       Contains("op 'select': input 2 is i32 but input 1 is f32"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Select{}, {f32({1}, {1}), f32({2}, {1, 2}), f32({3}, {1, 2, 3})}),
                       Contains("operands: shapes [2] and [3] do not broadcast"), rml::Error);
  CHECK_THROWS_WITH_AS(
      run(rml::Select{}, {f32({4}, {1, 1, 1, 1}), f32({3}, {1, 2, 3}), f32({1}, {0})}),
      Contains("condition and operands: shapes [4] and [3] do not broadcast"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Select{}, {f32({1}, {1}), f32({1}, {1})}),
                       Contains("op 'select' takes 3 inputs, got 2"), rml::Error);
}

// ---------------------------------------------------------------- cast

TEST_CASE("cast f32 -> i32 truncates toward zero") {
  check_i32(run(rml::Cast{.to = DType::i32}, {f32({6}, {2.7f, -2.7f, 0.5f, -0.5f, 3.0f, -0.0f})}),
            {6}, {2, -2, 0, 0, 3, 0});
}

TEST_CASE("cast f32 -> i32 saturates at the i32 range and maps NaN to 0") {
  // 2147483520 is the largest f32 below 2^31; 2^31 itself saturates.
  check_i32(run(rml::Cast{.to = DType::i32},
                {f32({8}, {qnan, inf, -inf, 3e9f, -3e9f, 2147483648.0f, -2147483648.0f,
                           2147483520.0f})}),
            {8}, {0, i32_max, i32_min, i32_max, i32_min, i32_max, i32_min, 2147483520});
}

TEST_CASE("cast i32 -> f32 rounds to nearest (16777217 -> 16777216)") {
  check_f32(run(rml::Cast{.to = DType::f32}, {i32({4}, {-5, 16777217, i32_max, i32_min})}), {4},
            {-5.0f, 16777216.0f, 2147483648.0f, -2147483648.0f});
}

TEST_CASE("cast to the same dtype is the identity, keeping shape (rank 0 and size 0)") {
  check_f32(run(rml::Cast{.to = DType::f32}, {f32({2}, {qnan, -1.5f})}), {2}, {qnan, -1.5f});
  check_i32(run(rml::Cast{.to = DType::i32}, {i32({}, {i32_min})}), {}, {i32_min});
  check_i32(run(rml::Cast{.to = DType::i32}, {f32({0, 2}, {})}), {0, 2}, {});
}

TEST_CASE("cast's 'to' defaults to f32 in C++ but is required in a file") {
  CHECK(rml::Cast{}.to == DType::f32);
  check_i32(run(op("cast", {{"to", "i32"}}), {f32({1}, {7.9f})}), {1}, {7});
  CHECK_THROWS_WITH_AS(op("cast", rml::Json::object()), Contains("missing attribute 'to'"),
                       rml::Error);
  CHECK_THROWS_WITH_AS(op("cast", {{"to", "f64"}}), Contains("unknown dtype 'f64'"), rml::Error);
  CHECK_THROWS_WITH_AS(run(rml::Cast{}, {}), Contains("op 'cast' takes 1 inputs, got 0"),
                       rml::Error);
}
