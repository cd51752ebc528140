// Single-precision GEMM, C = A · B, with B packed ahead of time (Goto/BLIS).
//
// Determinism: every C element is one fused-multiply-add chain over k in
// order, c = fma(a[K-1], b[K-1], ... fma(a[0], b[0], 0)). The K blocking
// only decides when the running sums pass through C between blocks, which
// does not change a single rounding, and M/N tiling never touches the order.
// So any split of the M and N ranges (across threads or calls) produces
// bit-identical results, and the scalar fallback matches the AVX2 path.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace rml::exec {

namespace gemm_detail {

/// Micro-tile: MR rows of A against an NR-wide panel of B. 6 x 16 keeps 12
/// ymm accumulators plus two B vectors and one broadcast in the 16 registers.
inline constexpr std::int64_t kMR = 6;
inline constexpr std::int64_t kNR = 16;
/// K-block depth: one B micro-panel (kKC x kNR floats, 16 KiB) stays in L1.
inline constexpr std::int64_t kKC = 256;
/// Rows of A packed at once: a kMC x kKC block (72 KiB) stays in L2 with
/// room for the B panels streaming past it (measured best of 48..240).
inline constexpr std::int64_t kMC = 72;
inline constexpr std::size_t kAlign = 64;

inline std::int64_t panel_count(std::int64_t N) { return (N + kNR - 1) / kNR; }

struct AlignedFree {
  void operator()(float* p) const { ::operator delete[](p, std::align_val_t{kAlign}); }
};

/// Packs rows [0, rows) x k [0, kc) of A (row-major, lda) into kMR-row
/// micro-panels: panel r holds, for each k, the kMR values A[r*kMR + i][k].
/// Rows past `rows` are zero so edge tiles run the same kernel.
inline void pack_a(const float* a, std::int64_t lda, std::int64_t rows, std::int64_t kc, float* dst) {
  for (std::int64_t r0 = 0; r0 < rows; r0 += kMR) {
    const std::int64_t valid = std::min(kMR, rows - r0);
    const float* src[kMR];
    for (std::int64_t i = 0; i < kMR; ++i) src[i] = a + (r0 + std::min(i, valid - 1)) * lda;
    if (valid == kMR) {
      for (std::int64_t k = 0; k < kc; ++k, dst += kMR)
        for (std::int64_t i = 0; i < kMR; ++i) dst[i] = src[i][k];
    } else {
      for (std::int64_t k = 0; k < kc; ++k, dst += kMR)
        for (std::int64_t i = 0; i < kMR; ++i) dst[i] = i < valid ? src[i][k] : 0.0f;
    }
  }
}

#if defined(__AVX2__) && defined(__FMA__)

/// c[0:6, 0:16] (row stride ldc) = running sums continued over kc steps:
/// starts from zero when `first`, else from the values already in c.
/// a: kc x 6 packed A, b: kc x 16 packed B.
inline void micro_kernel(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc,
                         bool first) {
  __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
  if (first) {
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
  } else {
    c00 = _mm256_loadu_ps(c + 0 * ldc), c01 = _mm256_loadu_ps(c + 0 * ldc + 8);
    c10 = _mm256_loadu_ps(c + 1 * ldc), c11 = _mm256_loadu_ps(c + 1 * ldc + 8);
    c20 = _mm256_loadu_ps(c + 2 * ldc), c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
    c30 = _mm256_loadu_ps(c + 3 * ldc), c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
    c40 = _mm256_loadu_ps(c + 4 * ldc), c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
    c50 = _mm256_loadu_ps(c + 5 * ldc), c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
  }
  for (std::int64_t k = 0; k < kc; ++k, a += kMR, b += kNR) {
    const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
    __m256 ai = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(ai, b0, c00), c01 = _mm256_fmadd_ps(ai, b1, c01);
    ai = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(ai, b0, c10), c11 = _mm256_fmadd_ps(ai, b1, c11);
    ai = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(ai, b0, c20), c21 = _mm256_fmadd_ps(ai, b1, c21);
    ai = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(ai, b0, c30), c31 = _mm256_fmadd_ps(ai, b1, c31);
    ai = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(ai, b0, c40), c41 = _mm256_fmadd_ps(ai, b1, c41);
    ai = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(ai, b0, c50), c51 = _mm256_fmadd_ps(ai, b1, c51);
  }
  _mm256_storeu_ps(c + 0 * ldc, c00), _mm256_storeu_ps(c + 0 * ldc + 8, c01);
  _mm256_storeu_ps(c + 1 * ldc, c10), _mm256_storeu_ps(c + 1 * ldc + 8, c11);
  _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
  _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
  _mm256_storeu_ps(c + 4 * ldc, c40), _mm256_storeu_ps(c + 4 * ldc + 8, c41);
  _mm256_storeu_ps(c + 5 * ldc, c50), _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}

#else

/// Portable version of the kernel above: the same fma chain per element.
inline void micro_kernel(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc,
                         bool first) {
  float acc[kMR][kNR];
  for (std::int64_t i = 0; i < kMR; ++i)
    for (std::int64_t j = 0; j < kNR; ++j) acc[i][j] = first ? 0.0f : c[i * ldc + j];
  for (std::int64_t k = 0; k < kc; ++k, a += kMR, b += kNR)
    for (std::int64_t i = 0; i < kMR; ++i)
      for (std::int64_t j = 0; j < kNR; ++j) acc[i][j] = std::fma(a[i], b[j], acc[i][j]);
  for (std::int64_t i = 0; i < kMR; ++i)
    for (std::int64_t j = 0; j < kNR; ++j) c[i * ldc + j] = acc[i][j];
}

#endif

/// A partial tile (fewer rows, or only columns [col_lo, col_hi) of the panel)
/// goes through a full-size local tile so its arithmetic matches a full one.
inline void edge_tile(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc,
                      std::int64_t rows, std::int64_t col_lo, std::int64_t col_hi, bool first) {
  alignas(kAlign) float tile[kMR * kNR] = {};
  const std::size_t row_bytes = static_cast<std::size_t>(col_hi - col_lo) * sizeof(float);
  if (!first)
    for (std::int64_t i = 0; i < rows; ++i) std::memcpy(tile + i * kNR + col_lo, c + i * ldc + col_lo, row_bytes);
  micro_kernel(kc, a, b, tile, kNR, first);
  for (std::int64_t i = 0; i < rows; ++i) std::memcpy(c + i * ldc + col_lo, tile + i * kNR + col_lo, row_bytes);
}

/// A single row of A against `P` consecutive packed panels of B: out[q*16 + j]
/// = sum over k of a[k] * panel_q[k][j], each one fma chain over k in order
/// (the chain the tiled path runs, so the same bits), 2P chains in flight to
/// hide the FMA latency. No packing of A: a batch-1 product streams B once.
template <int P>
inline void row_panels(const float* a, const float* b, std::int64_t K, float* out) {
#if defined(__AVX2__) && defined(__FMA__)
  __m256 acc[2 * P];
  for (int i = 0; i < 2 * P; ++i) acc[i] = _mm256_setzero_ps();
  for (std::int64_t k = 0; k < K; ++k) {
    const __m256 ak = _mm256_broadcast_ss(a + k);
    for (int q = 0; q < P; ++q) {
      const float* bk = b + (q * K + k) * kNR;
      acc[2 * q] = _mm256_fmadd_ps(ak, _mm256_loadu_ps(bk), acc[2 * q]);
      acc[2 * q + 1] = _mm256_fmadd_ps(ak, _mm256_loadu_ps(bk + 8), acc[2 * q + 1]);
    }
  }
  for (int i = 0; i < 2 * P; ++i) _mm256_storeu_ps(out + i * 8, acc[i]);
#else
  for (int q = 0; q < P; ++q)
    for (std::int64_t j = 0; j < kNR; ++j) {
      float acc = 0.0f;
      for (std::int64_t k = 0; k < K; ++k) acc = std::fma(a[k], b[(q * K + k) * kNR + j], acc);
      out[q * kNR + j] = acc;
    }
#endif
}

/// C[0, n0:n1] = a · B[:, n0:n1] for one row a, four panels at a time.
inline void gemv_row(const float* a, const float* b_data, std::int64_t K, float* c, std::int64_t n0, std::int64_t n1) {
  constexpr int kPanels = 4;
  alignas(kAlign) float out[kPanels * kNR];
  const std::int64_t panel_end = panel_count(n1);
  for (std::int64_t p = n0 / kNR; p < panel_end; p += kPanels) {
    const std::int64_t count = std::min<std::int64_t>(kPanels, panel_end - p);
    const float* b = b_data + p * K * kNR;
    switch (count) {
      case 4: row_panels<4>(a, b, K, out); break;
      case 3: row_panels<3>(a, b, K, out); break;
      case 2: row_panels<2>(a, b, K, out); break;
      default: row_panels<1>(a, b, K, out); break;
    }
    const std::int64_t lo = std::max(n0, p * kNR), hi = std::min(n1, (p + count) * kNR);
    std::memcpy(c + lo, out + (lo - p * kNR), static_cast<std::size_t>(hi - lo) * sizeof(float));
  }
}

}  // namespace gemm_detail

struct PackedBView;

namespace gemm_detail {
/// One packed A block (mc rows of k-block k0, kc deep) against B's panels
/// covering columns [n0, n1): C rows [0, mc) of the block. Panel outer, rows
/// inner: the B micro-panel stays in L1 while the packed A block streams from L2.
inline void block_product(const float* packed_a, std::int64_t mc, std::int64_t kc, std::int64_t k0, const PackedBView& B,
                          float* C, std::int64_t ldc, std::int64_t n0, std::int64_t n1);
}  // namespace gemm_detail

/// B [K x N] packed into panels for the micro-kernel. Owns its memory (64-byte aligned).
///
/// Layout: ceil(N/16) column panels one after another; panel p is K rows of
/// 16 floats (columns 16p .. 16p+15, zero past N), so the K-block starting
/// at row k0 of panel p is the contiguous run at p*K*16 + k0*16.
class PackedB {
 public:
  PackedB() = default;
  PackedB(const float* b, std::int64_t K, std::int64_t N, std::int64_t ldb) : K_(K), N_(N) {
    const std::size_t size = bytes(K, N);
    if (size == 0) return;
    data_.reset(static_cast<float*>(::operator new[](size, std::align_val_t{gemm_detail::kAlign})));
    pack_into(data_.get(), b, K, N, ldb);
  }

  std::int64_t rows() const { return K_; }
  std::int64_t cols() const { return N_; }
  const float* data() const { return data_.get(); }

  static std::size_t bytes(std::int64_t K, std::int64_t N) {
    if (K <= 0 || N <= 0) return 0;
    return static_cast<std::size_t>(gemm_detail::panel_count(N) * K * gemm_detail::kNR) * sizeof(float);
  }

  /// Same layout into caller memory (dst 64-byte aligned, bytes(K, N) long).
  static void pack_into(float* dst, const float* b, std::int64_t K, std::int64_t N, std::int64_t ldb) {
    using gemm_detail::kNR;
    for (std::int64_t p = 0; p < gemm_detail::panel_count(N); ++p) {
      const std::int64_t col0 = p * kNR, width = std::min(kNR, N - col0);
      for (std::int64_t k = 0; k < K; ++k, dst += kNR) {
        const float* src = b + k * ldb + col0;
        for (std::int64_t j = 0; j < width; ++j) dst[j] = src[j];
        for (std::int64_t j = width; j < kNR; ++j) dst[j] = 0.0f;
      }
    }
  }

  /// The same layout for B given transposed: element (k, n) is bt[n * ldbt + k]
  /// (attention's K^T from K, without materialising the transpose).
  static void pack_transposed_into(float* dst, const float* bt, std::int64_t K, std::int64_t N, std::int64_t ldbt) {
    using gemm_detail::kNR;
    for (std::int64_t p = 0; p < gemm_detail::panel_count(N); ++p) {
      const std::int64_t col0 = p * kNR, width = std::min(kNR, N - col0);
      for (std::int64_t k = 0; k < K; ++k, dst += kNR) {
        for (std::int64_t j = 0; j < width; ++j) dst[j] = bt[(col0 + j) * ldbt + k];
        for (std::int64_t j = width; j < kNR; ++j) dst[j] = 0.0f;
      }
    }
  }

 private:
  std::int64_t K_ = 0, N_ = 0;
  std::unique_ptr<float[], gemm_detail::AlignedFree> data_;
};

/// Non-owning view of packed B memory (from PackedB or pack_into).
struct PackedBView {
  const float* data;
  std::int64_t K, N;
};

inline PackedBView view(const PackedB& b) { return {b.data(), b.rows(), b.cols()}; }

inline void gemm_detail::block_product(const float* packed_a, std::int64_t mc, std::int64_t kc, std::int64_t k0,
                                       const PackedBView& B, float* C, std::int64_t ldc, std::int64_t n0, std::int64_t n1) {
  const bool first = k0 == 0;
  for (std::int64_t p = n0 / kNR; p < panel_count(n1); ++p) {
    const float* b = B.data + p * B.K * kNR + k0 * kNR;
    const std::int64_t col0 = p * kNR;
    const std::int64_t col_lo = std::max(n0, col0) - col0, col_hi = std::min(n1, col0 + kNR) - col0;
    const bool full_width = col_lo == 0 && col_hi == kNR;
    for (std::int64_t r = 0; r < mc; r += kMR) {
      const float* a = packed_a + r * kc;
      float* c = C + r * ldc + col0;
      const std::int64_t rows = std::min(kMR, mc - r);
      if (full_width && rows == kMR)
        micro_kernel(kc, a, b, c, ldc, first);
      else
        edge_tile(kc, a, b, c, ldc, rows, col_lo, col_hi, first);
    }
  }
}

/// Constant right operands packed once per plan, shared by every kernel that
/// multiplies by the same value (an unrolled LSTM's steps all read one weight
/// matrix: one packed copy, not one per step).
class PackedWeightCache {
 public:
  using Packed = std::vector<PackedB>;  // one per batch matrix

  /// `b` viewed as `batches` row-major K x N matrices, packed (once per value).
  std::shared_ptr<const Packed> get(std::uint32_t value, const float* b, std::int64_t batches, std::int64_t K,
                                    std::int64_t N) {
    auto& slot = packed_[value];
    if (!slot) {
      auto packed = std::make_shared<Packed>();
      for (std::int64_t i = 0; i < batches; ++i) packed->emplace_back(b + i * K * N, K, N, N);
      slot = std::move(packed);
    }
    return slot;
  }

  /// Bytes of packed weights held, each value counted once.
  std::size_t bytes() const {
    std::size_t total = 0;
    for (const auto& [value, packed] : packed_)
      for (const PackedB& matrix : *packed) total += PackedB::bytes(matrix.rows(), matrix.cols());
    return total;
  }

 private:
  std::map<std::uint32_t, std::shared_ptr<const Packed>> packed_;
};

/// Per-thread scratch needed to pack A blocks, in bytes (64-byte aligned memory expected).
inline std::size_t gemm_scratch_bytes(std::int64_t K) {
  const std::int64_t kc = std::clamp<std::int64_t>(K, 1, gemm_detail::kKC);
  return static_cast<std::size_t>(gemm_detail::kMC * kc) * sizeof(float);
}

/// C[m0:m1, n0:n1] = A[m0:m1, :] · B[:, n0:n1] (overwrites C in that rectangle).
/// A row-major with lda; C row-major with ldc. A and C need not be aligned.
/// `scratch` holds gemm_scratch_bytes(B.K) bytes; no allocation happens here.
inline void gemm(const float* A, std::int64_t lda, PackedBView B, float* C, std::int64_t ldc,
                 std::int64_t m0, std::int64_t m1, std::int64_t n0, std::int64_t n1, float* scratch) {
  using namespace gemm_detail;
  if (m1 <= m0 || n1 <= n0) return;
  const std::int64_t K = B.K;
  if (K <= 0) {
    for (std::int64_t i = m0; i < m1; ++i) std::fill(C + i * ldc + n0, C + i * ldc + n1, 0.0f);
    return;
  }
  if (m1 - m0 == 1) return gemv_row(A + m0 * lda, B.data, K, C + m0 * ldc, n0, n1);  // a batch-1 product
  for (std::int64_t k0 = 0; k0 < K; k0 += kKC) {
    const std::int64_t kc = std::min(kKC, K - k0);
    for (std::int64_t i0 = m0; i0 < m1; i0 += kMC) {
      const std::int64_t mc = std::min(kMC, m1 - i0);
      pack_a(A + i0 * lda + k0, lda, mc, kc, scratch);
      gemm_detail::block_product(scratch, mc, kc, k0, B, C + i0 * ldc, ldc, n0, n1);
    }
  }
}

/// A constant left operand (convolution weights) packed once, for one fixed row
/// range [m0, m1): every (k-block, row-block) exactly as gemm() packs it per
/// call, so gemm(PackedA, ...) computes the same bits without the packing.
class PackedA {
 public:
  PackedA(const float* a, std::int64_t lda, std::int64_t m0, std::int64_t m1, std::int64_t K) : m0_(m0), m1_(m1) {
    using namespace gemm_detail;
    std::size_t floats = 0;
    for (std::int64_t k0 = 0; k0 < K; k0 += kKC)
      for (std::int64_t i0 = m0; i0 < m1; i0 += kMC)
        floats += static_cast<std::size_t>((std::min(kMC, m1 - i0) + kMR - 1) / kMR * kMR * std::min(kKC, K - k0));
    data_.resize(floats);
    float* dst = data_.data();
    for (std::int64_t k0 = 0; k0 < K; k0 += kKC)
      for (std::int64_t i0 = m0; i0 < m1; i0 += kMC) {
        const std::int64_t mc = std::min(kMC, m1 - i0), kc = std::min(kKC, K - k0);
        pack_a(a + i0 * lda + k0, lda, mc, kc, dst);
        dst += (mc + kMR - 1) / kMR * kMR * kc;
      }
  }
  std::int64_t rows_begin() const { return m0_; }
  std::int64_t rows_end() const { return m1_; }
  const float* data() const { return data_.data(); }

 private:
  std::int64_t m0_, m1_;
  std::vector<float> data_;
};

/// C[m0:m1, n0:n1] = A · B[:, n0:n1] with A packed ahead (rows [m0, m1) of its PackedA).
inline void gemm(const PackedA& A, PackedBView B, float* C, std::int64_t ldc, std::int64_t n0, std::int64_t n1) {
  using namespace gemm_detail;
  const std::int64_t m0 = A.rows_begin(), m1 = A.rows_end(), K = B.K;
  if (m1 <= m0 || n1 <= n0) return;
  if (K <= 0) {
    for (std::int64_t i = m0; i < m1; ++i) std::fill(C + i * ldc + n0, C + i * ldc + n1, 0.0f);
    return;
  }
  const float* a = A.data();
  for (std::int64_t k0 = 0; k0 < K; k0 += kKC) {
    const std::int64_t kc = std::min(kKC, K - k0);
    for (std::int64_t i0 = m0; i0 < m1; i0 += kMC) {
      const std::int64_t mc = std::min(kMC, m1 - i0);
      block_product(a, mc, kc, k0, B, C + i0 * ldc, ldc, n0, n1);
      a += (mc + kMR - 1) / kMR * kMR * kc;
    }
  }
}

}  // namespace rml::exec
