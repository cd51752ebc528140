// Vectorised f32 erf for the executor's elementwise blocks. erf(x) is taken
// as x * P(x^2) / Q(x^2) on x clamped to [-4, 4] (a rational minimax
// approximation of the kind XLA and Eigen use; its error is a few ulp), eight
// lanes at a time with AVX2/FMA. Tails and non-AVX builds run the same
// formula lane by lane with the same operations in the same order (every
// multiply-add an explicit fma), so an element's result never depends on
// where it sits in a block, and results stay bit-identical for any split of
// the work across threads.
#pragma once

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

/// y[0:n] = erf(x[0:n]) and y[0:n] = gelu(x[0:n]) (erf form): eight lanes at
/// a time where AVX2 is built in, the same formula lane by lane for the rest.
inline void erf_block(const float* x, float* y, std::int64_t n) {
  std::int64_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, erf8(_mm256_loadu_ps(x + i)));
#endif
  for (; i < n; ++i) y[i] = simd::erf(x[i]);
}

inline void gelu_erf_block(const float* x, float* y, std::int64_t n) {
  std::int64_t i = 0;
#if defined(__AVX2__) && defined(__FMA__)
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, gelu_erf8(_mm256_loadu_ps(x + i)));
#endif
  for (; i < n; ++i) y[i] = simd::gelu_erf(x[i]);
}

}  // namespace rml::exec::simd
