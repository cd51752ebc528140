// Vectorised f32 maths for the executor: erf, exp, tanh, sigmoid and both
// GELUs. First erf: erf(x) is taken
// as x * P(x^2) / Q(x^2) on x clamped to [-4, 4] (a rational minimax
// approximation of the kind XLA and Eigen use; its error is a few ulp), eight
// lanes at a time with AVX2/FMA. Tails and non-AVX builds run the same
// formula lane by lane with the same operations in the same order (every
// multiply-add an explicit fma), so an element's result never depends on
// where it sits in a block, and results stay bit-identical for any split of
// the work across threads.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace rml::exec::simd {

namespace erf_detail {
// Numerator P(t) and denominator Q(t) in t = x^2, highest power first.
inline constexpr float kP[] = {-2.72614225801306e-10f, 2.77068142495902e-08f, -2.10102402082508e-06f,
                               -5.69250639462346e-05f, -7.34990630326855e-04f, -2.95459980854025e-03f,
                               -1.60960333262415e-02f};
inline constexpr float kQ[] = {-1.45660718464996e-05f, -2.13374055278905e-04f, -1.68282697438203e-03f,
                               -7.37332916720468e-03f, -1.42647390514189e-02f};
inline constexpr float kClamp = 4.0f;
}  // namespace erf_detail

/// One lane of the vector formula.
inline float erf(float x) {
  using namespace erf_detail;
  if (std::isnan(x)) return x;
  const float c = std::fmin(std::fmax(x, -kClamp), kClamp);
  const float t = c * c;
  float p = kP[0];
  for (int i = 1; i < 7; ++i) p = std::fma(p, t, kP[i]);
  float q = kQ[0];
  for (int i = 1; i < 5; ++i) q = std::fma(q, t, kQ[i]);
  return (c * p) / q;
}

inline float gelu_erf(float x) { return (0.5f * x) * (1.0f + simd::erf(x * 0.70710678118654752f)); }

#if defined(__AVX2__) && defined(__FMA__)
inline __m256 erf8(__m256 x) {
  using namespace erf_detail;
  const __m256 c = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-kClamp)), _mm256_set1_ps(kClamp));
  const __m256 t = _mm256_mul_ps(c, c);
  __m256 p = _mm256_set1_ps(kP[0]);
  for (int i = 1; i < 7; ++i) p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(kP[i]));
  __m256 q = _mm256_set1_ps(kQ[0]);
  for (int i = 1; i < 5; ++i) q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(kQ[i]));
  const __m256 y = _mm256_div_ps(_mm256_mul_ps(c, p), q);
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));  // NaN stays NaN
}

inline __m256 gelu_erf8(__m256 x) {
  const __m256 half_x = _mm256_mul_ps(_mm256_set1_ps(0.5f), x);
  const __m256 e = erf8(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f)));
  return _mm256_mul_ps(half_x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}
#endif

// ---- exp, tanh, sigmoid and the tanh GELU ----
//
// exp(x) = 2^n * e^r with n = round(x / ln 2) and r = x - n ln 2 (ln 2 split
// in two so r is exact to a few ulp), e^r by its degree-7 Taylor polynomial on
// |r| <= ln(2)/2 (truncation 5e-9 relative); 2^n is applied as two factors so
// that neither leaves the normal range. Results that would be denormal (x below
// ln FLT_MIN = -87.34) are flushed to 0; above ln FLT_MAX the result is inf.
// tanh: odd; for |x| < 0.5 its Taylor series to x^13 (error below 1e-7
// relative), above 1 - 2 / (exp(2|x|) + 1). sigmoid(x) = 1 / (1 + exp(-x)).
// The scalar versions repeat the vector operations one by one, so a result
// never depends on its position in a block. tests/test_simd_math.cpp states
// and checks each function's error bound against a double-precision reference.

namespace exp_detail {
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f;          // few bits: n * kLn2Hi is exact
inline constexpr float kLn2Lo = -2.12194440e-4f;       // ln 2 - kLn2Hi
inline constexpr float kMin = -87.3365447505531f;      // ln FLT_MIN
inline constexpr float kMax = 88.7228391116729996f;    // ln FLT_MAX
// 1/k! for k = 7 down to 0.
inline constexpr float kTaylor[] = {1.0f / 5040, 1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f};
}  // namespace exp_detail

namespace tanh_detail {
inline constexpr float kSmall = 0.5f;
// Taylor coefficients of tanh(x) / x in t = x^2, highest power first (x^12 .. x^0).
inline constexpr float kSeries[] = {21844.0f / 6081075, -1382.0f / 155925, 62.0f / 2835, -17.0f / 315,
                                    2.0f / 15,          -1.0f / 3,          1.0f};
}  // namespace tanh_detail

/// 2^n for an integral n in [-252, 254], as two normal factors (a, b).
inline void pow2_factors(float n, float& a, float& b) {
  const auto total = static_cast<std::int32_t>(n);
  const std::int32_t half = total >> 1;  // arithmetic shift, as _mm256_srai_epi32
  a = std::bit_cast<float>(static_cast<std::uint32_t>(half + 127) << 23);
  b = std::bit_cast<float>(static_cast<std::uint32_t>(total - half + 127) << 23);
}

/// One lane of the vector exp.
inline float exp(float x) {
  using namespace exp_detail;
  if (std::isnan(x)) return x;
  const float c = std::fmin(std::fmax(x, kMin), kMax);
  const float n = std::nearbyint(c * kLog2e);
  float r = std::fma(n, -kLn2Hi, c);
  r = std::fma(n, -kLn2Lo, r);
  float p = kTaylor[0];
  for (int i = 1; i < 8; ++i) p = std::fma(p, r, kTaylor[i]);
  float a, b;
  pow2_factors(n, a, b);
  const float y = (p * a) * b;
  return x < kMin ? 0.0f : (x > kMax ? INFINITY : y);
}

/// One lane of the vector tanh.
inline float tanh(float x) {
  using namespace tanh_detail;
  if (std::isnan(x)) return x;
  const float ax = std::fabs(x);
  const float t = ax * ax;
  float s = kSeries[0];
  for (int i = 1; i < 7; ++i) s = std::fma(s, t, kSeries[i]);
  const float small = ax * s;
  const float large = 1.0f - 2.0f / (simd::exp(2.0f * ax) + 1.0f);
  return std::copysign(ax < kSmall ? small : large, x);
}

inline float sigmoid(float x) { return std::isnan(x) ? x : 1.0f / (1.0f + simd::exp(-x)); }

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
inline float gelu_tanh(float x) {
  const float inner = 0.79788456080286536f * std::fma(0.044715f * x, x * x, x);
  return (0.5f * x) * (1.0f + simd::tanh(inner));
}

#if defined(__AVX2__) && defined(__FMA__)
inline __m256 exp8(__m256 x) {
  using namespace exp_detail;
  const __m256 c = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kMin)), _mm256_set1_ps(kMax));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(c, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Hi), c);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(-kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kTaylor[0]);
  for (int i = 1; i < 8; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kTaylor[i]));
  const __m256i total = _mm256_cvtps_epi32(n);  // exact: n is integral
  const __m256i half = _mm256_srai_epi32(total, 1);
  const __m256 a = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, _mm256_set1_epi32(127)), 23));
  const __m256 b = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(total, half), _mm256_set1_epi32(127)), 23));
  __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, a), b);
  y = _mm256_blendv_ps(y, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(kMin), _CMP_LT_OQ));
  y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, _mm256_set1_ps(kMax), _CMP_GT_OQ));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));  // NaN stays NaN
}

inline __m256 tanh8(__m256 x) {
  using namespace tanh_detail;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 ax = _mm256_andnot_ps(sign, x);
  const __m256 t = _mm256_mul_ps(ax, ax);
  __m256 s = _mm256_set1_ps(kSeries[0]);
  for (int i = 1; i < 7; ++i) s = _mm256_fmadd_ps(s, t, _mm256_set1_ps(kSeries[i]));
  const __m256 small = _mm256_mul_ps(ax, s);
  const __m256 e = exp8(_mm256_mul_ps(_mm256_set1_ps(2.0f), ax));
  const __m256 large = _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
  const __m256 magnitude = _mm256_blendv_ps(large, small, _mm256_cmp_ps(ax, _mm256_set1_ps(kSmall), _CMP_LT_OQ));
  const __m256 y = _mm256_or_ps(magnitude, _mm256_and_ps(sign, x));  // copysign
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

inline __m256 sigmoid8(__m256 x) {
  const __m256 e = exp8(_mm256_xor_ps(x, _mm256_set1_ps(-0.0f)));
  const __m256 y = _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));  // NaN stays the same NaN
}

inline __m256 gelu_tanh8(__m256 x) {
  const __m256 cubic = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(0.044715f), x), _mm256_mul_ps(x, x), x);
  const __m256 th = tanh8(_mm256_mul_ps(_mm256_set1_ps(0.79788456080286536f), cubic));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), th));
}
#endif

// ---- blocks: y[0:n] = f(x[0:n]) ----
// Eight lanes at a time where AVX2 is built in, the same formula lane by lane
// for the rest.

#if defined(__AVX2__) && defined(__FMA__)
template <__m256 (*Vector)(__m256), float (*Lane)(float)>
inline void map_block(const float* x, float* y, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, Vector(_mm256_loadu_ps(x + i)));
  for (; i < n; ++i) y[i] = Lane(x[i]);
}
inline void erf_block(const float* x, float* y, std::int64_t n) { map_block<erf8, simd::erf>(x, y, n); }
inline void gelu_erf_block(const float* x, float* y, std::int64_t n) { map_block<gelu_erf8, simd::gelu_erf>(x, y, n); }
inline void exp_block(const float* x, float* y, std::int64_t n) { map_block<exp8, simd::exp>(x, y, n); }
inline void tanh_block(const float* x, float* y, std::int64_t n) { map_block<tanh8, simd::tanh>(x, y, n); }
inline void sigmoid_block(const float* x, float* y, std::int64_t n) { map_block<sigmoid8, simd::sigmoid>(x, y, n); }
inline void gelu_tanh_block(const float* x, float* y, std::int64_t n) { map_block<gelu_tanh8, simd::gelu_tanh>(x, y, n); }
#else
template <float (*Lane)(float)>
inline void map_block(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = Lane(x[i]);
}
inline void erf_block(const float* x, float* y, std::int64_t n) { map_block<simd::erf>(x, y, n); }
inline void gelu_erf_block(const float* x, float* y, std::int64_t n) { map_block<simd::gelu_erf>(x, y, n); }
inline void exp_block(const float* x, float* y, std::int64_t n) { map_block<simd::exp>(x, y, n); }
inline void tanh_block(const float* x, float* y, std::int64_t n) { map_block<simd::tanh>(x, y, n); }
inline void sigmoid_block(const float* x, float* y, std::int64_t n) { map_block<simd::sigmoid>(x, y, n); }
inline void gelu_tanh_block(const float* x, float* y, std::int64_t n) { map_block<simd::gelu_tanh>(x, y, n); }
#endif

}  // namespace rml::exec::simd
