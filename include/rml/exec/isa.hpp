// Which vector instructions the executor's hot loops use, chosen at run time.
//
// The library is header-only and consumers compile it with whatever flags
// they like, so the inner loops (GEMM micro-kernels, transcendental blocks)
// are compiled for every instruction set they have a version for, through
// per-function target attributes, and one version is picked once per process
// from what the CPU reports: AVX-512 (F, VL, DQ, BW), else AVX2 with FMA,
// else portable C++. The environment variable RML_ISA (portable, avx2 or
// avx512) lowers the choice, to compare paths or reproduce a slower machine.
//
// Every version computes the same bits: each output element is the same
// sequence of IEEE operations (one fma chain per GEMM element; the same
// polynomial and the same fmas per lane in the transcendentals), only the
// number of lanes per instruction differs. tests/test_simd_math.cpp checks it.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>

#include "rml/core/error.hpp"

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define RML_X86_DISPATCH 1
#include <immintrin.h>
// Functions that may use the instructions named, whatever the translation
// unit's own -m flags are. Only called after the CPU was checked for them.
#define RML_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define RML_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512dq,avx512bw,avx2,fma")))
// The same for every function defined between BEGIN and END (code written
// once and included under each target: exec/simd_lanes.inl).
#if defined(__clang__)
#define RML_BEGIN_TARGET_AVX2 _Pragma("clang attribute push(__attribute__((target(\"avx2,fma\"))), apply_to = function)")
#define RML_BEGIN_TARGET_AVX512 \
  _Pragma("clang attribute push(__attribute__((target(\"avx512f,avx512vl,avx512dq,avx512bw,avx2,fma\"))), apply_to = function)")
#define RML_END_TARGET _Pragma("clang attribute pop")
#else
#define RML_BEGIN_TARGET_AVX2 _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma\")")
#define RML_BEGIN_TARGET_AVX512 \
  _Pragma("GCC push_options") _Pragma("GCC target(\"avx512f,avx512vl,avx512dq,avx512bw,avx2,fma\")")
#define RML_END_TARGET _Pragma("GCC pop_options")
#endif
#else
#define RML_X86_DISPATCH 0
#endif

// The per-vector maths (exec/simd_lanes.inl) inlined into its loops: called,
// GCC spills every live register around each call (the LSTM's gates spent
// over half their time in exp_v's calls and spills).
#if defined(__GNUC__) || defined(__clang__)
#define RML_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define RML_ALWAYS_INLINE inline
#endif

// Loops over registers must be unrolled whole, or GCC at -O2 keeps the
// arrays of registers in memory (measured 2x slower in the GEMM).
#define RML_UNROLL _Pragma("GCC unroll 16")

namespace rml::exec {

/// Instruction sets with their own code paths, slowest first.
enum class Isa { portable, avx2, avx512 };

inline std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2";
    case Isa::portable: break;
  }
  return "portable";
}

/// The fastest path this CPU can run (asked once).
inline Isa cpu_isa() {
  static const Isa isa = [] {
#if RML_X86_DISPATCH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw"))
      return Isa::avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
#endif
    return Isa::portable;
  }();
  return isa;
}

/// `cpu` lowered to what RML_ISA asks for (`requested` is its value, or null).
inline Isa choose_isa(Isa cpu, const char* requested) {
  if (!requested || !*requested) return cpu;
  const std::string_view name(requested);
  for (Isa isa : {Isa::portable, Isa::avx2, Isa::avx512})
    if (name == isa_name(isa)) return isa < cpu ? isa : cpu;
  fail(ErrorCode::invalid_argument, "RML_ISA='", name, "' is not one of portable, avx2, avx512");
}

/// The path every executor of this process uses (decided on first use).
inline Isa active_isa() {
  static const Isa isa = choose_isa(cpu_isa(), std::getenv("RML_ISA"));
  return isa;
}

}  // namespace rml::exec
