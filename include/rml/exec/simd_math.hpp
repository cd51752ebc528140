// Vectorised f32 maths for the executor: erf, exp, tanh, sigmoid, log, sin,
// cos and both GELUs. First erf: erf(x) is taken
// as x * P(x^2) / Q(x^2) on x clamped to [-4, 4] (a rational minimax
// approximation of the kind XLA and Eigen use; its error is a few ulp).
// The vector forms (exec/simd_lanes.inl: 16 lanes with AVX-512, 8 with AVX2,
// picked at run time as exec/isa.hpp says) and the scalar forms here, which
// tails and the portable path run, take the same operations in the same order
// (every multiply-add an explicit fma), so an element's result never depends
// on where it sits in a block or on the instruction set, and results stay
// bit-identical for any split of the work across threads.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "rml/exec/isa.hpp"

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
  const float c = std::min(std::max(x, -kClamp), kClamp);  // x is not NaN here: no libm call needed
  const float t = c * c;
  float p = kP[0];
  for (int i = 1; i < 7; ++i) p = std::fma(p, t, kP[i]);
  float q = kQ[0];
  for (int i = 1; i < 5; ++i) q = std::fma(q, t, kQ[i]);
  return (c * p) / q;
}

inline float gelu_erf(float x) { return (0.5f * x) * (1.0f + simd::erf(x * 0.70710678118654752f)); }


// ---- exp, tanh, sigmoid and the tanh GELU ----
//
// exp(x) = 2^n * e^r with n = round(x / ln 2) and r = x - n ln 2 (ln 2 split
// in two so r is exact to a few ulp), e^r by its degree-7 Taylor polynomial on
// |r| <= ln(2)/2 (truncation 5e-9 relative); 2^n is applied as two factors so
// that neither leaves the normal range (AVX-512's vscalefps rounds p * 2^n
// once as well, so it gives the same bits in one instruction). Results that
// would be denormal (x below ln FLT_MIN = -87.34) are flushed to 0; above
// ln FLT_MAX the result is inf.
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
  const float c = std::min(std::max(x, kMin), kMax);  // x is not NaN here
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

/// 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed as
/// x / (1 + e^(-2u)) (the same function): one exp and a division instead of
/// tanh's two branches, and no cancellation in 1 + tanh(u) where u < 0.
inline float gelu_tanh(float x) {
  const float inner = 0.79788456080286536f * std::fma(0.044715f * x, x * x, x);
  return x / (1.0f + simd::exp(-2.0f * inner));
}

// ---- log ----
//
// x = m * 2^k with m in [sqrt(1/2), sqrt(2)) (taken from x's bits; a
// subnormal x is first scaled by 2^23), so f = m - 1 is in [-0.293, 0.415]
// and log x = k ln 2 + log(1 + f), where log(1 + f) = f - f^2/2 + f^3 P(f)
// with P of degree 7 (fitted by weighted least squares on that interval:
// truncation 7.4e-9 relative). The small terms are added first and k ln 2
// last, ln 2 split in two so that k * kLn2Hi is exact. x < 0 gives NaN, +-0
// gives -inf, +inf gives +inf. tests/test_simd_math.cpp states the bound.

namespace log_detail {
inline constexpr std::uint32_t kSqrtHalfBits = 0x3f3504f3;  // sqrt(1/2) as f32: where m starts
inline constexpr float kMinNormal = std::numeric_limits<float>::min();
inline constexpr float kTwo23 = 8388608.0f;  // subnormals times this are normal
// P's coefficients, highest power first.
inline constexpr float kP[] = {-0.07362867891788483f, 0.1262032687664032f, -0.13202103972434998f,
                               0.14227114617824554f,  -0.16621370613574982f, 0.19999825954437256f,
                               -0.2500085234642029f,  0.3333335518836975f};
}  // namespace log_detail

/// k and m with x = m * 2^k, m in [sqrt(1/2), sqrt(2)), for a positive normal
/// x (other x give some k and m, which log does not use): one lane of
/// V::split_exponent.
inline void split_exponent(float x, float& k, float& m) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  const std::int32_t e = std::bit_cast<std::int32_t>(bits - log_detail::kSqrtHalfBits) >> 23;  // arithmetic shift
  m = std::bit_cast<float>(bits - (static_cast<std::uint32_t>(e) << 23));
  k = static_cast<float>(e);
}

/// One lane of the vector log.
inline float log(float x) {
  using namespace log_detail;
  if (std::isnan(x)) return x;
  const bool subnormal = x < kMinNormal;
  float k, m;
  split_exponent(subnormal ? x * kTwo23 : x, k, m);
  if (subnormal) k = k - 23.0f;
  const float f = m - 1.0f;
  const float z = f * f;
  float p = kP[0];
  for (int i = 1; i < 8; ++i) p = std::fma(p, f, kP[i]);
  float y = (f * z) * p;
  y = std::fma(-0.5f, z, y);
  y = std::fma(k, exp_detail::kLn2Lo, y);
  const float r = std::fma(k, exp_detail::kLn2Hi, f + y);
  if (x < 0.0f) return std::numeric_limits<float>::quiet_NaN();
  if (x == 0.0f) return -INFINITY;
  return x == INFINITY ? x : r;
}

// ---- sin and cos ----
//
// q = round(x * 2/pi), r = x - q pi/2 (pi/2 in three parts, each product
// taken off by an fma; the first part has 9 bits, so q * kPio2Hi is exact
// while |q| < 2^15), r in [-pi/4, pi/4]; then sin r = r + r^3 S(r^2) and
// cos r = 1 - r^2/2 + r^4 C(r^2), S and C of degree 3 (fitted like log's P:
// truncation 3.6e-9 and 7e-10 relative), chosen and signed by q mod 4
// (cos x is sin x a quadrant on). Beyond kMaxReduced (and for inf and NaN)
// std::sin / std::cos of the float, in the vector form lane by lane: the same
// bits either way.

namespace sincos_detail {
inline constexpr float k2OverPi = 0.636619772367581343f;
inline constexpr float kPio2Hi = 1.5703125f;
inline constexpr float kPio2Mid = 4.83826792e-4f;
inline constexpr float kPio2Lo = 2.56334407e-12f;
inline constexpr float kMaxReduced = 32768.0f;  // |q| < 2^15
// S and C, highest power first.
inline constexpr float kS[] = {2.7180080905964132e-06f, -0.0001983929832931608f, 0.008333329111337662f,
                               -0.1666666716337204f};
inline constexpr float kC[] = {-2.720371981013159e-07f, 2.4799432139843702e-05f, -0.0013888883404433727f,
                               0.0416666679084301f};
}  // namespace sincos_detail

/// sin(x) (cos_shift 0) or cos(x) (cos_shift 1) for |x| <= kMaxReduced: one
/// lane of the vector form.
inline float sin_quadrant(float x, std::int32_t cos_shift) {
  using namespace sincos_detail;
  const float q = std::nearbyint(x * k2OverPi);
  float r = std::fma(q, -kPio2Hi, x);
  r = std::fma(q, -kPio2Mid, r);
  r = std::fma(q, -kPio2Lo, r);
  const float u = r * r;
  float s = kS[0], c = kC[0];
  for (int i = 1; i < 4; ++i) s = std::fma(s, u, kS[i]);
  for (int i = 1; i < 4; ++i) c = std::fma(c, u, kC[i]);
  const float sin_r = std::fma(r * u, s, r);
  const float cos_r = std::fma(u * u, c, std::fma(-0.5f, u, 1.0f));
  const std::int32_t n = static_cast<std::int32_t>(q) + cos_shift;
  const float v = (n & 1) ? cos_r : sin_r;
  if (cos_shift == 0 && x == 0.0f) return x;  // sin(-0) = -0 (r lost the sign)
  return (n & 2) ? -v : v;
}
inline float sin(float x) {
  return std::fabs(x) <= sincos_detail::kMaxReduced ? sin_quadrant(x, 0) : std::sin(x);
}
inline float cos(float x) {
  return std::fabs(x) <= sincos_detail::kMaxReduced ? sin_quadrant(x, 1) : std::cos(x);
}

// ---- sums and row statistics in double ----
//
// A sum of n floats runs in sixteen chains of double adds, element i into
// chain i % 16 (sixteen keep a vector adder busy: two AVX-512 or four AVX2
// registers of doubles), and the chains are combined pairwise: chain j with
// j + 8, then j + 4, j + 2, j + 1. A squared deviation (v - mean)^2 enters its
// chain by an explicit fma, so no compiler's contraction choice can change it.
// Every instruction set adds the same terms to the same chains in the same
// order (whole blocks of sixteen in vectors, the tail lane by lane) and
// combines them alike, so a sum's bits depend only on the data. Used by the
// reductions, softmax and layer norm.

namespace sum_detail {
inline constexpr std::int64_t kChains = 16;

/// chains[i % 16] += x[i], or the squared deviation from `mean`, for i in [first, n).
template <bool Squares>
inline void add_lanes(const float* x, std::int64_t first, std::int64_t n, double mean, double* chains) {
  for (std::int64_t i = first; i < n; ++i) {
    double& chain = chains[i % kChains];
    if constexpr (Squares) {
      const double d = double(x[i]) - mean;
      chain = std::fma(d, d, chain);
    } else {
      chain += double(x[i]);
    }
  }
}

inline double combine(double* chains) {
  for (std::int64_t width = kChains / 2; width >= 1; width /= 2)
    for (std::int64_t j = 0; j < width; ++j) chains[j] += chains[j + width];
  return chains[0];
}

/// One element of layer norm: (v - mean) * inv, then times the scale and plus
/// the bias where there are those (one fma when both), rounded to f32 once.
template <bool Scale, bool Bias>
inline float normalize(float v, double mean, double inv, float scale, float bias) {
  const double t = (double(v) - mean) * inv;
  if constexpr (Scale && Bias) return float(std::fma(t, double(scale), double(bias)));
  else if constexpr (Scale) return float(t * double(scale));
  else if constexpr (Bias) return float(t + double(bias));
  else return float(t);
}
}  // namespace sum_detail

// ---- max pooling ----

/// max_pool2d's step: the tap replaces the running maximum when greater or
/// NaN (so a NaN sticks, and of -0 and +0 the first taken stays).
inline float max_step(float acc, float v) { return (v > acc || v != v) ? v : acc; }

/// The maximum of four taps in this order, NaN made the canonical NaN.
inline float max_2x2(float a, float b, float c, float d) {
  const float acc = max_step(max_step(max_step(a, b), c), d);
  return acc != acc ? std::numeric_limits<float>::quiet_NaN() : acc;
}

// ---- a direct convolution's output ----

/// Lanes [lane, lane + count) of a micro tile's row go to output pixels
/// [pixel, pixel + count) of that row's channel plane.
struct ConvSegment {
  std::int64_t lane, count, pixel;
};

/// Relu as ops/elementwise.hpp's Relu::apply: NaN stays NaN, -0 becomes +0.
inline float relu(float x) { return x > 0 ? x : (x != x ? x : 0.0f); }

/// A conv_taps image whose rows hold no padding columns: rows are `width`
/// output pixels wide, taps come in threes (c, i, j = 0, 1, 2), tap j reads
/// its output pixel's row at some column shift, and the lanes whose column
/// falls off the row read zero instead (what the padding would hold).
/// `bits[column * 3 + j]`: which of 64 lanes from a pixel at that column
/// read tap j's row (bit l for lane l). `first_column`: the run's first
/// pixel's column.
struct ConvColumns {
  const std::uint64_t* bits;
  std::int64_t width, first_column;
};

/// Whether conv_taps reads rows with masked edges on this instruction set:
/// with AVX-512, where a masked load costs what a plain one does and eight
/// mask registers hold the masks. AVX2's masks would take three of its
/// sixteen vector registers (measured: the bench cnn and clip convs 7-11 %
/// slower than from column-shifted copies).
inline bool masked_row_edges(Isa isa) { return isa == Isa::avx512; }

/// Whether conv_taps_tails packs several images' last pixels into one vector
/// on this instruction set: with AVX-512, where a run's last vector holds
/// up to 15 idle lanes (the bench cnn's 14x14 planes: 4 of 16 used).
inline bool packs_image_tails(Isa isa) { return isa == Isa::avx512; }
/// The lanes of the vector conv_taps_tails fills (AVX-512's).
inline constexpr std::int64_t kTailLanes = 16;

/// ConvColumns' bits for a 3-wide window whose taps read columns shifted by
/// shift[j] (j * dilation - left pad) on rows `width` wide.
inline std::vector<std::uint64_t> conv_column_bits(std::int64_t width, const std::int64_t (&shift)[3]) {
  std::vector<std::uint64_t> bits(static_cast<std::size_t>(width * 3), 0);
  for (std::int64_t column = 0; column < width; ++column)
    for (int j = 0; j < 3; ++j)
      for (std::int64_t l = 0; l < 64; ++l) {
        const std::int64_t read = (column + l) % width + shift[j];
        if (read >= 0 && read < width) bits[static_cast<std::size_t>(column * 3 + j)] |= std::uint64_t{1} << l;
      }
  return bits;
}

/// conv_taps' output channels per pass, and how its weights are laid out:
/// per block of this many channels, per tap, the block's weights (zeros past
/// the last channel).
inline constexpr int kConvTapChannels = 8;

/// weights [outputs][taps] (row-major) in conv_taps' layout.
inline std::vector<float> pack_conv_taps(const float* weights, std::int64_t outputs, std::int64_t taps) {
  const std::int64_t blocks = (outputs + kConvTapChannels - 1) / kConvTapChannels;
  std::vector<float> packed(static_cast<std::size_t>(blocks * taps * kConvTapChannels), 0.0f);
  for (std::int64_t o = 0; o < outputs; ++o)
    for (std::int64_t t = 0; t < taps; ++t)
      packed[static_cast<std::size_t>(((o / kConvTapChannels) * taps + t) * kConvTapChannels + o % kConvTapChannels)] =
          weights[o * taps + t];
  return packed;
}

// ---- blocks: y[0:n] = f(x[0:n]) on the process's instruction set ----

enum class Function { erf, gelu_erf, exp, tanh, sigmoid, gelu_tanh, relu, log, sin, cos };

// ---- blocks of two operands: y[0:n] = f(a[0:n], b[0:n]) ----
//
// The arithmetic elementwise groups run most (bias and residual adds, scales,
// clamps): exactly rounded, or one operand chosen, so a vector lane is the
// scalar's bits. NaN rules as ops/elementwise.hpp's Maximum and Minimum;
// where both operands are NaN, add and mul give either (so do scalar loops,
// whose operand order is the compiler's).

enum class Arithmetic { add, sub, mul, div, maximum, minimum };

inline float add(float a, float b) { return a + b; }
inline float sub(float a, float b) { return a - b; }
inline float mul(float a, float b) { return a * b; }
inline float div(float a, float b) { return a / b; }
inline float maximum(float a, float b) { return a != a ? a : (b != b ? b : (a < b ? b : a)); }
inline float minimum(float a, float b) { return a != a ? a : (b != b ? b : (b < a ? b : a)); }

namespace portable {
template <float (*Lane)(float)>
inline void map_block(const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = Lane(x[i]);
}
inline void apply(Function f, const float* x, float* y, std::int64_t n) {
  switch (f) {
    case Function::erf: return map_block<simd::erf>(x, y, n);
    case Function::gelu_erf: return map_block<simd::gelu_erf>(x, y, n);
    case Function::exp: return map_block<simd::exp>(x, y, n);
    case Function::tanh: return map_block<simd::tanh>(x, y, n);
    case Function::sigmoid: return map_block<simd::sigmoid>(x, y, n);
    case Function::gelu_tanh: return map_block<simd::gelu_tanh>(x, y, n);
    case Function::relu: return map_block<simd::relu>(x, y, n);
    case Function::log: return map_block<simd::log>(x, y, n);
    case Function::sin: return map_block<simd::sin>(x, y, n);
    case Function::cos: return map_block<simd::cos>(x, y, n);
  }
}
template <float (*Lane)(float, float)>
inline void map2_block(const float* a, const float* b, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = Lane(a[i], b[i]);
}
inline void apply(Arithmetic f, const float* a, const float* b, float* y, std::int64_t n) {
  switch (f) {
    case Arithmetic::add: return map2_block<simd::add>(a, b, y, n);
    case Arithmetic::sub: return map2_block<simd::sub>(a, b, y, n);
    case Arithmetic::mul: return map2_block<simd::mul>(a, b, y, n);
    case Arithmetic::div: return map2_block<simd::div>(a, b, y, n);
    case Arithmetic::maximum: return map2_block<simd::maximum>(a, b, y, n);
    case Arithmetic::minimum: return map2_block<simd::minimum>(a, b, y, n);
  }
}
inline void fma_row(float w, const float* x, float* acc, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) acc[i] = std::fma(w, x[i], acc[i]);
}
inline void max_2x2_stride2(const float* top, std::int64_t below, std::int64_t row_step, float* out,
                            std::int64_t out_step, std::int64_t rows, std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* t = top + r * row_step;
    const float* b = t + below;
    for (std::int64_t i = 0; i < n; ++i) out[r * out_step + i] = max_2x2(t[2 * i], t[2 * i + 1], b[2 * i], b[2 * i + 1]);
  }
}
inline void repeat_pairs(const float* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) dst[i] = src[i / 2];
}
inline void pad_plane(const float* src, std::int64_t src_width, std::int64_t src_rows, std::int64_t top, std::int64_t first,
                      std::int64_t last, float* dst, std::int64_t row_w, std::int64_t rows) {
  first = std::clamp<std::int64_t>(first, 0, row_w), last = std::clamp<std::int64_t>(last, first, row_w);
  for (std::int64_t h = 0; h < rows; ++h, dst += row_w) {
    if (h < top || h - top >= src_rows) {
      std::fill_n(dst, row_w, 0.0f);
      continue;
    }
    std::fill_n(dst, first, 0.0f);
    std::copy(src + (h - top) * src_width + first, src + (h - top) * src_width + last, dst + first);
    std::fill_n(dst + last, row_w - last, 0.0f);
  }
}
inline void store_conv_tile(const float* tile, std::int64_t tile_stride, std::int64_t rows, const ConvSegment* segments,
                            int count, const float* bias, bool relu, float* out, std::int64_t out_stride) {
  for (std::int64_t i = 0; i < rows; ++i)
    for (int s = 0; s < count; ++s)
      for (std::int64_t l = 0; l < segments[s].count; ++l) {
        float x = tile[i * tile_stride + segments[s].lane + l];
        if (bias) x = x + bias[i];
        if (relu) x = simd::relu(x);
        out[i * out_stride + segments[s].pixel + l] = x;
      }
}
inline void conv_taps(const float* image, const std::int64_t* offsets, std::int64_t taps, const float* weights,
                      const float* bias, bool relu, std::int64_t outputs, float* out, std::int64_t out_stride,
                      std::int64_t n) {
  for (std::int64_t o = 0; o < outputs; ++o) {
    const float* w = weights + (o / kConvTapChannels * taps) * kConvTapChannels + o % kConvTapChannels;
    for (std::int64_t p = 0; p < n; ++p) {
      float acc = 0.0f;
      for (std::int64_t t = 0; t < taps; ++t) acc = std::fma(w[t * kConvTapChannels], image[offsets[t] + p], acc);
      if (bias) acc = acc + bias[o];
      if (relu) acc = simd::relu(acc);
      out[o * out_stride + p] = acc;
    }
  }
}
inline float row_max(const float* x, std::int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (std::int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  return m;
}
inline void scale_row(const float* x, float f, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * f;
}
inline void shift_row(const float* x, float v, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] - v;
}
inline void divide_row(const float* x, double d, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = float(double(x[i]) / d);
}
}  // namespace portable

#if RML_X86_DISPATCH
RML_BEGIN_TARGET_AVX2
namespace avx2 {
struct V {
  using T = __m256;
  using M = __m256;  // all-ones lanes where true
  static constexpr std::int64_t kLanes = 8;
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, T v) { _mm256_storeu_ps(p, v); }
  /// p[0:count] (0 <= count <= kLanes) in the first lanes, zeros after; nothing past them is read.
  static T load_first(const float* p, std::int64_t count) {
    if (count >= kLanes) return load(p);
    return _mm256_maskload_ps(p, first_lanes(count));
  }
  static void store_first(float* p, T v, std::int64_t count) {
    if (count >= kLanes) return store(p, v);
    _mm256_maskstore_ps(p, first_lanes(count), v);
  }
  static __m256i first_lanes(std::int64_t count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  using Lanes = __m256i;  // all-ones lanes where set
  static Lanes lane_range(std::int64_t lo, std::int64_t hi) {
    lo = std::clamp<std::int64_t>(lo, 0, kLanes), hi = std::clamp<std::int64_t>(hi, 0, kLanes);
    return _mm256_andnot_si256(first_lanes(lo), first_lanes(hi));
  }
  static T load_masked(const float* p, Lanes m) { return _mm256_maskload_ps(p, m); }
  /// `into` with the lanes `m` of p loaded over it (nothing else of p is read).
  static T load_masked_into(T into, const float* p, Lanes m) {
    return _mm256_blendv_ps(into, _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  /// Lane l set where bit l of `bits` is (named by the shared conv_taps_at,
  /// though AVX2 reads no rows with masked edges: masked_row_edges).
  static Lanes lanes_from_bits(std::uint64_t bits) {
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits & 0xFF)), bit), bit);
  }
  static void store_masked(float* p, T v, Lanes m) { _mm256_maskstore_ps(p, m, v); }
  static T set1(float v) { return _mm256_set1_ps(v); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static T sub(T a, T b) { return _mm256_sub_ps(a, b); }
  static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T div(T a, T b) { return _mm256_div_ps(a, b); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T min(T a, T b) { return _mm256_min_ps(a, b); }
  static T max(T a, T b) { return _mm256_max_ps(a, b); }
  static T round(T a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static T neg(T a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
  static T abs(T a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  static T copysign(T magnitude, T sign) { return _mm256_or_ps(magnitude, _mm256_and_ps(_mm256_set1_ps(-0.0f), sign)); }
  static M less(T a, T b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static M equal(T a, T b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
  static M is_nan(T a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  /// Lanes where a > b or either is NaN (not a <= b): one compare.
  static M greater_or_nan(T a, T b) { return _mm256_cmp_ps(a, b, _CMP_NLE_UQ); }
  static M unordered(T a, T b) { return _mm256_cmp_ps(a, b, _CMP_UNORD_Q); }
  static T select(M m, T if_true, T if_false) { return _mm256_blendv_ps(if_false, if_true, m); }
  static M mask_or(M a, M b) { return _mm256_or_ps(a, b); }
  /// lo, hi: a's lanes each twice (lanes 0, 0, 1, 1, ...).
  static void repeat_pairs(T a, T& lo, T& hi) {
    lo = _mm256_permutevar8x32_ps(a, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    hi = _mm256_permutevar8x32_ps(a, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7));
  }
  /// The even and the odd elements of the 16 floats a, b (in order).
  static void deinterleave(T a, T b, T& even, T& odd) {
    even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
    odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8));
  }
  /// Lanes where the integral q (|q| < 2^31) has bit 0 set, and bit 1.
  static void low_bits(T q, M& bit0, M& bit1) {
    const __m256i n = _mm256_cvtps_epi32(q);
    const __m256i one = _mm256_set1_epi32(1), two = _mm256_set1_epi32(2);
    bit0 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(n, one), one));
    bit1 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(n, two), two));
  }
  static bool any(M m) { return _mm256_movemask_ps(m) != 0; }
  /// simd::split_exponent, lane-wise.
  static void split_exponent(T x, T& k, T& m) {
    const __m256i bits = _mm256_castps_si256(x);
    const __m256i e = _mm256_srai_epi32(_mm256_sub_epi32(bits, _mm256_set1_epi32(int(log_detail::kSqrtHalfBits))), 23);
    m = _mm256_castsi256_ps(_mm256_sub_epi32(bits, _mm256_slli_epi32(e, 23)));
    k = _mm256_cvtepi32_ps(e);
  }
  /// (p * 2^h) * 2^(n-h), h = n >> 1 (pow2_factors, lane-wise).
  static T scale_by_pow2(T p, T n) {
    const __m256i total = _mm256_cvtps_epi32(n);  // exact: n is integral
    const __m256i half = _mm256_srai_epi32(total, 1);
    const __m256i bias = _mm256_set1_epi32(127);
    const T a = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
    const T b = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(total, half), bias), 23));
    return mul(mul(p, a), b);
  }
  // Doubles, for the sums: sixteen floats widen into four registers.
  using D = __m256d;
  static constexpr int kDoubleLanes = 4;
  static void widen16(const float* p, D* out) {
    for (int i = 0; i < 4; ++i) out[i] = _mm256_cvtps_pd(_mm_loadu_ps(p + 4 * i));
  }
  static void narrow16(const D* in, float* p) {
    for (int i = 0; i < 4; ++i) _mm_storeu_ps(p + 4 * i, _mm256_cvtpd_ps(in[i]));
  }
  /// widen16 of p[0:count] (count < 16; nothing past it is read), `fill` in the other lanes.
  static void widen16_first(const float* p, std::int64_t count, D fill, D* out) {
    for (int i = 0; i < 4; ++i) {
      const std::int64_t left = count - 4 * i;  // this quarter's lanes below it are loaded
      const __m128i floats = _mm_cmpgt_epi32(_mm_set1_epi32(static_cast<int>(std::clamp<std::int64_t>(left, 0, 4))),
                                             _mm_setr_epi32(0, 1, 2, 3));
      const __m256i doubles = _mm256_cmpgt_epi64(_mm256_set1_epi64x(left), _mm256_setr_epi64x(0, 1, 2, 3));
      out[i] = _mm256_blendv_pd(fill, _mm256_cvtps_pd(_mm_maskload_ps(p + 4 * i, floats)), _mm256_castsi256_pd(doubles));
    }
  }
  /// sum_detail::combine over the sixteen chains parts[0..3] hold, in registers:
  /// chains j + 8, j + 4, j + 2, j + 1 added to chain j in turn.
  static double sum_tree(const D* parts) {
    const D four = _mm256_add_pd(_mm256_add_pd(parts[0], parts[2]), _mm256_add_pd(parts[1], parts[3]));
    const __m128d two = _mm_add_pd(_mm256_castpd256_pd128(four), _mm256_extractf128_pd(four, 1));
    return _mm_cvtsd_f64(_mm_add_sd(two, _mm_unpackhi_pd(two, two)));
  }
  static void dstore(double* p, D v) { _mm256_storeu_pd(p, v); }
  static D dset1(double v) { return _mm256_set1_pd(v); }
  static D dadd(D a, D b) { return _mm256_add_pd(a, b); }
  static D dsub(D a, D b) { return _mm256_sub_pd(a, b); }
  static D dmul(D a, D b) { return _mm256_mul_pd(a, b); }
  static D ddiv(D a, D b) { return _mm256_div_pd(a, b); }
  static D dfma(D a, D b, D c) { return _mm256_fmadd_pd(a, b, c); }
};
#include "rml/exec/simd_lanes.inl"
}  // namespace avx2
RML_END_TARGET

RML_BEGIN_TARGET_AVX512
namespace avx512 {
struct V {
  using T = __m512;
  using M = __mmask16;
  static constexpr std::int64_t kLanes = 16;
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T load_first(const float* p, std::int64_t count) { return _mm512_maskz_loadu_ps(first_lanes(count), p); }
  static void store_first(float* p, T v, std::int64_t count) { _mm512_mask_storeu_ps(p, first_lanes(count), v); }
  static __mmask16 first_lanes(std::int64_t count) {
    return count >= kLanes ? kAll : static_cast<__mmask16>((1u << count) - 1u);
  }
  /// Lanes [lo, hi), clamped to the register's.
  using Lanes = __mmask16;
  static Lanes lane_range(std::int64_t lo, std::int64_t hi) {
    lo = std::clamp<std::int64_t>(lo, 0, kLanes), hi = std::clamp<std::int64_t>(hi, 0, kLanes);
    return static_cast<Lanes>(first_lanes(hi) & ~first_lanes(lo));
  }
  /// The lanes `m` of p (nothing else is read), zeros in the others.
  static T load_masked(const float* p, Lanes m) { return _mm512_maskz_loadu_ps(m, p); }
  /// `into` with the lanes `m` of p loaded over it (nothing else of p is read).
  static T load_masked_into(T into, const float* p, Lanes m) { return _mm512_mask_loadu_ps(into, m, p); }
  /// Lane l set where bit l of `bits` is.
  static Lanes lanes_from_bits(std::uint64_t bits) { return static_cast<Lanes>(bits & 0xFFFF); }
  static void store_masked(float* p, T v, Lanes m) { _mm512_mask_storeu_ps(p, m, v); }
  static T set1(float v) { return _mm512_set1_ps(v); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static T sub(T a, T b) { return _mm512_sub_ps(a, b); }
  static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T div(T a, T b) { return _mm512_div_ps(a, b); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  // The zero-masked forms with every lane on are the plain instructions; GCC 12's
  // unmasked ones start from an "undefined" register it then warns about (PR 105593).
  static constexpr __mmask16 kAll = 0xFFFF;
  static T min(T a, T b) { return _mm512_maskz_min_ps(kAll, a, b); }
  /// a > b ? a : b, lane-wise (so b where they are equal or either is NaN), as for min.
  static T max(T a, T b) { return _mm512_maskz_max_ps(kAll, a, b); }
  static T round(T a) { return _mm512_maskz_roundscale_ps(kAll, a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static T neg(T a) { return _mm512_xor_ps(a, _mm512_set1_ps(-0.0f)); }
  static T abs(T a) { return _mm512_andnot_ps(_mm512_set1_ps(-0.0f), a); }
  static T copysign(T magnitude, T sign) { return _mm512_or_ps(magnitude, _mm512_and_ps(_mm512_set1_ps(-0.0f), sign)); }
  static M less(T a, T b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M equal(T a, T b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
  static M is_nan(T a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  /// Lanes where a > b or either is NaN (not a <= b): one compare.
  static M greater_or_nan(T a, T b) { return _mm512_cmp_ps_mask(a, b, _CMP_NLE_UQ); }
  /// Lanes where a or b is NaN.
  static M unordered(T a, T b) { return _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q); }
  static T select(M m, T if_true, T if_false) { return _mm512_mask_blend_ps(m, if_false, if_true); }
  static M mask_or(M a, M b) { return static_cast<M>(a | b); }
  /// lo, hi: a's lanes each twice (lanes 0, 0, 1, 1, ...). (Zero-masked with
  /// every lane on: GCC 12 warns on the unmasked permute's internal operand.)
  static void repeat_pairs(T a, T& lo, T& hi) {
    lo = _mm512_maskz_permutexvar_ps(kAll, _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7), a);
    hi = _mm512_maskz_permutexvar_ps(kAll, _mm512_setr_epi32(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15), a);
  }
  static void deinterleave(T a, T b, T& even, T& odd) {
    const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    even = _mm512_permutex2var_ps(a, evens, b);
    odd = _mm512_permutex2var_ps(a, _mm512_add_epi32(evens, _mm512_set1_epi32(1)), b);
  }
  /// p * 2^n in one rounding: the bits of (p * 2^h) * 2^(n-h) (pow2_factors),
  /// whose first product is exact for the p and n exp_v gives it.
  static T scale_by_pow2(T p, T n) { return _mm512_maskz_scalef_ps(kAll, p, n); }
  /// Lanes where the integral q (|q| < 2^31) has bit 0 set, and bit 1.
  static void low_bits(T q, M& bit0, M& bit1) {
    const __m512i n = _mm512_maskz_cvtps_epi32(kAll, q);
    bit0 = _mm512_test_epi32_mask(n, _mm512_set1_epi32(1));
    bit1 = _mm512_test_epi32_mask(n, _mm512_set1_epi32(2));
  }
  static bool any(M m) { return m != 0; }
  /// simd::split_exponent, lane-wise.
  static void split_exponent(T x, T& k, T& m) {
    const __m512i bits = _mm512_castps_si512(x);
    const __m512i offset = _mm512_set1_epi32(int(log_detail::kSqrtHalfBits));
    const __m512i e = _mm512_maskz_srai_epi32(kAll, _mm512_maskz_sub_epi32(kAll, bits, offset), 23);
    m = _mm512_castsi512_ps(_mm512_maskz_sub_epi32(kAll, bits, _mm512_maskz_slli_epi32(kAll, e, 23)));
    k = _mm512_maskz_cvtepi32_ps(kAll, e);
  }
  // Doubles, for the sums: sixteen floats widen into two registers (zero-masked
  // conversions with every lane on, for GCC 12's warning as above).
  using D = __m512d;
  static constexpr int kDoubleLanes = 8;
  static void widen16(const float* p, D* out) {
    out[0] = _mm512_maskz_cvtps_pd(0xFF, _mm256_loadu_ps(p));
    out[1] = _mm512_maskz_cvtps_pd(0xFF, _mm256_loadu_ps(p + 8));
  }
  static void narrow16(const D* in, float* p) {
    _mm256_storeu_ps(p, _mm512_maskz_cvtpd_ps(0xFF, in[0]));
    _mm256_storeu_ps(p + 8, _mm512_maskz_cvtpd_ps(0xFF, in[1]));
  }
  /// widen16 of p[0:count] (count < 16; nothing past it is read), `fill` in the other lanes.
  static void widen16_first(const float* p, std::int64_t count, D fill, D* out) {
    const __m512 x = _mm512_maskz_loadu_ps(first_lanes(count), p);
    const auto low = static_cast<__mmask8>(count >= 8 ? 0xFF : (1u << count) - 1u);
    const auto high = static_cast<__mmask8>(count <= 8 ? 0 : (1u << (count - 8)) - 1u);
    out[0] = _mm512_mask_blend_pd(low, fill, _mm512_maskz_cvtps_pd(0xFF, _mm512_maskz_extractf32x8_ps(0xFF, x, 0)));
    out[1] = _mm512_mask_blend_pd(high, fill, _mm512_maskz_cvtps_pd(0xFF, _mm512_maskz_extractf32x8_ps(0xFF, x, 1)));
  }
  /// sum_detail::combine over the sixteen chains parts[0..1] hold, in registers:
  /// chains j + 8, j + 4, j + 2, j + 1 added to chain j in turn.
  static double sum_tree(const D* parts) {
    const D eight = _mm512_add_pd(parts[0], parts[1]);
    const __m256d four = _mm256_add_pd(_mm512_maskz_extractf64x4_pd(0xFF, eight, 0), _mm512_maskz_extractf64x4_pd(0xFF, eight, 1));
    const __m128d two = _mm_add_pd(_mm256_castpd256_pd128(four), _mm256_extractf128_pd(four, 1));
    return _mm_cvtsd_f64(_mm_add_sd(two, _mm_unpackhi_pd(two, two)));
  }
  static void dstore(double* p, D v) { _mm512_storeu_pd(p, v); }
  static D dset1(double v) { return _mm512_set1_pd(v); }
  static D dadd(D a, D b) { return _mm512_add_pd(a, b); }
  static D dsub(D a, D b) { return _mm512_sub_pd(a, b); }
  static D dmul(D a, D b) { return _mm512_mul_pd(a, b); }
  static D ddiv(D a, D b) { return _mm512_div_pd(a, b); }
  static D dfma(D a, D b, D c) { return _mm512_fmadd_pd(a, b, c); }
};
#include "rml/exec/simd_lanes.inl"
}  // namespace avx512
RML_END_TARGET
#endif  // RML_X86_DISPATCH

/// y[0:n] = f(x[0:n]) with `isa`'s vectors (the CPU must run it).
inline void apply(Function f, Isa isa, const float* x, float* y, std::int64_t n) {
#if RML_X86_DISPATCH
  if (isa == Isa::avx512) return avx512::apply(f, x, y, n);
  if (isa == Isa::avx2) return avx2::apply(f, x, y, n);
#endif
  (void)isa;
  portable::apply(f, x, y, n);
}

/// y[0:n] = f(a[0:n], b[0:n]) with `isa`'s vectors (the CPU must run it).
inline void apply(Arithmetic f, Isa isa, const float* a, const float* b, float* y, std::int64_t n) {
#if RML_X86_DISPATCH
  if (isa == Isa::avx512) return avx512::apply(f, a, b, y, n);
  if (isa == Isa::avx2) return avx2::apply(f, a, b, y, n);
#endif
  (void)isa;
  portable::apply(f, a, b, y, n);
}

// ---- softmax rows: every set gives the portable loops' bits ----

/// The largest of x[0:n], NaNs skipped (-inf when all are): std::max's chain.
/// Of -0 and +0 either may come out; x - max then has the same bits.
inline float row_max(Isa isa, const float* x, std::int64_t n) {
#if RML_X86_DISPATCH
  if (isa == Isa::avx512) return avx512::row_max(x, n);
  if (isa == Isa::avx2) return avx2::row_max(x, n);
#endif
  (void)isa;
  return portable::row_max(x, n);
}
/// y[0:n] = x[0:n] * f.
inline void scale_row(Isa isa, const float* x, float f, float* y, std::int64_t n) {
#if RML_X86_DISPATCH
  if (isa == Isa::avx512) return avx512::scale_row(x, f, y, n);
  if (isa == Isa::avx2) return avx2::scale_row(x, f, y, n);
#endif
  (void)isa;
  portable::scale_row(x, f, y, n);
}
/// y[0:n] = x[0:n] - v.
inline void shift_row(Isa isa, const float* x, float v, float* y, std::int64_t n) {
#if RML_X86_DISPATCH
  if (isa == Isa::avx512) return avx512::shift_row(x, v, y, n);
  if (isa == Isa::avx2) return avx2::shift_row(x, v, y, n);
#endif
  (void)isa;
  portable::shift_row(x, v, y, n);
}
/// y[0:n] = x[0:n] / d in double, rounded to f32 once.
inline void divide_row(Isa isa, const float* x, double d, float* y, std::int64_t n) {
#if RML_X86_DISPATCH
  if (isa == Isa::avx512) return avx512::divide_row(x, d, y, n);
  if (isa == Isa::avx2) return avx2::divide_row(x, d, y, n);
#endif
  (void)isa;
  portable::divide_row(x, d, y, n);
}

/// acc[0:n] = fma(w, x[0:n], acc[0:n]) with `isa`'s vectors: the same bits on every set.
inline void fma_row(Isa isa, float w, const float* x, float* acc, std::int64_t n) {
#if RML_X86_DISPATCH
  if (isa == Isa::avx512) return avx512::fma_row(w, x, acc, n);
  if (isa == Isa::avx2) return avx2::fma_row(w, x, acc, n);
#endif
  (void)isa;
  portable::fma_row(w, x, acc, n);
}

/// max_pool2d's 2x2 windows with horizontal stride 2 (simd_lanes.inl says
/// how the arguments lay them out) with `isa`'s vectors: simd::max_2x2's bits.
inline void max_2x2_stride2(Isa isa, const float* top, std::int64_t below, std::int64_t row_step, float* out,
                            std::int64_t out_step, std::int64_t rows, std::int64_t n) {
#if RML_X86_DISPATCH
  if (isa == Isa::avx512) return avx512::max_2x2_stride2(top, below, row_step, out, out_step, rows, n);
  if (isa == Isa::avx2) return avx2::max_2x2_stride2(top, below, row_step, out, out_step, rows, n);
#endif
  (void)isa;
  portable::max_2x2_stride2(top, below, row_step, out, out_step, rows, n);
}

/// A convolution's padded input plane, `rows` rows of `row_w` floats at dst:
/// row h is source row h - top, column w its float src[(h - top) * src_width
/// + w] where first <= w < last, and zero elsewhere (rows outside the source
/// too). src is the source plane moved by the columns' shift: only the floats
/// copied are read. With `isa`'s vectors, row by row, no call per row.
inline void pad_plane(Isa isa, const float* src, std::int64_t src_width, std::int64_t src_rows, std::int64_t top,
                      std::int64_t first, std::int64_t last, float* dst, std::int64_t row_w, std::int64_t rows) {
#if RML_X86_DISPATCH
  if (isa == Isa::avx512) return avx512::pad_plane(src, src_width, src_rows, top, first, last, dst, row_w, rows);
  if (isa == Isa::avx2) return avx2::pad_plane(src, src_width, src_rows, top, first, last, dst, row_w, rows);
#endif
  (void)isa;
  portable::pad_plane(src, src_width, src_rows, top, first, last, dst, row_w, rows);
}

/// dst[i] = src[i / 2] for i in [0, n): each float twice, as nearest
/// upsampling by 2 repeats a row's pixels. Reads src[0 : (n + 1) / 2] only.
inline void repeat_pairs(Isa isa, const float* src, float* dst, std::int64_t n) {
#if RML_X86_DISPATCH
  if (isa == Isa::avx512) return avx512::repeat_pairs(src, dst, n);
  if (isa == Isa::avx2) return avx2::repeat_pairs(src, dst, n);
#endif
  (void)isa;
  portable::repeat_pairs(src, dst, n);
}

namespace sum_detail {
/// The chains over x[0:n] with `isa`'s vectors, combined.
template <bool Squares>
inline double chained_sum(Isa isa, const float* x, std::int64_t n, double mean) {
#if RML_X86_DISPATCH
  if (isa == Isa::avx512) return avx512::chained_sum<Squares>(x, n, mean);
  if (isa == Isa::avx2) return avx2::chained_sum<Squares>(x, n, mean);
#endif
  (void)isa;
  double chains[kChains] = {};
  add_lanes<Squares>(x, 0, n, mean, chains);
  return combine(chains);
}

template <bool Scale, bool Bias>
inline void normalize_row(Isa isa, const float* x, std::int64_t n, double mean, double inv, const float* scale,
                          const float* bias, float* y) {
  std::int64_t i = 0;
#if RML_X86_DISPATCH
  if (isa == Isa::avx512) avx512::normalize_blocks<Scale, Bias>(x, n / kChains, mean, inv, scale, bias, y), i = n / kChains * kChains;
  if (isa == Isa::avx2) avx2::normalize_blocks<Scale, Bias>(x, n / kChains, mean, inv, scale, bias, y), i = n / kChains * kChains;
#endif
  (void)isa;
  for (; i < n; ++i) y[i] = normalize<Scale, Bias>(x[i], mean, inv, Scale ? scale[i] : 0.0f, Bias ? bias[i] : 0.0f);
}
}  // namespace sum_detail

/// x[0] + ... + x[n-1] in double, in sum_detail's chains, with `isa`'s vectors.
inline double sum_in_double(Isa isa, const float* x, std::int64_t n) {
  return sum_detail::chained_sum<false>(isa, x, n, 0.0);
}
inline double sum_in_double(const float* x, std::int64_t n) { return sum_in_double(active_isa(), x, n); }

/// (x[0] - mean)^2 + ... + (x[n-1] - mean)^2 in double, in the same chains.
inline double squared_deviations_in_double(Isa isa, const float* x, std::int64_t n, double mean) {
  return sum_detail::chained_sum<true>(isa, x, n, mean);
}

/// squared_deviations_in_double of two rows at once (layer norm's rows in
/// pairs, once both are in cache): the same bits as one row at a time.
inline void squared_deviations_in_double_pair(Isa isa, const float* x0, const float* x1, std::int64_t n,
                                              const double* means, double* out) {
#if RML_X86_DISPATCH
  if (n % sum_detail::kChains == 0 && isa == Isa::avx512) return avx512::squares_pair(x0, x1, n, means, out);
  if (n % sum_detail::kChains == 0 && isa == Isa::avx2) return avx2::squares_pair(x0, x1, n, means, out);
#endif
  out[0] = squared_deviations_in_double(isa, x0, n, means[0]);
  out[1] = squared_deviations_in_double(isa, x1, n, means[1]);
}

/// y[i] = sum_detail::normalize(x[i]) for i < n (layer norm's output row);
/// scale and bias may each be null.
inline void normalize_row(Isa isa, const float* x, std::int64_t n, double mean, double inv, const float* scale,
                          const float* bias, float* y) {
  using sum_detail::normalize_row;
  if (scale && bias) return normalize_row<true, true>(isa, x, n, mean, inv, scale, bias, y);
  if (scale) return normalize_row<true, false>(isa, x, n, mean, inv, scale, bias, y);
  if (bias) return normalize_row<false, true>(isa, x, n, mean, inv, scale, bias, y);
  normalize_row<false, false>(isa, x, n, mean, inv, scale, bias, y);
}

/// sums[l] = x[l] + x[stride + l] + ... + x[(count - 1) * stride + l] in
/// double, one chain each in that order, for l < lanes (at most 16): outputs
/// of a reduction over a strided axis that sit side by side.
inline void sum_columns(Isa isa, const float* x, std::int64_t stride, std::int64_t count, std::int64_t lanes,
                        double* sums) {
#if RML_X86_DISPATCH
  if (lanes == sum_detail::kChains && isa == Isa::avx512) return avx512::sum_columns(x, stride, count, sums);
  if (lanes == sum_detail::kChains && isa == Isa::avx2) return avx2::sum_columns(x, stride, count, sums);
#endif
  (void)isa;
  std::fill_n(sums, lanes, 0.0);
  for (std::int64_t k = 0; k < count; ++k)
    for (std::int64_t l = 0; l < lanes; ++l) sums[l] += double(x[k * stride + l]);
}

/// A direct convolution's mr x nr micro tile (rows `tile_stride` apart) to
/// its output: for each of the `rows` rows and each segment, the lanes plus
/// the row's bias (when `bias` is not null), then relu when asked, to the
/// segment's pixels of that row's plane (planes `out_stride` apart). Each
/// element is the scalar `x + bias`, then simd::relu: the bits of the tile
/// copied out and the bias and relu applied one after the other.
inline void store_conv_tile(Isa isa, const float* tile, std::int64_t tile_stride, std::int64_t rows,
                            const ConvSegment* segments, int count, const float* bias, bool relu, float* out,
                            std::int64_t out_stride) {
#if RML_X86_DISPATCH
  if (isa == Isa::avx512)
    return avx512::store_conv_tile(tile, tile_stride, rows, segments, count, bias, relu, out, out_stride);
  if (isa == Isa::avx2)
    return avx2::store_conv_tile(tile, tile_stride, rows, segments, count, bias, relu, out, out_stride);
#endif
  (void)isa;
  portable::store_conv_tile(tile, tile_stride, rows, segments, count, bias, relu, out, out_stride);
}

/// A convolution over `n` consecutive pixels of its zero-padded image, for
/// every output channel: out[o * out_stride + p] = sum over t of w[o][t] *
/// image[offsets[t] + p] (one fma chain from zero, in tap order; `weights`
/// from pack_conv_taps), then + bias[o] (when not null), then relu when
/// asked: the bits of the direct kernel's micro tile stored by store_conv_tile.
/// With `columns` (AVX-512 only: masked_row_edges; more than four outputs),
/// the image's rows have no padding columns (ConvColumns).
inline void conv_taps(Isa isa, const float* image, const std::int64_t* offsets, std::int64_t taps,
                      const float* weights, const float* bias, bool relu, const ConvColumns* columns,
                      std::int64_t outputs, float* out, std::int64_t out_stride, std::int64_t n) {
#if RML_X86_DISPATCH
  if (isa == Isa::avx512)
    return avx512::conv_taps(image, offsets, taps, weights, bias, relu, columns, outputs, out, out_stride, n);
#endif
  if (columns) fail(ErrorCode::internal, "conv_taps: rows with masked edges need AVX-512");
#if RML_X86_DISPATCH
  if (isa == Isa::avx2)
    return avx2::conv_taps(image, offsets, taps, weights, bias, relu, nullptr, outputs, out, out_stride, n);
#endif
  portable::conv_taps(image, offsets, taps, weights, bias, relu, outputs, out, out_stride, n);
}

/// conv_taps over the last `lanes` pixels of `count` images' runs, in one
/// vector (count * lanes at most the vector's lanes; AVX-512 only:
/// packs_image_tails): images[s] and outs[s] point at image s's first such
/// pixel, in its image and its output. With `bits` (ConvColumns::bits at
/// that pixel's column), rows have masked edges as in conv_taps. The same
/// bits as conv_taps over each image's whole run.
inline void conv_taps_tails(Isa isa, const float* const* images, int count, const std::int64_t* offsets,
                            std::int64_t taps, const float* weights, const float* bias, bool relu,
                            const std::uint64_t* bits, std::int64_t outputs, float* const* outs,
                            std::int64_t out_stride, std::int64_t lanes) {
  if (!packs_image_tails(isa) || count * lanes > kTailLanes)
    fail(ErrorCode::internal, "conv_taps_tails: ", count, " images of ", lanes, " pixels in one vector need AVX-512");
#if RML_X86_DISPATCH
  avx512::conv_taps_tails(images, count, offsets, taps, weights, bias, relu, bits, outputs, outs, out_stride, lanes);
#endif
}

template <Function F>
inline void block(const float* x, float* y, std::int64_t n) {
  apply(F, active_isa(), x, y, n);
}
inline void erf_block(const float* x, float* y, std::int64_t n) { block<Function::erf>(x, y, n); }
inline void gelu_erf_block(const float* x, float* y, std::int64_t n) { block<Function::gelu_erf>(x, y, n); }
inline void exp_block(const float* x, float* y, std::int64_t n) { block<Function::exp>(x, y, n); }
inline void tanh_block(const float* x, float* y, std::int64_t n) { block<Function::tanh>(x, y, n); }
inline void sigmoid_block(const float* x, float* y, std::int64_t n) { block<Function::sigmoid>(x, y, n); }
inline void gelu_tanh_block(const float* x, float* y, std::int64_t n) { block<Function::gelu_tanh>(x, y, n); }
inline void relu_block(const float* x, float* y, std::int64_t n) { block<Function::relu>(x, y, n); }
inline void log_block(const float* x, float* y, std::int64_t n) { block<Function::log>(x, y, n); }
inline void sin_block(const float* x, float* y, std::int64_t n) { block<Function::sin>(x, y, n); }
inline void cos_block(const float* x, float* y, std::int64_t n) { block<Function::cos>(x, y, n); }
template <Arithmetic F>
inline void block(const float* a, const float* b, float* y, std::int64_t n) {
  apply(F, active_isa(), a, b, y, n);
}

}  // namespace rml::exec::simd
