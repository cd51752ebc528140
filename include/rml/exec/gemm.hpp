// Single-precision GEMM, C = A · B, with B packed ahead of time (Goto/BLIS).
//
// Determinism: every C element is one fused-multiply-add chain over k in
// order, c = fma(a[K-1], b[K-1], ... fma(a[0], b[0], 0)). The K blocking
// only decides when the running sums pass through C between blocks, which
// does not change a single rounding, and M/N tiling never touches the order.
// So any split of the M and N ranges (across threads or calls) produces
// bit-identical results, and every instruction set's kernels
// (exec/gemm_kernels.hpp) give the same bits too.
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

#include "rml/exec/gemm_kernels.hpp"

namespace rml::exec {

namespace gemm_detail {

/// K-block depth: one B micro-panel (kKC x nr floats, 16 or 32 KiB) stays in L1.
inline constexpr std::int64_t kKC = 256;
/// Rows of A packed (or read in place) at once: a kMC x kKC block (72 KiB)
/// stays in L2 with room for the B panels streaming past it (measured best
/// of 48..240); whole micro-tiles of the 6-, 8- and 12-row sets (the narrow
/// AVX-512 set's 16-row tiles read A in place kMC / 16 whole tiles at a time, and
/// pack only the rows left after them, fewer than 16).
inline constexpr std::int64_t kMC = 72;
static_assert(kMC % 24 == 0);
inline constexpr std::size_t kAlign = 64;

inline std::int64_t panel_count(std::int64_t N, std::int64_t nr) { return (N + nr - 1) / nr; }

struct AlignedFree {
  void operator()(float* p) const { ::operator delete[](p, std::align_val_t{kAlign}); }
};

#if RML_X86_DISPATCH
/// pack_a's inner loop for k [0, kc8), kc8 a multiple of 8: 8 x 8 blocks
/// (8 rows, 8 k) transposed in registers; `valid` rows of the panel are
/// read, the rest of its mr rows are written as zeros.
RML_TARGET_AVX2 inline void pack_a_panel_avx2(const float* a, std::int64_t lda, std::int64_t valid, std::int64_t kc8,
                                              float* dst, std::int64_t mr) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (std::int64_t r0 = 0; r0 < mr; r0 += 8) {
    const std::int64_t width = std::min<std::int64_t>(8, mr - r0);  // rows of this block written per k
    const __m256i store_mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(width)), lane);
    for (std::int64_t k = 0; k < kc8; k += 8) {
      __m256 v[8];
      for (int j = 0; j < 8; ++j) v[j] = r0 + j < valid ? _mm256_loadu_ps(a + (r0 + j) * lda + k) : _mm256_setzero_ps();
      const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
      const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
      const __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
      const __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
      const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
      const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
      const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
      const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
      // column j: rows r0 .. r0 + 7 at k + j
      const __m256 column[8] = {_mm256_permute2f128_ps(s0, s4, 0x20), _mm256_permute2f128_ps(s1, s5, 0x20),
                                _mm256_permute2f128_ps(s2, s6, 0x20), _mm256_permute2f128_ps(s3, s7, 0x20),
                                _mm256_permute2f128_ps(s0, s4, 0x31), _mm256_permute2f128_ps(s1, s5, 0x31),
                                _mm256_permute2f128_ps(s2, s6, 0x31), _mm256_permute2f128_ps(s3, s7, 0x31)};
      for (int j = 0; j < 8; ++j) {
        float* out = dst + (k + j) * mr + r0;
        if (width == 8)
          _mm256_storeu_ps(out, column[j]);
        else
          _mm256_maskstore_ps(out, store_mask, column[j]);
      }
    }
  }
}
#endif

/// Packs rows [0, rows) x k [0, kc) of A (row-major, lda) into mr-row
/// micro-panels: panel r holds, for each k, the mr values A[r*mr + i][k].
/// Rows past `rows` are zero so edge tiles run the same kernel. A copy, so
/// the vector path (8 x 8 transposes) gives the same bytes as the scalar one.
inline void pack_a(const float* a, std::int64_t lda, std::int64_t rows, std::int64_t kc, float* dst, std::int64_t mr) {
  for (std::int64_t r0 = 0; r0 < rows; r0 += mr, dst += mr * kc) {
    const std::int64_t valid = std::min(mr, rows - r0);
    std::int64_t k = 0;
#if RML_X86_DISPATCH
    if (active_isa() >= Isa::avx2) {
      k = kc / 8 * 8;
      pack_a_panel_avx2(a + r0 * lda, lda, valid, k, dst, mr);
    }
#endif
    for (; k < kc; ++k)
      for (std::int64_t i = 0; i < mr; ++i) dst[k * mr + i] = i < valid ? a[(r0 + i) * lda + k] : 0.0f;
  }
}

/// Floats pack_a writes for `rows` rows.
inline std::int64_t packed_a_floats(std::int64_t rows, std::int64_t kc, std::int64_t mr) {
  return (rows + mr - 1) / mr * mr * kc;
}

/// A partial tile (fewer rows, or only columns [col_lo, col_hi) of the panel)
/// goes through a full-size local tile so its arithmetic matches a full one;
/// `run(tile, ldt, first)` is the micro-kernel call for it.
template <class Run>
inline void edge_tile(std::int64_t nr, float* c, std::int64_t ldc, std::int64_t rows, std::int64_t col_lo,
                      std::int64_t col_hi, bool first, Run run) {
  alignas(kAlign) float tile[kMaxMR * kMaxNR] = {};
  const std::size_t row_bytes = static_cast<std::size_t>(col_hi - col_lo) * sizeof(float);
  if (!first)
    for (std::int64_t i = 0; i < rows; ++i) std::memcpy(tile + i * nr + col_lo, c + i * ldc + col_lo, row_bytes);
  run(tile, nr, first);
  for (std::int64_t i = 0; i < rows; ++i) std::memcpy(c + i * ldc + col_lo, tile + i * nr + col_lo, row_bytes);
}

/// C[0, n0:n1] = a · B[:, n0:n1] for one row a, kRowPanels panels at a time.
inline void gemv_row(const Kernels& kernels, const float* a, const float* b_data, std::int64_t K, float* c,
                     std::int64_t n0, std::int64_t n1) {
  const std::int64_t nr = kernels.nr;
  alignas(kAlign) float out[kRowPanels * kMaxNR];
  const std::int64_t panel_end = panel_count(n1, nr);
  for (std::int64_t p = n0 / nr; p < panel_end; p += kRowPanels) {
    const auto count = static_cast<int>(std::min<std::int64_t>(kRowPanels, panel_end - p));
    kernels.row(a, b_data + p * K * nr, K, count, out);
    const std::int64_t lo = std::max(n0, p * nr), hi = std::min(n1, (p + count) * nr);
    std::memcpy(c + lo, out + (lo - p * nr), static_cast<std::size_t>(hi - lo) * sizeof(float));
  }
}

}  // namespace gemm_detail

/// Non-owning view of packed B memory (from PackedB or pack_into), with the
/// kernel set its panel width was laid out for.
struct PackedBView {
  const float* data;
  std::int64_t K, N;
  const gemm_detail::Kernels* kernels;
};

namespace gemm_detail {
/// Rows [0, mc) of C for k-block k0 against B's panels covering
/// columns [n0, n1); `tile(r, b, c, ldc, first)` runs the micro-kernel for the
/// tile at row r (its A wherever the caller keeps it). Panel outer, rows inner:
/// the B micro-panel stays in L1 while A streams from L2.
template <class Tile>
inline void block_product(std::int64_t mc, std::int64_t k0, const PackedBView& B, float* C, std::int64_t ldc,
                          std::int64_t n0, std::int64_t n1, Tile tile) {
  const Kernels& kernels = *B.kernels;
  const std::int64_t nr = kernels.nr, mr = kernels.mr;
  const bool first = k0 == 0;
  for (std::int64_t p = n0 / nr; p < panel_count(n1, nr); ++p) {
    const float* b = B.data + p * B.K * nr + k0 * nr;
    const std::int64_t col0 = p * nr;
    const std::int64_t col_lo = std::max(n0, col0) - col0, col_hi = std::min(n1, col0 + nr) - col0;
    const bool full_width = col_lo == 0 && col_hi == nr;
    for (std::int64_t r = 0; r < mc; r += mr) {
      float* c = C + r * ldc + col0;
      const std::int64_t rows = std::min(mr, mc - r);
      if (full_width && rows == mr)
        tile(r, b, c, ldc, first);
      else
        edge_tile(nr, c, ldc, rows, col_lo, col_hi, first,
                  [&](float* staged, std::int64_t lds, bool f) { tile(r, b, staged, lds, f); });
    }
  }
}

/// One packed A block (mc rows, kc deep, as pack_a writes it) at k-block k0.
inline void block_product(const float* packed_a, std::int64_t mc, std::int64_t kc, std::int64_t k0, const PackedBView& B,
                          float* C, std::int64_t ldc, std::int64_t n0, std::int64_t n1) {
  const Kernels& kernels = *B.kernels;
  block_product(mc, k0, B, C, ldc, n0, n1, [&](std::int64_t r, const float* b, float* c, std::int64_t ldc_, bool first) {
    kernels.micro(kc, packed_a + r * kc, b, c, ldc_, first);
  });
}

/// C[m0:m, n0:n1] for the largest m <= m1 of whole micro-tiles, with A read
/// in place (the kernel set's `micro_in_place`); returns m, where packing takes over.
inline std::int64_t in_place_rows(const float* A, std::int64_t lda, const PackedBView& B, float* C, std::int64_t ldc,
                                  std::int64_t m0, std::int64_t m1, std::int64_t n0, std::int64_t n1) {
  const Kernels& kernels = *B.kernels;
  const std::int64_t m = m0 + (m1 - m0) / kernels.mr * kernels.mr;
  const std::int64_t block_rows = kMC / kernels.mr * kernels.mr;  // whole tiles: each reads mr rows of A
  for (std::int64_t k0 = 0; k0 < B.K; k0 += kKC) {
    const std::int64_t kc = std::min(kKC, B.K - k0);
    for (std::int64_t i0 = m0; i0 < m; i0 += block_rows) {
      const float* a = A + i0 * lda + k0;
      block_product(std::min(block_rows, m - i0), k0, B, C + i0 * ldc, ldc, n0, n1,
                    [&](std::int64_t r, const float* b, float* c, std::int64_t ldc_, bool first) {
                      kernels.micro_in_place(kc, a + r * lda, lda, b, c, ldc_, first);
                    });
    }
  }
  return m;
}
}  // namespace gemm_detail

/// B [K x N] packed into panels for the micro-kernel of one instruction set
/// (the process's unless given; gemm_detail::kernels_for). Owns its memory (64-byte aligned).
///
/// Layout: ceil(N/nr) column panels one after another, nr = the kernel set's
/// panel width (16, or 32 for AVX-512); panel p is K rows of nr floats
/// (columns nr*p .. nr*p+nr-1, zero past N), so the K-block starting at row
/// k0 of panel p is the contiguous run at (p*K + k0)*nr.
class PackedB {
 public:
  PackedB() = default;
  PackedB(const float* b, std::int64_t K, std::int64_t N, std::int64_t ldb, Isa isa = active_isa())
      : K_(K), N_(N), kernels_(&gemm_detail::kernels_for(N, isa)) {
    const std::size_t size = bytes(K, N, isa);
    if (size == 0) return;
    data_.reset(static_cast<float*>(::operator new[](size, std::align_val_t{gemm_detail::kAlign})));
    pack_into(data_.get(), b, K, N, ldb, isa);
  }

  std::int64_t rows() const { return K_; }
  std::int64_t cols() const { return N_; }
  const float* data() const { return data_.get(); }
  const gemm_detail::Kernels* kernels() const { return kernels_; }

  static std::size_t bytes(std::int64_t K, std::int64_t N, Isa isa = active_isa()) {
    if (K <= 0 || N <= 0) return 0;
    const std::int64_t nr = gemm_detail::kernels_for(N, isa).nr;
    return static_cast<std::size_t>(gemm_detail::panel_count(N, nr) * K * nr) * sizeof(float);
  }

  /// Same layout into caller memory (dst 64-byte aligned, bytes(K, N) long).
  static PackedBView pack_into(float* dst, const float* b, std::int64_t K, std::int64_t N, std::int64_t ldb,
                               Isa isa = active_isa()) {
    const gemm_detail::Kernels& kernels = gemm_detail::kernels_for(N, isa);
    const std::int64_t nr = kernels.nr;
    for (std::int64_t p = 0; p < gemm_detail::panel_count(N, nr); ++p) {
      const std::int64_t col0 = p * nr, width = std::min(nr, N - col0);
      float* out = dst + p * K * nr;
      if (width == nr)  // a whole panel row: fixed-size copies the compiler emits as vector moves
        for (std::int64_t k = 0; k < K; ++k) copy_row(out + k * nr, b + k * ldb + col0, nr);
      else
        for (std::int64_t k = 0; k < K; ++k) {
          std::memcpy(out + k * nr, b + k * ldb + col0, static_cast<std::size_t>(width) * sizeof(float));
          std::fill(out + k * nr + width, out + (k + 1) * nr, 0.0f);
        }
    }
    return {dst, K, N, &kernels};
  }

  /// The same layout for B given transposed: element (k, n) is bt[n * ldbt + k]
  /// (attention's K^T from K, without materialising the transpose), 8 x 8
  /// blocks transposed in registers.
  static PackedBView pack_transposed_into(float* dst, const float* bt, std::int64_t K, std::int64_t N,
                                          std::int64_t ldbt, Isa isa = active_isa()) {
    const gemm_detail::Kernels& kernels = gemm_detail::kernels_for(N, isa);
    const std::int64_t nr = kernels.nr;
    for (std::int64_t p = 0; p < gemm_detail::panel_count(N, nr); ++p) {
      const std::int64_t col0 = p * nr, width = std::min(nr, N - col0);
      // The panel's columns are rows of bt: pack_a's layout for nr-row panels.
      gemm_detail::pack_a(bt + col0 * ldbt, ldbt, width, K, dst + p * K * nr, nr);
    }
    return {dst, K, N, &kernels};
  }

 private:
  static void copy_row(float* dst, const float* src, std::int64_t nr) {
    switch (nr) {
      case 32: std::memcpy(dst, src, 32 * sizeof(float)); return;
      case 16: std::memcpy(dst, src, 16 * sizeof(float)); return;
      case 8: std::memcpy(dst, src, 8 * sizeof(float)); return;
      default: std::memcpy(dst, src, static_cast<std::size_t>(nr) * sizeof(float));
    }
  }

  std::int64_t K_ = 0, N_ = 0;
  const gemm_detail::Kernels* kernels_ = nullptr;
  std::unique_ptr<float[], gemm_detail::AlignedFree> data_;
};

inline PackedBView view(const PackedB& b) { return {b.data(), b.rows(), b.cols(), b.kernels()}; }

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
      packed->reserve(static_cast<std::size_t>(batches));
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

/// Output tile sizes for a product of `batches` M x N matrices, K deep, on
/// `threads` workers: 96 x 256 (what one thread runs best), unless that
/// leaves fewer than two tiles per worker; then columns, and after them rows,
/// are halved (whole panels and micro-tiles only) while a tile keeps at least
/// kMinTileWork multiply-adds (about 2 us: less would not pay for the hand-off);
/// with several workers and at most two tiles each, the column tiles are then
/// evened out (balanced_cols).
/// Tiling never changes a result bit, so it is free to depend on the thread count.
struct GemmTiles {
  std::int64_t rows = 96, cols = 256;
};
inline constexpr std::int64_t kMinTileWork = 128 * 1024;
inline constexpr std::int64_t kMinTileRows = 16;  // two 8-row micro-tiles
/// The column-tile width (whole panels) that finishes soonest when `row_tasks`
/// rows of tiles are shared by `threads` workers: the busiest worker's columns.
/// N = 784 in 256-wide tiles leaves one of two workers 512 columns; two tiles of
/// 416 and 368 leave it 416. Ties keep `cols`.
inline std::int64_t balanced_cols(std::int64_t N, std::int64_t cols, std::int64_t row_tasks, int threads,
                                  std::int64_t nr) {
  auto busiest = [&](std::int64_t width) {
    const std::int64_t tasks = row_tasks * ((N + width - 1) / width);
    return (tasks + threads - 1) / threads * std::min(width, N);
  };
  std::int64_t best = cols;
  for (std::int64_t pieces = 1; pieces <= (N + cols - 1) / cols; ++pieces) {
    const std::int64_t width = ((N + pieces - 1) / pieces + nr - 1) / nr * nr;
    if (busiest(width) < busiest(best)) best = width;
  }
  return best;
}

inline GemmTiles gemm_tiles(std::int64_t M, std::int64_t N, std::int64_t K, std::int64_t batches, int threads,
                            std::int64_t nr) {
  GemmTiles tiles;
  auto count = [&] { return batches * ((M + tiles.rows - 1) / tiles.rows) * ((N + tiles.cols - 1) / tiles.cols); };
  auto work = [&](std::int64_t rows, std::int64_t cols) { return std::min(rows, M) * std::min(cols, N) * K; };
  const std::int64_t wanted = threads > 1 ? 2 * threads : 1;
  while (count() < wanted && tiles.cols / 2 >= 2 * nr && tiles.cols / 2 < N &&
         work(tiles.rows, tiles.cols / 2) >= kMinTileWork)
    tiles.cols /= 2;
  while (count() < wanted && tiles.rows / 2 >= kMinTileRows && tiles.rows / 2 < M &&
         work(tiles.rows / 2, tiles.cols) >= kMinTileWork)
    tiles.rows /= 2;
  if (threads > 1 && count() <= 2 * threads)  // (with more tiles an uneven one matters less than their shape)
    tiles.cols = balanced_cols(N, tiles.cols, batches * ((M + tiles.rows - 1) / tiles.rows), threads, nr);
  return tiles;
}

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
  if (m1 - m0 == 1) return gemv_row(*B.kernels, A + m0 * lda, B.data, K, C + m0 * ldc, n0, n1);  // a batch-1 product
  if (B.kernels->micro_in_place) m0 = in_place_rows(A, lda, B, C, ldc, m0, m1, n0, n1);  // whole micro-tiles; the rest below
  for (std::int64_t k0 = 0; k0 < K; k0 += kKC) {
    const std::int64_t kc = std::min(kKC, K - k0);
    for (std::int64_t i0 = m0; i0 < m1; i0 += kMC) {
      const std::int64_t mc = std::min(kMC, m1 - i0);
      pack_a(A + i0 * lda + k0, lda, mc, kc, scratch, B.kernels->mr);
      gemm_detail::block_product(scratch, mc, kc, k0, B, C + i0 * ldc, ldc, n0, n1);
    }
  }
}

/// A constant left operand (convolution weights) packed once, for one fixed row
/// range [m0, m1): every (k-block, row-block) exactly as gemm() packs it per
/// call, so gemm(PackedA, ...) computes the same bits without the packing.
class PackedA {
 public:
  /// Packed for the micro-panel height of `kernels` (B must be packed for the same set).
  PackedA(const float* a, std::int64_t lda, std::int64_t m0, std::int64_t m1, std::int64_t K,
          const gemm_detail::Kernels& kernels = gemm_detail::kernels())
      : m0_(m0), m1_(m1), kernels_(&kernels) {
    using namespace gemm_detail;
    std::int64_t floats = 0;
    for (std::int64_t k0 = 0; k0 < K; k0 += kKC)
      for (std::int64_t i0 = m0; i0 < m1; i0 += kMC)
        floats += packed_a_floats(std::min(kMC, m1 - i0), std::min(kKC, K - k0), kernels.mr);
    data_.resize(static_cast<std::size_t>(floats));
    float* dst = data_.data();
    for (std::int64_t k0 = 0; k0 < K; k0 += kKC)
      for (std::int64_t i0 = m0; i0 < m1; i0 += kMC) {
        const std::int64_t mc = std::min(kMC, m1 - i0), kc = std::min(kKC, K - k0);
        pack_a(a + i0 * lda + k0, lda, mc, kc, dst, kernels.mr);
        dst += packed_a_floats(mc, kc, kernels.mr);
      }
  }
  std::int64_t rows_begin() const { return m0_; }
  std::int64_t rows_end() const { return m1_; }
  const float* data() const { return data_.data(); }
  const gemm_detail::Kernels& kernels() const { return *kernels_; }

 private:
  std::int64_t m0_, m1_;
  const gemm_detail::Kernels* kernels_;
  std::vector<float> data_;
};

/// C[m0:m1, n0:n1] = A · B[:, n0:n1] with A packed ahead (rows [m0, m1) of its PackedA).
inline void gemm(const PackedA& A, PackedBView B, float* C, std::int64_t ldc, std::int64_t n0, std::int64_t n1) {
  using namespace gemm_detail;
  const std::int64_t m0 = A.rows_begin(), m1 = A.rows_end(), K = B.K;
  if (A.kernels().mr != B.kernels->mr)
    fail(ErrorCode::internal, "gemm: A was packed for ", isa_name(A.kernels().isa), " and B for ", isa_name(B.kernels->isa));
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
      a += packed_a_floats(mc, kc, A.kernels().mr);
    }
  }
}

}  // namespace rml::exec
