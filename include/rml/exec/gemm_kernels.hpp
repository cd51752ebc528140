// The GEMM's inner loops, one set per instruction set (exec/isa.hpp), and the
// packed-B panel width each set is written for.
//
// micro: an mr x nr tile of C, continuing (or starting, when `first`) the
//        running sums over kc steps of packed A (kc x mr) and packed B (kc x nr).
// row:   one row of A against `panels` consecutive packed B panels (1..4),
//        without packing A: the batch-1 product (a recurrent step, a GEMV).
//
// Every set computes each C element as the same fma chain over k in order,
// so all of them give the same bits (only the lanes per instruction differ).
#pragma once

#include <cmath>
#include <cstdint>

#include "rml/exec/isa.hpp"

namespace rml::exec::gemm_detail {

/// Rows of A per micro-tile: 6 with 16 vector registers (AVX2, portable), 8
/// with 32 (AVX-512), which also divides the usual channel counts; 12 for the
/// narrow set (B at most 16 wide: one register per row and 8 columns).
inline constexpr std::int64_t kMaxMR = 16;
/// The widest packed B panel of any set (edge tiles are staged in a buffer this wide).
inline constexpr std::int64_t kMaxNR = 32;
/// The most panels `row` takes at once.
inline constexpr int kRowPanels = 4;

struct Kernels {
  Isa isa;
  std::int64_t mr;  // rows per packed A micro-panel
  std::int64_t nr;  // columns per packed B panel
  void (*micro)(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc, bool first);
  /// The same tile with B row k read from b + offsets[k] (nr floats there):
  /// a convolution's taps read straight from its zero-padded input.
  void (*micro_gathered)(std::int64_t kc, const float* a, const float* b, const std::int64_t* offsets, float* c,
                         std::int64_t ldc, bool first);
  void (*row)(const float* a, const float* b, std::int64_t K, int panels, float* out);
  /// `micro` with the mr rows of A read in place (row-major, lda) instead of
  /// packed, or null. Packing A costs about as much as the product where B is
  /// narrow (the narrow set), and ~5 % of a large AVX-512 product, whose
  /// micro-kernel broadcasts from eight rows as fast as from one packed panel.
  void (*micro_in_place)(std::int64_t kc, const float* a, std::int64_t lda, const float* b, float* c,
                         std::int64_t ldc, bool first) = nullptr;
};

/// Where a micro-kernel finds row k of its B panel.
template <std::int64_t NR>
struct PackedRows {  // one after another
  const float* b;
  const float* operator()(std::int64_t k) const { return b + k * NR; }
};
struct GatheredRows {  // anywhere
  const float* b;
  const std::int64_t* offsets;
  const float* operator()(std::int64_t k) const { return b + offsets[k]; }
};

/// Where a micro-kernel finds A[i][k] of its tile: a packed micro-panel
/// (mr values per k, one after another) or the rows in place.
template <std::int64_t MR>
struct PackedCols {
  const float* a;
  const float* operator()(std::int64_t k, int i) const { return a + k * MR + i; }
};
struct InPlaceCols {
  const float* a;
  std::int64_t lda;
  const float* operator()(std::int64_t k, int i) const { return a + i * lda + k; }
};

/// The entry points of a micro-kernel written once over where its B rows and A columns are.
template <template <class, class> class Micro, std::int64_t MR, std::int64_t NR>
struct MicroEntries {
  static_assert(Micro<PackedRows<NR>, PackedCols<MR>>::kMR == MR, "MR is the micro-kernel's row count");
  static void packed(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc, bool first) {
    Micro<PackedRows<NR>, PackedCols<MR>>::run(kc, PackedCols<MR>{a}, PackedRows<NR>{b}, c, ldc, first);
  }
  static void gathered(std::int64_t kc, const float* a, const float* b, const std::int64_t* offsets, float* c,
                       std::int64_t ldc, bool first) {
    Micro<GatheredRows, PackedCols<MR>>::run(kc, PackedCols<MR>{a}, GatheredRows{b, offsets}, c, ldc, first);
  }
  static void in_place(std::int64_t kc, const float* a, std::int64_t lda, const float* b, float* c, std::int64_t ldc,
                       bool first) {
    Micro<PackedRows<NR>, InPlaceCols>::run(kc, InPlaceCols{a, lda}, PackedRows<NR>{b}, c, ldc, first);
  }
};

// ---- portable: 6 x 16, std::fma per element ----

template <class Rows, class Cols>
struct MicroPortable {
  static constexpr std::int64_t kMR = 6;
  static void run(std::int64_t kc, Cols a, Rows rows, float* c, std::int64_t ldc, bool first) {
    constexpr std::int64_t nr = 16;
    float acc[kMR][nr];
    for (std::int64_t i = 0; i < kMR; ++i)
      for (std::int64_t j = 0; j < nr; ++j) acc[i][j] = first ? 0.0f : c[i * ldc + j];
    for (std::int64_t k = 0; k < kc; ++k) {
      const float* b = rows(k);
      for (std::int64_t i = 0; i < kMR; ++i)
        for (std::int64_t j = 0; j < nr; ++j) acc[i][j] = std::fma(*a(k, static_cast<int>(i)), b[j], acc[i][j]);
    }
    for (std::int64_t i = 0; i < kMR; ++i)
      for (std::int64_t j = 0; j < nr; ++j) c[i * ldc + j] = acc[i][j];
  }
};

inline void row_portable(const float* a, const float* b, std::int64_t K, int panels, float* out) {
  constexpr std::int64_t nr = 16;
  RML_UNROLL
  for (int q = 0; q < panels; ++q)
    for (std::int64_t j = 0; j < nr; ++j) {
      float acc = 0.0f;
      for (std::int64_t k = 0; k < K; ++k) acc = std::fma(a[k], b[(q * K + k) * nr + j], acc);
      out[q * nr + j] = acc;
    }
}

#if RML_X86_DISPATCH

// ---- AVX2 + FMA: 6 x 16, twelve ymm accumulators ----

template <class Rows, class Cols>
struct MicroAvx2 {
  static constexpr std::int64_t kMR = 6;
  RML_TARGET_AVX2 static void run(std::int64_t kc, Cols a, Rows rows, float* c, std::int64_t ldc, bool first) {
    // Written out: with 15 of the 16 ymm registers live, an array of
    // accumulators lets GCC spill some of them to the stack (measured 1.8x slower).
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
    for (std::int64_t k = 0; k < kc; ++k) {
      const float* b = rows(k);
      const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
      __m256 ai = _mm256_broadcast_ss(a(k, 0));
      c00 = _mm256_fmadd_ps(ai, b0, c00), c01 = _mm256_fmadd_ps(ai, b1, c01);
      ai = _mm256_broadcast_ss(a(k, 1));
      c10 = _mm256_fmadd_ps(ai, b0, c10), c11 = _mm256_fmadd_ps(ai, b1, c11);
      ai = _mm256_broadcast_ss(a(k, 2));
      c20 = _mm256_fmadd_ps(ai, b0, c20), c21 = _mm256_fmadd_ps(ai, b1, c21);
      ai = _mm256_broadcast_ss(a(k, 3));
      c30 = _mm256_fmadd_ps(ai, b0, c30), c31 = _mm256_fmadd_ps(ai, b1, c31);
      ai = _mm256_broadcast_ss(a(k, 4));
      c40 = _mm256_fmadd_ps(ai, b0, c40), c41 = _mm256_fmadd_ps(ai, b1, c41);
      ai = _mm256_broadcast_ss(a(k, 5));
      c50 = _mm256_fmadd_ps(ai, b0, c50), c51 = _mm256_fmadd_ps(ai, b1, c51);
    }
    _mm256_storeu_ps(c + 0 * ldc, c00), _mm256_storeu_ps(c + 0 * ldc + 8, c01);
    _mm256_storeu_ps(c + 1 * ldc, c10), _mm256_storeu_ps(c + 1 * ldc + 8, c11);
    _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
    _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
    _mm256_storeu_ps(c + 4 * ldc, c40), _mm256_storeu_ps(c + 4 * ldc + 8, c41);
    _mm256_storeu_ps(c + 5 * ldc, c50), _mm256_storeu_ps(c + 5 * ldc + 8, c51);
  }
};

/// P panels, 2P fma chains in flight to hide the FMA latency.
template <int P>
RML_TARGET_AVX2 inline void row_avx2_panels(const float* a, const float* b, std::int64_t K, float* out) {
  __m256 acc[2 * P];
  RML_UNROLL
  for (int i = 0; i < 2 * P; ++i) acc[i] = _mm256_setzero_ps();
  for (std::int64_t k = 0; k < K; ++k) {
    const __m256 ak = _mm256_broadcast_ss(a + k);
    RML_UNROLL
    for (int q = 0; q < P; ++q) {
      const float* bk = b + (q * K + k) * 16;
      acc[2 * q] = _mm256_fmadd_ps(ak, _mm256_loadu_ps(bk), acc[2 * q]);
      acc[2 * q + 1] = _mm256_fmadd_ps(ak, _mm256_loadu_ps(bk + 8), acc[2 * q + 1]);
    }
  }
  RML_UNROLL
  for (int i = 0; i < 2 * P; ++i) _mm256_storeu_ps(out + i * 8, acc[i]);
}

RML_TARGET_AVX2 inline void row_avx2(const float* a, const float* b, std::int64_t K, int panels, float* out) {
  switch (panels) {
    case 4: return row_avx2_panels<4>(a, b, K, out);
    case 3: return row_avx2_panels<3>(a, b, K, out);
    case 2: return row_avx2_panels<2>(a, b, K, out);
    default: return row_avx2_panels<1>(a, b, K, out);
  }
}

// ---- narrow (AVX2 + FMA, also taken on AVX-512 CPUs): 12 x 8 for B at most 16 wide ----
// The 6 x 16 tile would multiply as much padding as data there (a graph
// convolution's 256 x 256 @ 256 x 8, a classifier head): one ymm per row
// instead, twelve rows deep.

template <class Rows, class Cols>
struct MicroNarrow {
  static constexpr std::int64_t kMR = 12;
  RML_TARGET_AVX2 static void run(std::int64_t kc, Cols a, Rows rows, float* c, std::int64_t ldc, bool first) {
    __m256 acc[kMR];
    RML_UNROLL
    for (int i = 0; i < kMR; ++i) acc[i] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + i * ldc);
    for (std::int64_t k = 0; k < kc; ++k) {
      const __m256 b = _mm256_loadu_ps(rows(k));
      RML_UNROLL
      for (int i = 0; i < kMR; ++i) acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(a(k, i)), b, acc[i]);
    }
    RML_UNROLL
    for (int i = 0; i < kMR; ++i) _mm256_storeu_ps(c + i * ldc, acc[i]);
  }
};

/// One row against `Panels` 8-wide panels, their fma chains interleaved (one
/// chain a panel: one after another, each would wait out every fma's latency).
template <int Panels>
RML_TARGET_AVX2 inline void row_narrow_panels(const float* a, const float* b, std::int64_t K, float* out) {
  __m256 acc[Panels];
  RML_UNROLL
  for (int q = 0; q < Panels; ++q) acc[q] = _mm256_setzero_ps();
  for (std::int64_t k = 0; k < K; ++k) {
    const __m256 ak = _mm256_broadcast_ss(a + k);
    RML_UNROLL
    for (int q = 0; q < Panels; ++q) acc[q] = _mm256_fmadd_ps(ak, _mm256_loadu_ps(b + (q * K + k) * 8), acc[q]);
  }
  RML_UNROLL
  for (int q = 0; q < Panels; ++q) _mm256_storeu_ps(out + q * 8, acc[q]);
}
/// One row against 1 to kRowPanels 8-wide panels.
RML_TARGET_AVX2 inline void row_narrow(const float* a, const float* b, std::int64_t K, int panels, float* out) {
  static_assert(kRowPanels == 4);
  switch (panels) {
    case 1: return row_narrow_panels<1>(a, b, K, out);
    case 2: return row_narrow_panels<2>(a, b, K, out);
    case 3: return row_narrow_panels<3>(a, b, K, out);
    default: return row_narrow_panels<4>(a, b, K, out);
  }
}

// ---- AVX-512: 8 x 32, sixteen zmm accumulators (B panels twice as wide) ----

template <class Rows, class Cols>
struct MicroAvx512 {
  static constexpr std::int64_t kMR = 8;
  RML_TARGET_AVX512 static void run(std::int64_t kc, Cols a, Rows rows, float* c, std::int64_t ldc, bool first) {
    __m512 acc[kMR][2];
    RML_UNROLL
    for (int i = 0; i < kMR; ++i)
      RML_UNROLL
      for (int h = 0; h < 2; ++h) acc[i][h] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + i * ldc + 16 * h);
    for (std::int64_t k = 0; k < kc; ++k) {
      const float* b = rows(k);
      const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
      RML_UNROLL
      for (int i = 0; i < kMR; ++i) {
        const __m512 ai = _mm512_set1_ps(*a(k, i));
        acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
      }
    }
    RML_UNROLL
    for (int i = 0; i < kMR; ++i)
      RML_UNROLL
      for (int h = 0; h < 2; ++h) _mm512_storeu_ps(c + i * ldc + 16 * h, acc[i][h]);
  }
};

template <int P>
RML_TARGET_AVX512 inline void row_avx512_panels(const float* a, const float* b, std::int64_t K, float* out) {
  __m512 acc[2 * P];
  RML_UNROLL
  for (int i = 0; i < 2 * P; ++i) acc[i] = _mm512_setzero_ps();
  for (std::int64_t k = 0; k < K; ++k) {
    const __m512 ak = _mm512_set1_ps(a[k]);
    RML_UNROLL
    for (int q = 0; q < P; ++q) {
      const float* bk = b + (q * K + k) * 32;
      acc[2 * q] = _mm512_fmadd_ps(ak, _mm512_loadu_ps(bk), acc[2 * q]);
      acc[2 * q + 1] = _mm512_fmadd_ps(ak, _mm512_loadu_ps(bk + 16), acc[2 * q + 1]);
    }
  }
  RML_UNROLL
  for (int i = 0; i < 2 * P; ++i) _mm512_storeu_ps(out + i * 16, acc[i]);
}

RML_TARGET_AVX512 inline void row_avx512(const float* a, const float* b, std::int64_t K, int panels, float* out) {
  switch (panels) {
    case 4: return row_avx512_panels<4>(a, b, K, out);
    case 3: return row_avx512_panels<3>(a, b, K, out);
    case 2: return row_avx512_panels<2>(a, b, K, out);
    default: return row_avx512_panels<1>(a, b, K, out);
  }
}

// ---- narrow AVX-512: 12 x 16, for B 9 to 16 wide ----
// One zmm per row, as the narrow AVX2 set has one ymm: a 10-column classifier
// head fills one 16-wide panel instead of two 8-wide ones, at twice the lanes.

template <class Rows, class Cols>
struct MicroNarrowAvx512 {
  static constexpr std::int64_t kMR = 16;
  RML_TARGET_AVX512 static void run(std::int64_t kc, Cols a, Rows rows, float* c, std::int64_t ldc, bool first) {
    __m512 acc[kMR];
    RML_UNROLL
    for (int i = 0; i < kMR; ++i) acc[i] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + i * ldc);
    for (std::int64_t k = 0; k < kc; ++k) {
      const __m512 b = _mm512_loadu_ps(rows(k));
      RML_UNROLL
      for (int i = 0; i < kMR; ++i) acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(*a(k, i)), b, acc[i]);
    }
    RML_UNROLL
    for (int i = 0; i < kMR; ++i) _mm512_storeu_ps(c + i * ldc, acc[i]);
  }
};

/// One row against `Panels` 16-wide panels, their fma chains interleaved.
template <int Panels>
RML_TARGET_AVX512 inline void row_narrow_avx512_panels(const float* a, const float* b, std::int64_t K, float* out) {
  __m512 acc[Panels];
  RML_UNROLL
  for (int q = 0; q < Panels; ++q) acc[q] = _mm512_setzero_ps();
  for (std::int64_t k = 0; k < K; ++k) {
    const __m512 ak = _mm512_set1_ps(a[k]);
    RML_UNROLL
    for (int q = 0; q < Panels; ++q) acc[q] = _mm512_fmadd_ps(ak, _mm512_loadu_ps(b + (q * K + k) * 16), acc[q]);
  }
  RML_UNROLL
  for (int q = 0; q < Panels; ++q) _mm512_storeu_ps(out + q * 16, acc[q]);
}
RML_TARGET_AVX512 inline void row_narrow_avx512(const float* a, const float* b, std::int64_t K, int panels,
                                                float* out) {
  static_assert(kRowPanels == 4);
  switch (panels) {
    case 1: return row_narrow_avx512_panels<1>(a, b, K, out);
    case 2: return row_narrow_avx512_panels<2>(a, b, K, out);
    case 3: return row_narrow_avx512_panels<3>(a, b, K, out);
    default: return row_narrow_avx512_panels<4>(a, b, K, out);
  }
}

#endif  // RML_X86_DISPATCH

/// The kernel set for `isa` (the portable one where this build has no other).
/// Asking for more than the CPU runs is an error, not an illegal instruction later.
inline const Kernels& kernels(Isa isa) {
  if (isa > cpu_isa()) fail(ErrorCode::unsupported, "this CPU cannot run the ", isa_name(isa), " kernels");
  static constexpr Kernels portable{Isa::portable, 6, 16, MicroEntries<MicroPortable, 6, 16>::packed,
                                    MicroEntries<MicroPortable, 6, 16>::gathered, row_portable};
#if RML_X86_DISPATCH
  static constexpr Kernels avx2{Isa::avx2, 6, 16, MicroEntries<MicroAvx2, 6, 16>::packed,
                                MicroEntries<MicroAvx2, 6, 16>::gathered, row_avx2};
  static constexpr Kernels avx512{Isa::avx512, 8, 32, MicroEntries<MicroAvx512, 8, 32>::packed,
                                  MicroEntries<MicroAvx512, 8, 32>::gathered, row_avx512,
                                  MicroEntries<MicroAvx512, 8, 32>::in_place};
  if (isa == Isa::avx512) return avx512;
  if (isa == Isa::avx2) return avx2;
#endif
  (void)isa;
  return portable;
}

/// The set this process runs (exec/isa.hpp: active_isa()).
inline const Kernels& kernels() { return kernels(active_isa()); }

/// The narrow set (12 x 8 tiles), for a CPU with AVX2 at least.
inline const Kernels& narrow_kernels() {
#if RML_X86_DISPATCH
  static constexpr Kernels narrow{Isa::avx2, 12, 8, MicroEntries<MicroNarrow, 12, 8>::packed,
                                  MicroEntries<MicroNarrow, 12, 8>::gathered, row_narrow,
                                  MicroEntries<MicroNarrow, 12, 8>::in_place};
  return narrow;
#else
  return kernels(Isa::portable);
#endif
}

/// The narrow AVX-512 set (12 x 16 tiles).
inline const Kernels& narrow_avx512_kernels() {
#if RML_X86_DISPATCH
  static constexpr Kernels narrow{Isa::avx512, 16, 16, MicroEntries<MicroNarrowAvx512, 16, 16>::packed,
                                  MicroEntries<MicroNarrowAvx512, 16, 16>::gathered, row_narrow_avx512,
                                  MicroEntries<MicroNarrowAvx512, 16, 16>::in_place};
  return narrow;
#else
  return kernels(Isa::portable);
#endif
}

/// The set for a B of N columns: wider panels would mostly multiply padding,
/// so N <= 16 takes a narrow set, A read in place (bench gcn's 256x256 @ 256x8: 38 -> 13 us;
/// with N of 12 or 16 on the AMD machine, 2.0-2.5x faster than the AVX2 6x16 set
/// it used before, which in turn had beaten AVX-512's 32-wide panels, 66 -> 41 us):
/// with AVX-512, 16-wide panels for 9 to 16 columns (the bench cnn's 16x1568 @ 1568x10
/// head: 12.4 -> 5.9 us), 8-wide AVX2 ones for up to 8 (as fast: as many useful lanes).
/// Every set gives the same bits.
inline const Kernels& kernels_for(std::int64_t N, Isa isa = active_isa()) {
  const Kernels& set = kernels(isa == Isa::avx512 && N <= 16 ? Isa::avx2 : isa);  // checks the CPU
  if (isa == Isa::avx512 && N > 8 && N <= 16) return (void)kernels(isa), narrow_avx512_kernels();
  return set.isa == Isa::avx2 && N <= 16 ? narrow_kernels() : set;
}

}  // namespace rml::exec::gemm_detail
