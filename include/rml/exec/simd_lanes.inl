// The vector forms of simd_math.hpp's functions, written once against a
// vector type `V` and included by simd_math.hpp once per instruction set,
// inside that set's namespace and target region (so there is no include
// guard). V provides T (the register), M (a lane mask), kLanes, and the
// operations below; every formula is the scalar one in simd_math.hpp, step
// for step, so each lane gives the scalar result's bits.

RML_ALWAYS_INLINE V::T erf_v(V::T x) {
  using namespace erf_detail;
  const V::T c = V::min(V::max(x, V::set1(-kClamp)), V::set1(kClamp));
  const V::T t = V::mul(c, c);
  V::T p = V::set1(kP[0]);
  for (int i = 1; i < 7; ++i) p = V::fma(p, t, V::set1(kP[i]));
  V::T q = V::set1(kQ[0]);
  for (int i = 1; i < 5; ++i) q = V::fma(q, t, V::set1(kQ[i]));
  return V::select(V::is_nan(x), x, V::div(V::mul(c, p), q));  // NaN stays NaN
}

RML_ALWAYS_INLINE V::T gelu_erf_v(V::T x) {
  const V::T e = erf_v(V::mul(x, V::set1(0.70710678118654752f)));
  return V::mul(V::mul(V::set1(0.5f), x), V::add(V::set1(1.0f), e));
}

RML_ALWAYS_INLINE V::T exp_v(V::T x) {
  using namespace exp_detail;
  const V::T c = V::min(V::max(x, V::set1(kMin)), V::set1(kMax));
  const V::T n = V::round(V::mul(c, V::set1(kLog2e)));
  V::T r = V::fma(n, V::set1(-kLn2Hi), c);
  r = V::fma(n, V::set1(-kLn2Lo), r);
  V::T p = V::set1(kTaylor[0]);
  for (int i = 1; i < 8; ++i) p = V::fma(p, r, V::set1(kTaylor[i]));
  V::T y = V::scale_by_pow2(p, n);
  y = V::select(V::less(x, V::set1(kMin)), V::set1(0.0f), y);
  y = V::select(V::less(V::set1(kMax), x), V::set1(INFINITY), y);
  return V::select(V::is_nan(x), x, y);
}

RML_ALWAYS_INLINE V::T tanh_v(V::T x) {
  using namespace tanh_detail;
  const V::T ax = V::abs(x);
  const V::T t = V::mul(ax, ax);
  V::T s = V::set1(kSeries[0]);
  for (int i = 1; i < 7; ++i) s = V::fma(s, t, V::set1(kSeries[i]));
  const V::T small = V::mul(ax, s);
  const V::T e = exp_v(V::mul(V::set1(2.0f), ax));
  const V::T large = V::sub(V::set1(1.0f), V::div(V::set1(2.0f), V::add(e, V::set1(1.0f))));
  const V::T magnitude = V::select(V::less(ax, V::set1(kSmall)), small, large);
  return V::select(V::is_nan(x), x, V::copysign(magnitude, x));
}

RML_ALWAYS_INLINE V::T sigmoid_v(V::T x) {
  const V::T e = exp_v(V::neg(x));
  return V::select(V::is_nan(x), x, V::div(V::set1(1.0f), V::add(V::set1(1.0f), e)));
}

RML_ALWAYS_INLINE V::T gelu_tanh_v(V::T x) {
  const V::T cubic = V::fma(V::mul(V::set1(0.044715f), x), V::mul(x, x), x);
  const V::T inner = V::mul(V::set1(0.79788456080286536f), cubic);
  return V::div(x, V::add(V::set1(1.0f), exp_v(V::mul(V::set1(-2.0f), inner))));
}

RML_ALWAYS_INLINE V::T log_v(V::T x) {
  using namespace log_detail;
  const V::M subnormal = V::less(x, V::set1(kMinNormal));
  V::T k, m;
  V::split_exponent(V::select(subnormal, V::mul(x, V::set1(kTwo23)), x), k, m);
  k = V::select(subnormal, V::sub(k, V::set1(23.0f)), k);
  const V::T f = V::sub(m, V::set1(1.0f));
  const V::T z = V::mul(f, f);
  V::T p = V::set1(kP[0]);
  for (int i = 1; i < 8; ++i) p = V::fma(p, f, V::set1(kP[i]));
  V::T y = V::mul(V::mul(f, z), p);
  y = V::fma(V::set1(-0.5f), z, y);
  y = V::fma(k, V::set1(exp_detail::kLn2Lo), y);
  V::T r = V::fma(k, V::set1(exp_detail::kLn2Hi), V::add(f, y));
  r = V::select(V::less(x, V::set1(0.0f)), V::set1(std::numeric_limits<float>::quiet_NaN()), r);
  r = V::select(V::equal(x, V::set1(0.0f)), V::set1(-INFINITY), r);
  r = V::select(V::equal(x, V::set1(INFINITY)), x, r);
  return V::select(V::is_nan(x), x, r);
}

/// sin (CosShift 0) or cos (CosShift 1): simd::sin_quadrant per lane, and
/// the scalar function itself for lanes beyond its range.
template <int CosShift>
RML_ALWAYS_INLINE V::T sin_quadrant_v(V::T x) {
  using namespace sincos_detail;
  const V::T q = V::round(V::mul(x, V::set1(k2OverPi)));
  V::T r = V::fma(q, V::set1(-kPio2Hi), x);
  r = V::fma(q, V::set1(-kPio2Mid), r);
  r = V::fma(q, V::set1(-kPio2Lo), r);
  const V::T u = V::mul(r, r);
  V::T s = V::set1(kS[0]), c = V::set1(kC[0]);
  for (int i = 1; i < 4; ++i) s = V::fma(s, u, V::set1(kS[i]));
  for (int i = 1; i < 4; ++i) c = V::fma(c, u, V::set1(kC[i]));
  const V::T sin_r = V::fma(V::mul(r, u), s, r);
  const V::T cos_r = V::fma(V::mul(u, u), c, V::fma(V::set1(-0.5f), u, V::set1(1.0f)));
  V::M odd, negative;
  V::low_bits(CosShift ? V::add(q, V::set1(1.0f)) : q, odd, negative);
  const V::T v = V::select(odd, cos_r, sin_r);
  V::T y = V::select(negative, V::neg(v), v);
  if constexpr (CosShift == 0) y = V::select(V::equal(x, V::set1(0.0f)), x, y);  // sin(-0) = -0 (r lost the sign)
  const V::M beyond = V::greater_or_nan(V::abs(x), V::set1(kMaxReduced));  // inf and NaN too
  if (V::any(beyond)) [[unlikely]] {
    float lanes[V::kLanes], out[V::kLanes];
    V::store(lanes, x);
    V::store(out, y);
    for (int l = 0; l < V::kLanes; ++l)
      if (!(std::fabs(lanes[l]) <= kMaxReduced)) out[l] = CosShift ? std::cos(lanes[l]) : std::sin(lanes[l]);
    y = V::load(out);
  }
  return y;
}
RML_ALWAYS_INLINE V::T sin_v(V::T x) { return sin_quadrant_v<0>(x); }
RML_ALWAYS_INLINE V::T cos_v(V::T x) { return sin_quadrant_v<1>(x); }

RML_ALWAYS_INLINE V::T relu_v(V::T x) {
  const V::T zero = V::set1(0.0f);
  return V::select(V::greater_or_nan(x, zero), x, zero);  // -0 gives +0
}

RML_ALWAYS_INLINE V::T maximum_v(V::T a, V::T b) {
  const V::T larger = V::select(V::less(a, b), b, a);
  return V::select(V::is_nan(a), a, V::select(V::is_nan(b), b, larger));
}
RML_ALWAYS_INLINE V::T minimum_v(V::T a, V::T b) {
  const V::T smaller = V::select(V::less(b, a), b, a);
  return V::select(V::is_nan(a), a, V::select(V::is_nan(b), b, smaller));
}

/// y[0:n] = f(x[0:n]): kLanes at a time, the tail in the first lanes of one
/// more vector (loaded and stored under a mask: nothing past n is touched).
template <V::T (*Vector)(V::T)>
inline void map_block(const float* x, float* y, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::store(y + i, Vector(V::load(x + i)));
  if (i < n) V::store_first(y + i, Vector(V::load_first(x + i, n - i)), n - i);
}

inline void apply(Function f, const float* x, float* y, std::int64_t n) {
  switch (f) {
    case Function::erf: return map_block<erf_v>(x, y, n);
    case Function::gelu_erf: return map_block<gelu_erf_v>(x, y, n);
    case Function::exp: return map_block<exp_v>(x, y, n);
    case Function::tanh: return map_block<tanh_v>(x, y, n);
    case Function::sigmoid: return map_block<sigmoid_v>(x, y, n);
    case Function::gelu_tanh: return map_block<gelu_tanh_v>(x, y, n);
    case Function::relu: return map_block<relu_v>(x, y, n);
    case Function::log: return map_block<log_v>(x, y, n);
    case Function::sin: return map_block<sin_v>(x, y, n);
    case Function::cos: return map_block<cos_v>(x, y, n);
  }
}

/// y[0:n] = f(a[0:n], b[0:n]): kLanes at a time, the tail as map_block's.
template <V::T (*Vector)(V::T, V::T)>
inline void map2_block(const float* a, const float* b, float* y, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::store(y + i, Vector(V::load(a + i), V::load(b + i)));
  if (i < n) V::store_first(y + i, Vector(V::load_first(a + i, n - i), V::load_first(b + i, n - i)), n - i);
}

inline void apply(Arithmetic f, const float* a, const float* b, float* y, std::int64_t n) {
  switch (f) {
    case Arithmetic::add: return map2_block<V::add>(a, b, y, n);
    case Arithmetic::sub: return map2_block<V::sub>(a, b, y, n);
    case Arithmetic::mul: return map2_block<V::mul>(a, b, y, n);
    case Arithmetic::div: return map2_block<V::div>(a, b, y, n);
    case Arithmetic::maximum: return map2_block<maximum_v>(a, b, y, n);
    case Arithmetic::minimum: return map2_block<minimum_v>(a, b, y, n);
  }
}

/// acc[0:n] = fma(w, x[0:n], acc[0:n]): one tap of a depthwise convolution
/// along an output row. Each lane is the scalar fma, so the tail agrees.
inline void fma_row(float w, const float* x, float* acc, std::int64_t n) {
  const V::T wv = V::set1(w);
  std::int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::store(acc + i, V::fma(wv, V::load(x + i), V::load(acc + i)));
  for (; i < n; ++i) acc[i] = std::fma(w, x[i], acc[i]);
}

/// simd::pad_plane a column of vectors at a time (its masks found once): the
/// copied columns loaded under a mask, zeros in the others, the row's lanes stored.
inline void pad_plane(const float* src, std::int64_t src_width, std::int64_t src_rows, std::int64_t top, std::int64_t first,
                      std::int64_t last, float* dst, std::int64_t row_w, std::int64_t rows) {
  const std::int64_t begin = std::clamp<std::int64_t>(top, 0, rows);
  const std::int64_t end = std::clamp<std::int64_t>(top + src_rows, begin, rows);
  const V::T zeros = V::set1(0.0f);
  for (std::int64_t w = 0; w < row_w; w += V::kLanes) {
    const V::Lanes copied = V::lane_range(first - w, last - w), stored = V::lane_range(0, row_w - w);
    float* column = dst + w;
    std::int64_t h = 0;
    for (; h < begin; ++h) V::store_masked(column + h * row_w, zeros, stored);
    for (; h < end; ++h) V::store_masked(column + h * row_w, V::load_masked(src + (h - top) * src_width + w, copied), stored);
    for (; h < rows; ++h) V::store_masked(column + h * row_w, zeros, stored);
  }
}

/// simd::repeat_pairs: a vector of src gives two of dst; the last, partial
/// ones under masks (nothing past src[(n + 1) / 2] is read, nor dst[n] written).
inline void repeat_pairs(const float* src, float* dst, std::int64_t n) {
  for (std::int64_t i = 0; i < n; i += 2 * V::kLanes) {
    const std::int64_t left = n - i;
    V::T lo, hi;
    V::repeat_pairs(V::load_masked(src + i / 2, V::lane_range(0, (left + 1) / 2)), lo, hi);
    V::store_masked(dst + i, lo, V::lane_range(0, left));
    if (left > V::kLanes) V::store_masked(dst + i + V::kLanes, hi, V::lane_range(0, left - V::kLanes));
  }
}

/// The maxima of 2x2 windows with horizontal stride 2 over `rows` rows of
/// `n` windows: row r's windows have their top taps at top + r * row_step
/// (pairs 2i, 2i + 1), their bottom taps `below` floats further, and go to
/// out + r * out_step. max_pool2d's commonest window. The taps are taken in
/// the order of simd::max_2x2, so each lane is its result: -0 and +0 as the
/// scalar chain leaves them, any NaN tap giving the canonical NaN.
inline void max_2x2_stride2(const float* top, std::int64_t below, std::int64_t row_step, float* out,
                            std::int64_t out_step, std::int64_t rows, std::int64_t n) {
  // Pooled rows are short (14 windows in a 28-wide plane), so the last,
  // partial vector of a row is loaded and stored under a mask, not left
  // scalar; a column of vectors at a time, its masks found once.
  const V::T nan = V::set1(std::numeric_limits<float>::quiet_NaN());
  for (std::int64_t i = 0; i < n; i += V::kLanes) {
    const std::int64_t windows = std::min<std::int64_t>(n - i, V::kLanes);
    const V::Lanes low = V::lane_range(0, 2 * windows), high = V::lane_range(0, 2 * windows - V::kLanes);
    const V::Lanes stored = V::lane_range(0, windows);
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* t = top + r * row_step + 2 * i;
      const float* b = t + below;
      V::T top_left, top_right, bottom_left, bottom_right;
      V::deinterleave(V::load_masked(t, low), V::load_masked(t + V::kLanes, high), top_left, top_right);
      V::deinterleave(V::load_masked(b, low), V::load_masked(b + V::kLanes, high), bottom_left, bottom_right);
      // Without NaNs, V::max(v, acc) is max_step(acc, v) (equal taps keep acc: -0 and +0 stay as
      // the chain leaves them); any NaN tap makes the window the canonical NaN, found apart.
      const V::T acc = V::max(bottom_right, V::max(bottom_left, V::max(top_right, top_left)));
      const V::M any_nan = V::mask_or(V::unordered(top_left, top_right), V::unordered(bottom_left, bottom_right));
      V::store_masked(out + r * out_step + i, V::select(any_nan, nan, acc), stored);
    }
  }
}

// ---- sums and row statistics in double (simd_math.hpp, sum_detail) ----

inline constexpr int kDoubleParts = 16 / V::kDoubleLanes;  // D registers per block of sixteen floats

/// sum_detail::chained_sum (the sixteen chains, then combine) in registers.
/// A sum's last, partial block adds +0.0 to the chains it does not reach,
/// which leaves their bits (a chain that starts at +0 is never -0); squared
/// deviations finish lane by lane, as (x - mean)^2 of a filler could be NaN.
template <bool Squares>
inline double chained_sum(const float* x, std::int64_t n, double mean) {
  V::D acc[kDoubleParts], w[kDoubleParts];
  for (int p = 0; p < kDoubleParts; ++p) acc[p] = V::dset1(0.0);
  const V::D m = V::dset1(mean);
  const auto add = [&] {
    for (int p = 0; p < kDoubleParts; ++p) {
      if constexpr (Squares) {
        const V::D d = V::dsub(w[p], m);
        acc[p] = V::dfma(d, d, acc[p]);
      } else {
        acc[p] = V::dadd(acc[p], w[p]);
      }
    }
  };
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) V::widen16(x + i, w), add();
  if (i < n) {
    if constexpr (Squares) {
      double chains[16];
      for (int p = 0; p < kDoubleParts; ++p) V::dstore(chains + p * V::kDoubleLanes, acc[p]);
      sum_detail::add_lanes<true>(x, i, n, mean, chains);
      return sum_detail::combine(chains);
    } else {
      V::widen16_first(x + i, n - i, V::dset1(0.0), w), add();
    }
  }
  return V::sum_tree(acc);
}

/// chained_sum<true> of two rows of n floats (n a multiple of 16) at once:
/// out[r] is chained_sum's result for row r, bit for bit; the two rows'
/// chains are independent, so their fmas overlap instead of waiting.
inline void squares_pair(const float* x0, const float* x1, std::int64_t n, const double* means, double* out) {
  V::D acc[2][kDoubleParts], w[2][kDoubleParts];
  const V::D m[2] = {V::dset1(means[0]), V::dset1(means[1])};
  for (int r = 0; r < 2; ++r)
    for (int p = 0; p < kDoubleParts; ++p) acc[r][p] = V::dset1(0.0);
  for (std::int64_t i = 0; i + 16 <= n; i += 16) {
    V::widen16(x0 + i, w[0]);
    V::widen16(x1 + i, w[1]);
    for (int r = 0; r < 2; ++r)
      for (int p = 0; p < kDoubleParts; ++p) {
        const V::D d = V::dsub(w[r][p], m[r]);
        acc[r][p] = V::dfma(d, d, acc[r][p]);
      }
  }
  out[0] = V::sum_tree(acc[0]);
  out[1] = V::sum_tree(acc[1]);
}

/// y = sum_detail::normalize(x) over whole blocks of sixteen, lane-wise.
template <bool Scale, bool Bias>
inline void normalize_blocks(const float* x, std::int64_t blocks, double mean, double inv, const float* scale,
                             const float* bias, float* y) {
  const V::D m = V::dset1(mean), k = V::dset1(inv);
  V::D t[kDoubleParts], s[kDoubleParts], c[kDoubleParts];
  for (std::int64_t b = 0; b < blocks; ++b) {
    V::widen16(x + 16 * b, t);
    if constexpr (Scale) V::widen16(scale + 16 * b, s);
    if constexpr (Bias) V::widen16(bias + 16 * b, c);
    for (int p = 0; p < kDoubleParts; ++p) {
      t[p] = V::dmul(V::dsub(t[p], m), k);
      if constexpr (Scale && Bias) t[p] = V::dfma(t[p], s[p], c[p]);
      else if constexpr (Scale) t[p] = V::dmul(t[p], s[p]);
      else if constexpr (Bias) t[p] = V::dadd(t[p], c[p]);
    }
    V::narrow16(t, y + 16 * b);
  }
}

// ---- softmax rows (simd_math.hpp: row_max, scale_row, shift_row, divide_row) ----

inline float row_max(const float* x, std::int64_t n) {
  // V::max(v, acc) keeps acc where v is NaN or equal to it: std::max(acc, v) lane by lane.
  V::T acc = V::set1(-std::numeric_limits<float>::infinity());
  std::int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) acc = V::max(V::load(x + i), acc);
  alignas(64) float lanes[V::kLanes];
  V::store(lanes, acc);
  float m = lanes[0];
  for (std::int64_t l = 1; l < V::kLanes; ++l) m = std::max(m, lanes[l]);
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}
inline void scale_row(const float* x, float f, float* y, std::int64_t n) {
  const V::T factor = V::set1(f);
  std::int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::store(y + i, V::mul(V::load(x + i), factor));
  for (; i < n; ++i) y[i] = x[i] * f;
}
inline void shift_row(const float* x, float v, float* y, std::int64_t n) {
  const V::T shift = V::set1(v);
  std::int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::store(y + i, V::sub(V::load(x + i), shift));
  for (; i < n; ++i) y[i] = x[i] - v;
}
inline void divide_row(const float* x, double d, float* y, std::int64_t n) {
  const V::D divisor = V::dset1(d);
  V::D t[kDoubleParts];
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    V::widen16(x + i, t);
    for (int p = 0; p < kDoubleParts; ++p) t[p] = V::ddiv(t[p], divisor);
    V::narrow16(t, y + i);
  }
  for (; i < n; ++i) y[i] = float(double(x[i]) / d);
}

/// sums[l] = x[l] + x[stride + l] + ... for l < 16, each lane one chain in
/// that order (simd_math.hpp: sum_columns).
inline void sum_columns(const float* x, std::int64_t stride, std::int64_t count, double* sums) {
  V::D acc[kDoubleParts], w[kDoubleParts];
  for (int p = 0; p < kDoubleParts; ++p) acc[p] = V::dset1(0.0);
  for (std::int64_t k = 0; k < count; ++k) {
    V::widen16(x + k * stride, w);
    for (int p = 0; p < kDoubleParts; ++p) acc[p] = V::dadd(acc[p], w[p]);
  }
  for (int p = 0; p < kDoubleParts; ++p) V::dstore(sums + p * V::kDoubleLanes, acc[p]);
}

// ---- a direct convolution's micro tile to its output (simd_math.hpp: store_conv_tile) ----

/// One output vector: plus the bias (`b`, when there is one), then relu (NaN
/// kept, -0 to +0) where asked. Run-time flags, not template parameters: the
/// branches sit outside the fma loops, and one copy of each loop per
/// instruction set keeps the header's compile time down.
RML_ALWAYS_INLINE V::T conv_output_v(V::T x, bool has_bias, V::T b, bool relu) {
  if (has_bias) x = V::add(x, b);
  if (relu) x = relu_v(x);
  return x;
}

inline void store_conv_tile(const float* tile, std::int64_t tile_stride, std::int64_t rows, const ConvSegment* segments,
                            int count, const float* bias, bool relu, float* out, std::int64_t out_stride) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const V::T b = V::set1(bias ? bias[i] : 0.0f);
    const float* src = tile + i * tile_stride;
    float* dst = out + i * out_stride;
    for (int s = 0; s < count; ++s) {
      const ConvSegment& segment = segments[s];
      for (std::int64_t l = 0; l < segment.count; l += V::kLanes) {
        const std::int64_t n = std::min<std::int64_t>(V::kLanes, segment.count - l);
        const V::T x = V::load_first(src + segment.lane + l, n);
        V::store_first(dst + segment.pixel + l, conv_output_v(x, bias != nullptr, b, relu), n);
      }
    }
  }
}

// ---- a convolution with few taps, from its padded image (simd_math.hpp: conv_taps) ----

/// `Channels` (at most kConvTapChannels) output channels over `Chunks`
/// vectors of pixels (the last `lanes` wide): Chunks * Channels fma chains
/// interleaved, as many as hide the fma latency, each tap's vectors loaded
/// once for them all. With Masked (AVX-512), taps come in threes and tap j's
/// vector c reads only the lanes masks[j][c] (the rest are zeros: ConvColumns).
template <int Chunks, int Channels = kConvTapChannels, bool Masked = false>
inline void conv_taps_pass(const float* image, const std::int64_t* offsets, std::int64_t taps, const float* w,
                           const float* bias, bool relu, std::int64_t channels, float* out, std::int64_t out_stride,
                           std::int64_t lanes, const V::Lanes (*masks)[Chunks] = nullptr) {
  constexpr int kStep = Masked ? 3 : 1;  // taps per step: a window row's three under masks
  V::T acc[Chunks][Channels];
  RML_UNROLL
  for (int c = 0; c < Chunks; ++c)
    RML_UNROLL
    for (int u = 0; u < Channels; ++u) acc[c][u] = V::set1(0.0f);
  for (std::int64_t t = 0; t < taps; t += kStep) {
    RML_UNROLL
    for (int j = 0; j < kStep; ++j, w += kConvTapChannels) {
      V::T x[Chunks];
      const float* row = image + offsets[t + j];
      RML_UNROLL
      for (int c = 0; c < Chunks; ++c) {
        if constexpr (Masked) x[c] = V::load_masked(row + c * V::kLanes, masks[j][c]);
        else x[c] = c + 1 < Chunks ? V::load(row + c * V::kLanes) : V::load_first(row + c * V::kLanes, lanes);
      }
      RML_UNROLL
      for (int u = 0; u < Channels; ++u) {
        const V::T wu = V::set1(w[u]);
        RML_UNROLL
        for (int c = 0; c < Chunks; ++c) acc[c][u] = V::fma(wu, x[c], acc[c][u]);
      }
    }
  }
  RML_UNROLL
  for (int u = 0; u < Channels; ++u) {
    if (u >= channels) break;
    const V::T b = V::set1(bias ? bias[u] : 0.0f);
    RML_UNROLL
    for (int c = 0; c < Chunks; ++c)
      V::store_first(out + u * out_stride + c * V::kLanes, conv_output_v(acc[c][u], bias != nullptr, b, relu),
                     c + 1 < Chunks ? V::kLanes : lanes);
  }
}

/// One pass over `Chunks` vectors of pixels from pixel l of the run: from the
/// padded image, or, given `bits` (ConvColumns::bits at the pass's first
/// column), under masks from rows without padding columns.
template <int Chunks, int Channels = kConvTapChannels>
inline void conv_taps_at(const float* image, const std::int64_t* offsets, std::int64_t taps, const float* w,
                         const float* bias, bool relu, const std::uint64_t* bits, std::int64_t l, std::int64_t channels,
                         float* out, std::int64_t out_stride, std::int64_t lanes) {
  if constexpr (V::kLanes >= 16) {  // simd::masked_row_edges: AVX-512 only
    if (bits) {
      V::Lanes masks[3][Chunks];
      const std::uint64_t last = (Chunks - 1) * V::kLanes + lanes;  // the pass's pixels: lanes [0, last)
      const std::uint64_t pixels = last >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << last) - 1;
      for (int j = 0; j < 3; ++j)
        for (int c = 0; c < Chunks; ++c) masks[j][c] = V::lanes_from_bits((bits[j] & pixels) >> (c * V::kLanes));
      return conv_taps_pass<Chunks, Channels, true>(image + l, offsets, taps, w, bias, relu, channels, out,
                                                    out_stride, lanes, masks);
    }
  }
  conv_taps_pass<Chunks, Channels>(image + l, offsets, taps, w, bias, relu, channels, out, out_stride, lanes);
}

/// The last `lanes` pixels of `count` images' runs as one vector: image s's
/// in lanes [s * lanes, (s + 1) * lanes), each tap's lanes loaded from that
/// image's own rows (merged, masked loads; with `bits`, ConvColumns::bits at
/// those pixels' column, zeros where a row's edge is, as conv_taps_at). Every
/// lane is the fma chain conv_taps_pass gives it image by image.
inline void conv_taps_tails(const float* const* images, int count, const std::int64_t* offsets, std::int64_t taps,
                            const float* weights, const float* bias, bool relu, const std::uint64_t* bits,
                            std::int64_t outputs, float* const* outs, std::int64_t out_stride, std::int64_t lanes) {
  constexpr int kMaxImages = static_cast<int>(V::kLanes);
  const std::uint64_t pixels = (std::uint64_t{1} << lanes) - 1;
  V::Lanes own[kMaxImages], masks[3][kMaxImages];  // per image: its lanes; per tap column j: those it reads
  for (int s = 0; s < count; ++s) {
    const int shift = static_cast<int>(s * lanes);
    own[s] = V::lanes_from_bits(pixels << shift);
    for (int j = 0; j < 3; ++j) masks[j][s] = V::lanes_from_bits((bits ? bits[j] & pixels : pixels) << shift);
  }
  for (std::int64_t o0 = 0; o0 < outputs; o0 += kConvTapChannels) {
    const float* w = weights + o0 * taps;  // [taps][kConvTapChannels], as conv_taps
    V::T acc[kConvTapChannels];
    for (int u = 0; u < kConvTapChannels; ++u) acc[u] = V::set1(0.0f);
    for (std::int64_t t = 0; t < taps; ++t, w += kConvTapChannels) {
      const V::Lanes* m = masks[bits ? t % 3 : 0];  // with masked edges, taps come in threes (c, i, j)
      V::T x = V::load_masked(images[0] + offsets[t], m[0]);
      for (int s = 1; s < count; ++s) x = V::load_masked_into(x, images[s] + offsets[t] - s * lanes, m[s]);
      RML_UNROLL
      for (int u = 0; u < kConvTapChannels; ++u) acc[u] = V::fma(V::set1(w[u]), x, acc[u]);
    }
    for (int u = 0; u < kConvTapChannels && o0 + u < outputs; ++u) {
      const V::T y = conv_output_v(acc[u], bias != nullptr, V::set1(bias ? bias[o0 + u] : 0.0f), relu);
      for (int s = 0; s < count; ++s) V::store_masked(outs[s] + (o0 + u) * out_stride - s * lanes, y, own[s]);
    }
  }
}

/// Two vectors of pixels per pass with 32 registers, one with 16; with at
/// most four output channels (a 1x1 conv to RGB), four channels over twice
/// as many vectors instead of eight channels, half of them idle.
inline void conv_taps(const float* image, const std::int64_t* offsets, std::int64_t taps, const float* weights,
                      const float* bias, bool relu, const ConvColumns* columns, std::int64_t outputs, float* out,
                      std::int64_t out_stride, std::int64_t n) {
  // The masks' bits at each pass's first column (one division a pass).
  const auto bits_at = [&](std::int64_t l) {
    return columns ? columns->bits + (columns->first_column + l) % columns->width * 3 : nullptr;
  };
  if (outputs <= 4) {  // never with masked edges (DirectConv2dKernel: more than four outputs)
    constexpr int kWide = V::kLanes >= 16 ? 4 : 2;
    std::int64_t l = 0;
    for (; n - l > (kWide - 1) * V::kLanes; l += kWide * V::kLanes)
      conv_taps_pass<kWide, 4>(image + l, offsets, taps, weights, bias, relu, outputs, out + l, out_stride,
                               std::min<std::int64_t>(n - l - (kWide - 1) * V::kLanes, V::kLanes));
    for (; l < n; l += V::kLanes)
      conv_taps_pass<1, 4>(image + l, offsets, taps, weights, bias, relu, outputs, out + l, out_stride,
                           std::min<std::int64_t>(n - l, V::kLanes));
    return;
  }
  constexpr int kChunks = V::kLanes >= 16 ? 2 : 1;
  for (std::int64_t l = 0; l < n; l += kChunks * V::kLanes) {
    const bool whole = n - l > (kChunks - 1) * V::kLanes;  // the pass's last vector has lanes
    const std::uint64_t* bits = bits_at(l);
    for (std::int64_t o0 = 0; o0 < outputs; o0 += kConvTapChannels) {
      const float* w = weights + o0 * taps;  // [taps][kConvTapChannels], zeros past `outputs`
      const std::int64_t channels = outputs - o0;
      const float* b = bias ? bias + o0 : nullptr;
      float* dst = out + o0 * out_stride + l;
      if (whole)
        conv_taps_at<kChunks>(image, offsets, taps, w, b, relu, bits, l, channels, dst, out_stride,
                              n - l - (kChunks - 1) * V::kLanes);
      else
        conv_taps_at<1>(image, offsets, taps, w, b, relu, bits, l, channels, dst, out_stride, n - l);
    }
  }
}
