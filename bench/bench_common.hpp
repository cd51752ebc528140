// Shared by the rml_bench translation units: the measured peak, the FLOP
// counters, seeded random data.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <vector>

namespace rml_bench {

/// f32 FLOP per cycle per core for this binary's ISA: AVX2 + FMA is two
/// 256-bit FMA pipes x 8 lanes x 2 FLOP.
inline constexpr double kFlopsPerCycle = 32.0;

/// The core clock measured at start-up (bench_main.cpp), in GHz; 0 when it
/// could not be measured.
double clock_ghz();

/// Peak f32 GFLOP/s of `threads` cores at the measured clock (0 if unknown).
inline double peak_gflops(int threads) { return kFlopsPerCycle * clock_ghz() * threads; }

/// "GFLOP/s" and "%peak" counters. Both are rates over the benchmark's time,
/// so every benchmark that uses them is registered with UseRealTime(): the
/// executor's worker threads do not show in the calling thread's CPU time.
inline void flop_counters(benchmark::State& state, double flops_per_iteration, int threads) {
  const double gflop = flops_per_iteration * static_cast<double>(state.iterations()) * 1e-9;
  state.counters["GFLOP/s"] = benchmark::Counter(gflop, benchmark::Counter::kIsRate);
  const double peak = peak_gflops(threads);
  if (peak > 0) state.counters["%peak"] = benchmark::Counter(100.0 * gflop / peak, benchmark::Counter::kIsRate);
}

/// n floats uniform in [-scale, scale] from a seeded generator.
inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> out(n);
  for (float& v : out) v = dist(gen);
  return out;
}

}  // namespace rml_bench
