// The executor's vectorised maths (exec/simd_math.hpp) against double
// precision: each function's error bound is stated here and checked on a dense
// sweep; special values follow IEEE; and a block's result for an element never
// depends on where the element sits (lanes and tails agree bit for bit), on
// every instruction set this CPU runs (exec/isa.hpp), which all give the
// portable path's bits. Also the GEMM's single-row path (exec/gemm.hpp), which
// must give the tiled path's bits, and its kernels per instruction set.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include <random>

#include "rml/exec/gemm.hpp"
#include "rml/exec/simd_math.hpp"
#include "rml/ops/elementwise.hpp"

namespace simd = rml::exec::simd;

namespace {

using Block = void (*)(const float*, float*, std::int64_t);

double ulp_of(double reference) {
  const float r = std::fabs(static_cast<float>(reference));
  return r == 0.0f ? std::ldexp(1.0, -149) : std::nextafter(r, INFINITY) - r;
}

struct Errors {
  double ulp = 0, absolute = 0;
};

/// Worst error of `block` against `reference` on `count` evenly spaced points.
Errors sweep(Block block, const std::function<double(double)>& reference, double lo, double hi, int count = 400001) {
  std::vector<float> x(count), y(count);
  for (int i = 0; i < count; ++i) x[i] = static_cast<float>(lo + (hi - lo) * i / (count - 1));
  block(x.data(), y.data(), count);
  Errors worst;
  for (int i = 0; i < count; ++i) {
    const double want = reference(x[i]), error = std::fabs(static_cast<double>(y[i]) - want);
    worst.ulp = std::max(worst.ulp, error / ulp_of(want));
    worst.absolute = std::max(worst.absolute, error);
  }
  return worst;
}

double gelu_tanh_reference(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
double gelu_erf_reference(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

/// Every instruction set this CPU runs, portable first.
std::vector<rml::exec::Isa> runnable_isas() {
  using rml::exec::Isa;
  std::vector<Isa> isas;
  for (Isa isa : {Isa::portable, Isa::avx2, Isa::avx512})
    if (isa <= rml::exec::cpu_isa()) isas.push_back(isa);
  return isas;
}

}  // namespace

TEST_CASE("exp is within 1 ulp over its whole finite range") {
  CHECK(sweep(simd::exp_block, [](double x) { return std::exp(x); }, -87.3, 88.7).ulp <= 1.0);
}

TEST_CASE("tanh is within 3 ulp, sigmoid within 3 ulp down to 1e-35") {
  CHECK(sweep(simd::tanh_block, [](double x) { return std::tanh(x); }, -12, 12).ulp <= 3.0);
  CHECK(sweep(simd::tanh_block, [](double x) { return std::tanh(x); }, -0.6, 0.6).ulp <= 3.0);  // both branches
  CHECK(sweep(simd::sigmoid_block, [](double x) { return 1 / (1 + std::exp(-x)); }, -80, 30).ulp <= 3.0);
}

TEST_CASE("erf is within 6 ulp; both GELUs within 2e-6 absolute") {
  CHECK(sweep(simd::erf_block, [](double x) { return std::erf(x); }, -6, 6).ulp <= 6.0);
  CHECK(sweep(simd::gelu_tanh_block, gelu_tanh_reference, -10, 10).absolute <= 1e-6);
  CHECK(sweep(simd::gelu_erf_block, gelu_erf_reference, -10, 10).absolute <= 2e-6);
}

TEST_CASE("the tanh GELU keeps its relative accuracy for negative inputs (no cancellation in 1 + tanh)") {
  // The same function as x / (1 + e^(-2u)), accurate in double where 1 + tanh(u) cancels.
  const auto reference = [](double x) { return x / (1 + std::exp(-2 * std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); };
  CHECK(sweep(simd::gelu_tanh_block, reference, -1, 1).ulp <= 3.0);
  CHECK(sweep(simd::gelu_tanh_block, reference, -3, 10).ulp <= 16.0);  // 0.5 x (1 + tanh u) in f32: ~200 ulp at -3
}

TEST_CASE("log is within 1 ulp on every positive float, subnormals included, and gives the scalar bits on every set") {
  // Every 997th bit pattern from the smallest subnormal to the largest float
  // (all binades, both sides of each m = sqrt(1/2) switch), and the floats
  // around 1 (where log x is small and f = x - 1 exactly).
  std::vector<float> x;
  for (std::uint32_t bits = 1; bits < 0x7f800000u; bits += 997) x.push_back(std::bit_cast<float>(bits));
  for (float v = 0.999f; v < 1.001f; v = std::nextafter(v, INFINITY)) x.push_back(v);
  std::vector<float> y(x.size());
  simd::log_block(x.data(), y.data(), static_cast<std::int64_t>(x.size()));
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = std::log(static_cast<double>(x[i]));
    worst = std::max(worst, std::fabs(static_cast<double>(y[i]) - want) / ulp_of(want));
  }
  CHECK(worst <= 1.0);  // 0.87 ulp at worst over all 2^31 positive floats, checked once exhaustively
  for (const rml::exec::Isa isa : runnable_isas()) {
    CAPTURE(rml::exec::isa_name(isa));
    simd::apply(simd::Function::log, isa, x.data(), y.data(), static_cast<std::int64_t>(x.size()));
    std::size_t differing = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!same_bits(y[i], simd::log(x[i])) && differing++ < 3) FAIL_CHECK("log(" << x[i] << ") gave " << y[i]);
    CHECK(differing == 0);
  }
}

TEST_CASE("sin and cos are within 3 ulp up to 32768, std's beyond, and give the scalar bits on every set") {
  // Every 331st bit pattern up to 32768 (both signs), so every binade and
  // thousands of points next to multiples of pi/2 where the result is tiny;
  // then arguments beyond the reduction's range, which take std::sin and std::cos.
  std::vector<float> x;
  for (std::uint32_t bits = 0; bits <= 0x47000000u; bits += 331) {
    x.push_back(std::bit_cast<float>(bits));
    x.push_back(-std::bit_cast<float>(bits));
  }
  const std::size_t reduced = x.size();
  for (const float big : {32768.5f, 1e5f, 3.3e6f, 1e10f, -7e20f, 3e38f}) x.push_back(big);
  std::vector<float> y(x.size());
  using simd::Function;
  const std::pair<Function, double (*)(double)> functions[] = {{Function::sin, std::sin}, {Function::cos, std::cos}};
  for (const auto& [function, reference] : functions) {
    simd::apply(function, rml::exec::active_isa(), x.data(), y.data(), static_cast<std::int64_t>(x.size()));
    double worst = 0;
    for (std::size_t i = 0; i < reduced; ++i) {
      const double want = reference(static_cast<double>(x[i]));
      worst = std::max(worst, std::fabs(static_cast<double>(y[i]) - want) / ulp_of(want));
    }
    CHECK(worst <= 3.0);  // 2.43 ulp at worst over every float up to 32768, checked once exhaustively
    const auto lane = function == Function::sin ? simd::sin : simd::cos;
    for (std::size_t i = reduced; i < x.size(); ++i)
      CHECK(same_bits(y[i], function == Function::sin ? std::sin(x[i]) : std::cos(x[i])));
    for (const rml::exec::Isa isa : runnable_isas()) {
      CAPTURE(rml::exec::isa_name(isa));
      simd::apply(function, isa, x.data(), y.data(), static_cast<std::int64_t>(x.size()));
      std::size_t differing = 0;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!same_bits(y[i], lane(x[i])) && differing++ < 3) FAIL_CHECK("at " << x[i] << " gave " << y[i]);
      CHECK(differing == 0);
    }
  }
}

TEST_CASE("special values: NaN stays NaN, infinities and underflow follow IEEE") {
  CHECK(std::isnan(simd::sin(NAN)));
  CHECK(std::isnan(simd::sin(INFINITY)));
  CHECK(std::isnan(simd::cos(-INFINITY)));
  CHECK(std::signbit(simd::sin(-0.0f)));
  CHECK(simd::sin(0.0f) == 0.0f);
  CHECK(simd::cos(0.0f) == 1.0f);
  CHECK(simd::cos(-0.0f) == 1.0f);
  CHECK(std::isnan(simd::log(NAN)));
  CHECK(std::isnan(simd::log(-1.0f)));
  CHECK(std::isnan(simd::log(-INFINITY)));
  CHECK(std::isnan(simd::log(-std::numeric_limits<float>::denorm_min())));
  CHECK(simd::log(0.0f) == -INFINITY);
  CHECK(simd::log(-0.0f) == -INFINITY);
  CHECK(simd::log(INFINITY) == INFINITY);
  CHECK(simd::log(1.0f) == 0.0f);
  CHECK(simd::log(std::numeric_limits<float>::denorm_min()) == static_cast<float>(std::log(0x1p-149)));
  CHECK(std::isnan(simd::exp(NAN)));
  CHECK(simd::exp(INFINITY) == INFINITY);
  CHECK(simd::exp(-INFINITY) == 0.0f);
  CHECK(simd::exp(89.0f) == INFINITY);
  CHECK(simd::exp(-90.0f) == 0.0f);  // would be denormal: flushed
  CHECK(simd::exp(0.0f) == 1.0f);
  CHECK(std::isnan(simd::tanh(NAN)));
  CHECK(simd::tanh(INFINITY) == 1.0f);
  CHECK(simd::tanh(-INFINITY) == -1.0f);
  CHECK(std::signbit(simd::tanh(-0.0f)));
  CHECK(simd::sigmoid(INFINITY) == 1.0f);
  CHECK(simd::sigmoid(-INFINITY) == 0.0f);
  CHECK(simd::sigmoid(0.0f) == 0.5f);
  CHECK(std::isnan(simd::gelu_tanh(NAN)));
}

TEST_CASE("an element's result depends neither on its position in a block nor on the instruction set") {
  // Odd lengths and offsets put every element both in a vector lane and in the scalar tail.
  std::vector<float> x(61);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = -30.0f + 0.97f * static_cast<float>(i);
  x[5] = NAN;
  x[17] = INFINITY;
  x[40] = -0.0f;
  using simd::Function;
  const std::pair<Function, float (*)(float)> functions[] = {
      {Function::exp, simd::exp}, {Function::tanh, simd::tanh},           {Function::sigmoid, simd::sigmoid},
      {Function::erf, simd::erf}, {Function::gelu_tanh, simd::gelu_tanh}, {Function::gelu_erf, simd::gelu_erf},
      {Function::relu, simd::relu}, {Function::log, simd::log},             {Function::sin, simd::sin},
      {Function::cos, simd::cos}};
  for (const rml::exec::Isa isa : runnable_isas())
    for (const auto& [function, lane] : functions)
      for (std::size_t offset : {0, 1, 3, 7}) {
        CAPTURE(rml::exec::isa_name(isa));
        std::vector<float> y(x.size() - offset);
        simd::apply(function, isa, x.data() + offset, y.data(), static_cast<std::int64_t>(y.size()));
        for (std::size_t i = 0; i < y.size(); ++i) CHECK(same_bits(y[i], lane(x[offset + i])));
      }
}

TEST_CASE("exp gives the scalar bits on every instruction set over its range, results near underflow and overflow included") {
  // AVX-512 scales by 2^n in one instruction (vscalefps), the others by two
  // factors: both round p * 2^n once, which this checks where it matters
  // most, where the result is subnormal (x just above ln FLT_MIN) or about to
  // overflow, and on a dense sweep of the whole range (every n).
  std::vector<float> x;
  for (const float edge : {simd::exp_detail::kMin, simd::exp_detail::kMax, -87.0f, 88.0f, 0.0f}) {
    float v = edge;
    for (int i = 0; i < 20000; ++i) v = std::nextafter(v, -INFINITY);
    for (int i = 0; i < 40000; ++i, v = std::nextafter(v, INFINITY)) x.push_back(v);
  }
  for (int i = 0; i <= 200000; ++i) x.push_back(-104.0f + 194.0f * static_cast<float>(i) / 200000);
  std::vector<float> y(x.size());
  for (const rml::exec::Isa isa : runnable_isas()) {
    CAPTURE(rml::exec::isa_name(isa));
    simd::apply(simd::Function::exp, isa, x.data(), y.data(), static_cast<std::int64_t>(x.size()));
    std::size_t differing = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!same_bits(y[i], simd::exp(x[i])) && differing++ < 3) FAIL_CHECK("exp(" << x[i] << ") gave " << y[i]);
    CHECK(differing == 0);
  }
}

TEST_CASE("two-operand arithmetic gives the ops' own scalar bits on every instruction set, NaNs and zeros included") {
  // Every pairing of special values, then random ones; odd offsets put each pair in lanes and in the tail.
  const float special[] = {0.0f, -0.0f, 1.5f, -2.25f, INFINITY, -INFINITY, NAN, -NAN, 1e-40f, 3e38f};
  std::vector<float> a, b;
  for (const float x : special)
    for (const float y : special) a.push_back(x), b.push_back(y);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-4, 4);
  for (int i = 0; i < 77; ++i) a.push_back(uniform(rng)), b.push_back(uniform(rng));
  using simd::Arithmetic;
  const std::pair<Arithmetic, float (*)(float, float)> functions[] = {
      {Arithmetic::add, rml::Add::apply<float>},         {Arithmetic::sub, rml::Sub::apply<float>},
      {Arithmetic::mul, rml::Mul::apply<float>},         {Arithmetic::div, rml::Div::apply},
      {Arithmetic::maximum, rml::Maximum::apply<float>}, {Arithmetic::minimum, rml::Minimum::apply<float>}};
  for (const rml::exec::Isa isa : runnable_isas())
    for (const auto& [function, op] : functions)
      for (std::size_t offset : {0, 1, 3}) {
        CAPTURE(rml::exec::isa_name(isa));
        CAPTURE(static_cast<int>(function));
        std::vector<float> y(a.size() - offset);
        simd::apply(function, isa, a.data() + offset, b.data() + offset, y.data(), static_cast<std::int64_t>(y.size()));
        for (std::size_t i = 0; i < y.size(); ++i) {
          const float x = a[offset + i], z = b[offset + i];
          // Two NaNs give one of them: which is the hardware's and the compiler's operand order.
          const bool same = std::isnan(x) && std::isnan(z) ? std::isnan(y[i]) : same_bits(y[i], op(x, z));
          if (!same) FAIL_CHECK(x << " and " << z << " gave " << y[i]);
        }
      }
  for (const float x : special) CHECK(same_bits(simd::relu(x), rml::Relu::apply(x)));
}

TEST_CASE("softmax rows: the maximum, shift, scale and division in double give the portable loops' bits on every set, nothing past the row written") {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> uniform(-30, 30);
  for (const std::int64_t n : {1, 7, 16, 33, 64, 100}) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (float& v : x) v = uniform(rng);
    if (n > 5) x[3] = NAN, x[4] = -0.0f;  // NaNs are skipped by the maximum
    CAPTURE(n);
    const float max = simd::portable::row_max(x.data(), n);
    CHECK(!std::isnan(max));
    // One float more than the row: writing past it would change it in `got` only.
    std::vector<float> want(x.size() + 1, 7.0f), got(x.size() + 1, 7.0f);
    for (const rml::exec::Isa isa : runnable_isas()) {
      CAPTURE(rml::exec::isa_name(isa));
      CHECK(simd::row_max(isa, x.data(), n) == max);
      simd::portable::shift_row(x.data(), max, want.data(), n);
      simd::shift_row(isa, x.data(), max, got.data(), n);
      CHECK(std::memcmp(got.data(), want.data(), got.size() * 4) == 0);
      simd::portable::scale_row(x.data(), 0.3f, want.data(), n);
      simd::scale_row(isa, x.data(), 0.3f, got.data(), n);
      CHECK(std::memcmp(got.data(), want.data(), got.size() * 4) == 0);
      simd::portable::divide_row(x.data(), 7.123456789, want.data(), n);
      simd::divide_row(isa, x.data(), 7.123456789, got.data(), n);
      CHECK(std::memcmp(got.data(), want.data(), got.size() * 4) == 0);
    }
  }
  const float all_nan[] = {NAN, NAN, NAN};
  CHECK(simd::row_max(rml::exec::active_isa(), all_nan, 3) == -INFINITY);
}

TEST_CASE("fma_row (the depthwise conv's tap) gives the scalar fma's bits on every instruction set") {
  // Odd lengths and offsets put every element both in a vector lane and in the tail;
  // signed zeros and a NaN ride along (fma(w, 0, -0) is +0, which a skipped tap would not give).
  std::vector<float> x(61), acc(61);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = -3.0f + 0.1037f * static_cast<float>(i);
    acc[i] = 1.0f / (1.0f + static_cast<float>(i));
  }
  x[4] = 0.0f, acc[4] = -0.0f;
  x[9] = NAN;
  for (const rml::exec::Isa isa : runnable_isas())
    for (std::size_t offset : {0, 1, 3, 7}) {
      CAPTURE(rml::exec::isa_name(isa));
      std::vector<float> got(acc.begin() + offset, acc.end());
      simd::fma_row(isa, 0.7431f, x.data() + offset, got.data(), static_cast<std::int64_t>(got.size()));
      for (std::size_t i = 0; i < got.size(); ++i) CHECK(same_bits(got[i], std::fma(0.7431f, x[offset + i], acc[offset + i])));
    }
}

TEST_CASE("max_2x2_stride2 (max_pool2d's 2x2 window) gives the scalar tap chain's bits on every instruction set") {
  // A 9 x 88 plane. Row lengths of 1 to 37 windows put windows in full
  // vectors and in masked last ones; signed zeros in both orders (the first
  // taken stays), infinities, and NaNs with a payload and a sign (any NaN tap
  // gives the canonical NaN) ride along. Outputs between rows stay untouched.
  const std::int64_t width = 88, height = 9;
  std::vector<float> plane(width * height);
  for (std::size_t i = 0; i < plane.size(); ++i) plane[i] = std::sin(0.37f * static_cast<float>(i));
  plane[0] = -0.0f, plane[1] = 0.0f, plane[width] = -0.0f, plane[width + 1] = -0.0f;
  plane[2] = 0.0f, plane[3] = -0.0f, plane[width + 2] = -1.0f, plane[width + 3] = -0.0f;
  plane[6] = -INFINITY, plane[width + 7] = INFINITY;
  plane[9] = std::bit_cast<float>(0xFFC00123u);
  plane[2 * width + 12] = NAN;
  plane[3 * width + 30] = std::bit_cast<float>(0x7F800001u);
  const float untouched = 12345.0f;
  for (const rml::exec::Isa isa : runnable_isas())
    for (const std::int64_t offset : {0, 2, 7})
      for (const std::int64_t n : {1, 7, 8, 14, 16, 17, 37}) {
        CAPTURE(rml::exec::isa_name(isa));
        CAPTURE(offset);
        CAPTURE(n);
        // Rows 0, 2, 4, 6 as top rows (stride 2), each with the next row below.
        const std::int64_t rows = 4, out_step = n + 3;
        std::vector<float> got(rows * out_step, untouched);
        simd::max_2x2_stride2(isa, plane.data() + offset, width, 2 * width, got.data(), out_step, rows, n);
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t i = 0; i < out_step; ++i) {
            float want = untouched;
            if (i < n) {
              const float* t = plane.data() + offset + 2 * r * width + 2 * i;
              want = -INFINITY;
              for (float v : {t[0], t[1], t[width], t[width + 1]}) want = (v > want || v != v) ? v : want;
              if (want != want) want = std::bit_cast<float>(0x7FC00000u);
            }
            CHECK(same_bits(got[r * out_step + i], want));
          }
      }
}

TEST_CASE("sums in double, squared deviations (one row or two at once), layer norm rows and side-by-side sums: the same bits on every instruction set") {
  // Lengths around the sixteen chains put elements in whole vector blocks and in
  // the lane-by-lane tail; values spread over many binades so a different
  // grouping would show in the last bits.
  std::vector<float> x(131), scale(131), bias(131);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(1.3f * static_cast<float>(i)) * std::exp2(static_cast<float>(i % 23) - 11.0f);
    scale[i] = 0.5f + 0.01f * static_cast<float>(i);
    bias[i] = -0.25f + 0.003f * static_cast<float>(i);
  }
  // The chains as simd_math.hpp states them, written out here.
  const auto chained = [&](std::size_t offset, std::int64_t n, bool squares, double mean) {
    double chains[16] = {};
    for (std::int64_t i = 0; i < n; ++i) {
      const double v = x[offset + i];
      chains[i % 16] = squares ? std::fma(v - mean, v - mean, chains[i % 16]) : chains[i % 16] + v;
    }
    for (int width = 8; width >= 1; width /= 2)
      for (int j = 0; j < width; ++j) chains[j] += chains[j + width];
    return chains[0];
  };
  for (const rml::exec::Isa isa : runnable_isas())
    for (std::size_t offset : {0, 3})
      for (std::int64_t n : {0, 1, 15, 16, 17, 33, 64, 112, 127}) {
        CAPTURE(rml::exec::isa_name(isa));
        CAPTURE(offset);
        CAPTURE(n);
        const float* row = x.data() + offset;
        const double sum = simd::sum_in_double(isa, row, n);
        CHECK(std::bit_cast<std::uint64_t>(sum) == std::bit_cast<std::uint64_t>(chained(offset, n, false, 0.0)));
        const double mean = n ? sum / double(n) : 0.0;
        CHECK(std::bit_cast<std::uint64_t>(simd::squared_deviations_in_double(isa, row, n, mean)) ==
              std::bit_cast<std::uint64_t>(chained(offset, n, true, mean)));
        // Two rows at once (layer norm's pairs), the second one float on: each row's bits.
        if (offset + 1 + static_cast<std::size_t>(n) <= x.size()) {
          const double means[2] = {mean, 0.25};
          double squares[2];
          simd::squared_deviations_in_double_pair(isa, row, row + 1, n, means, squares);
          CHECK(std::bit_cast<std::uint64_t>(squares[0]) == std::bit_cast<std::uint64_t>(chained(offset, n, true, mean)));
          CHECK(std::bit_cast<std::uint64_t>(squares[1]) == std::bit_cast<std::uint64_t>(chained(offset + 1, n, true, 0.25)));
        }
        for (const bool with_scale : {false, true})
          for (const bool with_bias : {false, true}) {
            const float* s = with_scale ? scale.data() + offset : nullptr;
            const float* b = with_bias ? bias.data() + offset : nullptr;
            std::vector<float> got(n + 1, 7.0f), want(n + 1, 7.0f);
            simd::normalize_row(isa, row, n, mean, 1.7, s, b, got.data());
            simd::normalize_row(rml::exec::Isa::portable, row, n, mean, 1.7, s, b, want.data());
            for (std::int64_t i = 0; i <= n; ++i) CHECK(same_bits(got[i], want[i]));  // and nothing past n written
            if (n > 0 && with_scale && with_bias)
              CHECK(want[0] == static_cast<float>(std::fma((double(row[0]) - mean) * 1.7, double(s[0]), double(b[0]))));
          }
      }
  // Sixteen (or fewer) outputs side by side, terms 9 floats apart; -0 and NaN ride along.
  std::vector<float> grid(9 * 7 + 16);
  for (std::size_t i = 0; i < grid.size(); ++i) grid[i] = std::cos(0.7f * static_cast<float>(i)) * 1e3f;
  grid[2] = -0.0f, grid[11] = -0.0f, grid[20] = NAN;
  for (const rml::exec::Isa isa : runnable_isas())
    for (std::int64_t lanes : {16, 5})
      for (std::int64_t count : {0, 1, 7}) {
        double got[16], want[16];
        simd::sum_columns(isa, grid.data(), 9, count, lanes, got);
        for (std::int64_t l = 0; l < lanes; ++l) {
          want[l] = 0.0;
          for (std::int64_t k = 0; k < count; ++k) want[l] += double(grid[k * 9 + l]);
          CHECK(std::memcmp(&got[l], &want[l], sizeof(double)) == 0);
        }
      }
}

TEST_CASE("store_conv_tile (a direct conv's micro tile to its output) gives x + bias, then relu, on every instruction set") {
  // A 3-row tile of 32 lanes in three segments, one longer than a vector and
  // one across a vector's end; -0, NaN and negatives meet the relu; pixels
  // outside the segments stay untouched.
  const std::int64_t stride = 40, plane = 50;
  std::vector<float> tile(3 * stride);
  for (std::size_t i = 0; i < tile.size(); ++i) tile[i] = std::sin(0.9f * static_cast<float>(i)) * 3.0f;
  tile[1] = -0.0f, tile[stride + 2] = NAN, tile[2 * stride + 20] = -0.0f;
  const float bias[3] = {0.25f, -0.5f, 0.0f};
  const simd::ConvSegment segments[] = {{0, 3, 4}, {5, 19, 10}, {26, 6, 40}};
  const float untouched = 12345.0f;
  for (const rml::exec::Isa isa : runnable_isas())
    for (const bool with_bias : {false, true})
      for (const bool relu : {false, true}) {
        CAPTURE(rml::exec::isa_name(isa));
        std::vector<float> got(3 * plane, untouched), want(3 * plane, untouched);
        simd::store_conv_tile(isa, tile.data(), stride, 3, segments, 3, with_bias ? bias : nullptr, relu, got.data(), plane);
        for (std::int64_t r = 0; r < 3; ++r)
          for (const simd::ConvSegment& s : segments)
            for (std::int64_t l = 0; l < s.count; ++l) {
              float x = tile[r * stride + s.lane + l];
              if (with_bias) x = x + bias[r];
              want[r * plane + s.pixel + l] = relu ? simd::relu(x) : x;
            }
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(same_bits(got[i], want[i]));
      }
}

TEST_CASE("pad_plane (a conv's padded plane) copies the columns asked for, zeros the rest, writes nothing past its rows") {
  // Source planes 5 rows high, 3 to 37 columns (a vector's width, either
  // side of it, several vectors); each padded row is the source row moved by
  // `shift` columns, rows past the source zero, rows 2 above it padding.
  const float untouched = 12345.0f;
  for (const std::int64_t width : {3, 7, 8, 16, 17, 37})
    for (const std::int64_t shift : {-2, -1, 0, 1, 3})
      for (const std::int64_t extra : {0, 2, 5}) {
        const std::int64_t src_rows = 5, top = 2, rows = 9, row_w = width + extra;
        std::vector<float> source(static_cast<std::size_t>(src_rows * width));
        for (std::size_t i = 0; i < source.size(); ++i) source[i] = 1.0f + static_cast<float>(i);
        const std::int64_t first = std::clamp<std::int64_t>(-shift, 0, row_w);
        const std::int64_t last = std::clamp<std::int64_t>(width - shift, first, row_w);
        std::vector<float> want(static_cast<std::size_t>(rows * row_w + 8), untouched);
        for (std::int64_t h = 0; h < rows; ++h)
          for (std::int64_t w = 0; w < row_w; ++w) {
            const bool inside = h >= top && h - top < src_rows && w >= first && w < last;
            want[h * row_w + w] = inside ? source[(h - top) * width + w + shift] : 0.0f;
          }
        for (const rml::exec::Isa isa : runnable_isas()) {
          CAPTURE(rml::exec::isa_name(isa));
          CAPTURE(width);
          CAPTURE(shift);
          CAPTURE(extra);
          std::vector<float> got(want.size(), untouched);
          simd::pad_plane(isa, source.data() + shift, width, src_rows, top, first, last, got.data(), row_w, rows);
          CHECK(got == want);
        }
      }
}

TEST_CASE("every instruction set's GEMM kernels give the portable kernels' bits, A packed or read in place") {
  using namespace rml::exec;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (const std::int64_t m : {1, 5, 13, 16, 25, 80})  // 80: row blocks past kMC, then rows left to pack
    for (const std::int64_t k : {1, 300})
      for (const std::int64_t n : {3, 8, 9, 10, 16, 33, 100}) {  // 9 to 16: two 8-wide narrow panels, or one 16-wide
        CAPTURE(m);
        CAPTURE(k);
        CAPTURE(n);
        std::vector<float> a(m * k), b(k * n), scratch(gemm_scratch_bytes(k) / 4), portable(m * n);
        for (float& v : a) v = uniform(rng);
        for (float& v : b) v = uniform(rng);
        for (const Isa isa : runnable_isas()) {
          CAPTURE(isa_name(isa));
          const PackedB packed(b.data(), k, n, n, isa);
          CHECK(packed.kernels()->isa == (isa == Isa::avx512 && n <= 8 ? Isa::avx2 : isa));
          const std::int64_t nr = isa == Isa::portable ? 16 : n <= 8 ? 8 : n <= 16 ? (isa == Isa::avx512 ? 16 : 8)
                                                                                   : (isa == Isa::avx512 ? 32 : 16);
          CHECK(packed.kernels()->nr == nr);
          std::vector<float> c(m * n);
          gemm(a.data(), k, view(packed), c.data(), n, 0, m, 0, n, scratch.data());
          if (isa == Isa::portable) portable = c;
          CHECK(std::memcmp(c.data(), portable.data(), c.size() * 4) == 0);
          // a rectangle inside: partial panels at both sides, rows from an odd offset
          const std::int64_t m0 = m / 3, n0 = n / 3, n1 = n - n / 4;
          std::vector<float> part(m * n, 7.0f);
          gemm(a.data(), k, view(packed), part.data(), n, m0, m, n0, n1, scratch.data());
          for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
              const bool inside = i >= m0 && j >= n0 && j < n1;
              if (!same_bits(part[i * n + j], inside ? portable[i * n + j] : 7.0f)) FAIL_CHECK("element " << i << "," << j);
            }
        }
      }
}

TEST_CASE("RML_ISA lowers the instruction set, never raises it, and names the choices when wrong") {
  using rml::exec::Isa;
  using rml::exec::choose_isa;
  CHECK(choose_isa(Isa::avx512, nullptr) == Isa::avx512);
  CHECK(choose_isa(Isa::avx512, "") == Isa::avx512);
  CHECK(choose_isa(Isa::avx512, "avx2") == Isa::avx2);
  CHECK(choose_isa(Isa::avx2, "portable") == Isa::portable);
  CHECK(choose_isa(Isa::avx2, "avx512") == Isa::avx2);
  CHECK_THROWS_WITH_AS(choose_isa(Isa::avx2, "sse9"), "RML_ISA='sse9' is not one of portable, avx2, avx512",
                       rml::Error);
  if (rml::exec::cpu_isa() != Isa::avx512)
    CHECK_THROWS_AS(rml::exec::gemm_detail::kernels(Isa::avx512), rml::Error);
}

TEST_CASE("a single-row product gives the tiled path's bits, for any K, N and column range") {
  using namespace rml::exec;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (const std::int64_t k : {1, 7, 256, 300, 513})
    for (const std::int64_t n : {1, 15, 16, 17, 64, 100, 1024}) {
      CAPTURE(k);
      CAPTURE(n);
      std::vector<float> a(3 * k), b(k * n), tiled(3 * n), rows(3 * n), part(2 * n, 7.0f);
      for (float& v : a) v = uniform(rng);
      for (float& v : b) v = uniform(rng);
      const PackedB packed(b.data(), k, n, n);
      std::vector<float> scratch(gemm_scratch_bytes(k) / 4);
      gemm(a.data(), k, view(packed), tiled.data(), n, 0, 3, 0, n, scratch.data());  // three rows: tiled
      for (std::int64_t r = 0; r < 3; ++r) gemm(a.data(), k, view(packed), rows.data(), n, r, r + 1, 0, n, scratch.data());
      CHECK(std::memcmp(tiled.data(), rows.data(), tiled.size() * 4) == 0);
      const std::int64_t lo = n / 3, hi = n - n / 4;  // a column range inside one row
      gemm(a.data(), k, view(packed), part.data(), n, 1, 2, lo, hi, scratch.data());  // row 1 only
      for (std::int64_t j = 0; j < n; ++j) CHECK(same_bits(part[n + j], j >= lo && j < hi ? tiled[n + j] : 7.0f));
    }
}

TEST_CASE("a left operand packed ahead gives the bits of packing it per call, for any row range") {
  using namespace rml::exec;
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (const std::int64_t m : {5, 32, 96, 150})
    for (const std::int64_t k : {9, 144, 300}) {
      const std::int64_t n = 196;
      CAPTURE(m);
      CAPTURE(k);
      std::vector<float> a(m * k), b(k * n), per_call(m * n, 0.0f), ahead(m * n, 0.0f);
      for (float& v : a) v = uniform(rng);
      for (float& v : b) v = uniform(rng);
      const PackedB packed_b(b.data(), k, n, n);
      std::vector<float> scratch(gemm_scratch_bytes(k) / 4);
      const std::int64_t m0 = m / 3, m1 = m;  // a row range, as a convolution's row tile
      gemm(a.data(), k, view(packed_b), per_call.data(), n, m0, m1, 3, n - 5, scratch.data());
      gemm(PackedA(a.data(), k, m0, m1, k), view(packed_b), ahead.data(), n, 3, n - 5);
      CHECK(std::memcmp(per_call.data(), ahead.data(), per_call.size() * 4) == 0);
    }
}

TEST_CASE("GEMM tiles: one thread keeps 96 x 256; with two, the busiest worker's columns are as few as whole panels allow") {
  using namespace rml::exec;
  const GemmTiles one = gemm_tiles(16, 784, 512, 1, 1, 32);
  CHECK(one.rows == 96);
  CHECK(one.cols == 256);
  // 16 x 784 on two workers: 256-wide tiles leave one 512 columns; two tiles of 416 and 368 leave it 416.
  CHECK(gemm_tiles(16, 784, 512, 1, 2, 32).cols == 416);
  // Already even (1024 = 4 x 256) or many row tiles: unchanged.
  CHECK(gemm_tiles(16, 1024, 256, 1, 2, 32).cols == 256);
  CHECK(gemm_tiles(1024, 1024, 64, 1, 2, 32).cols == 256);
  CHECK(gemm_tiles(1024, 768, 256, 1, 2, 32).cols == 256);  // 33 tiles: their shape matters more than evenness
  // Whatever the sizes, tiles are whole panels and cover N in as many tiles as a worker-even split needs.
  for (const std::int64_t n : {10, 33, 300, 784, 1000, 4096})
    for (const int threads : {2, 3, 4}) {
      const GemmTiles t = gemm_tiles(16, n, 512, 1, threads, 32);
      CAPTURE(n);
      CAPTURE(threads);
      CHECK(t.cols % 32 == 0);
      const std::int64_t tiles = (n + t.cols - 1) / t.cols;
      const std::int64_t busiest = (tiles + threads - 1) / threads * std::min(t.cols, n);
      const std::int64_t at_256 = ((n + 255) / 256 + threads - 1) / threads * std::min<std::int64_t>(256, n);
      CHECK(busiest <= at_256);
    }
}

TEST_CASE("repeat_pairs (nearest upsampling of a row by 2) repeats each float, reads and writes nothing past n") {
  using namespace rml::exec;
  std::vector<float> src(64);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) + 0.5f;
  for (const Isa isa : runnable_isas())
    for (std::int64_t n = 0; n <= 70; ++n) {
      CAPTURE(isa_name(isa));
      CAPTURE(n);
      // The source ends where the last float read lies, so ASan sees any read past it.
      std::vector<float> source(src.begin(), src.begin() + (n + 1) / 2);
      std::vector<float> dst(static_cast<std::size_t>(n) + 8, -7.0f);
      simd::repeat_pairs(isa, source.data(), dst.data(), n);
      bool right = true;
      for (std::int64_t i = 0; i < n; ++i) right = right && dst[i] == src[i / 2];
      CHECK(right);
      CHECK(std::all_of(dst.begin() + n, dst.end(), [](float v) { return v == -7.0f; }));
    }
}
