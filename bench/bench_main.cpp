// rml_bench's main: measures the core clock, prints how the peak is computed
// in the benchmark context, then runs every registered benchmark.
//
// The clock is measured, not read from /proc/cpuinfo (which on a VM shows the
// TSC rate, not the boosted core clock). It used to be a chain of dependent
// integer adds, one per cycle; recent Intel cores fold such chains and ran
// them at 18 "GHz". Now it is what the peak is made of: 256-bit FMAs on twelve
// independent accumulators, enough to cover the FMA latency (4-5 cycles) on
// both FMA ports of every AVX2 core, AMD and Intel alike. FMAs per second / 2
// is the clock at which the two FMA units are running; nothing can fold them.
// The peak is for the vectors the executor picks at run time: with AVX-512 the
// same loop on zmm registers says how many 512-bit FMAs a cycle retires (two
// on Zen 5 and on Intel cores with two 512-bit FMA units, one on Zen 4).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <cstring>
#include <string>

#include "bench_common.hpp"
#include "rml/exec/isa.hpp"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace rml_bench {
namespace {

double measured_ghz = 0.0;
double measured_flops_per_cycle = 32.0;

struct ClockMeasurement {
  double ghz = 0.0;      // best of the trials
  double tsc_ghz = 0.0;  // the time-stamp counter's rate over the same trial
  long long fmas = 0;    // per trial
  int trials = 0;
};

#if defined(__x86_64__) && defined(__FMA__)
// 96 independent FMAs (8 rounds over 12 accumulators) on registers of width R
// ("y" or "z"), repeated %0 times.
#define RML_FMA_LOOP(R)                                                                                            \
  "vxorps %%" R "mm0, %%" R "mm0, %%" R "mm0\n\t"                                                                   \
  "vmovaps %%" R "mm0, %%" R "mm1\n\t vmovaps %%" R "mm0, %%" R "mm2\n\t vmovaps %%" R "mm0, %%" R "mm3\n\t"           \
  "vmovaps %%" R "mm0, %%" R "mm4\n\t vmovaps %%" R "mm0, %%" R "mm5\n\t vmovaps %%" R "mm0, %%" R "mm6\n\t"           \
  "vmovaps %%" R "mm0, %%" R "mm7\n\t vmovaps %%" R "mm0, %%" R "mm8\n\t vmovaps %%" R "mm0, %%" R "mm9\n\t"           \
  "vmovaps %%" R "mm0, %%" R "mm10\n\t vmovaps %%" R "mm0, %%" R "mm11\n\t"                                          \
  "vmovaps %%" R "mm0, %%" R "mm12\n\t vmovaps %%" R "mm0, %%" R "mm13\n\t"                                         \
  "1:\n\t"                                                                                                         \
  ".rept 8\n\t"                                                                                                    \
  "vfmadd231ps %%" R "mm12, %%" R "mm13, %%" R "mm0\n\t vfmadd231ps %%" R "mm12, %%" R "mm13, %%" R "mm1\n\t"          \
  "vfmadd231ps %%" R "mm12, %%" R "mm13, %%" R "mm2\n\t vfmadd231ps %%" R "mm12, %%" R "mm13, %%" R "mm3\n\t"          \
  "vfmadd231ps %%" R "mm12, %%" R "mm13, %%" R "mm4\n\t vfmadd231ps %%" R "mm12, %%" R "mm13, %%" R "mm5\n\t"          \
  "vfmadd231ps %%" R "mm12, %%" R "mm13, %%" R "mm6\n\t vfmadd231ps %%" R "mm12, %%" R "mm13, %%" R "mm7\n\t"          \
  "vfmadd231ps %%" R "mm12, %%" R "mm13, %%" R "mm8\n\t vfmadd231ps %%" R "mm12, %%" R "mm13, %%" R "mm9\n\t"          \
  "vfmadd231ps %%" R "mm12, %%" R "mm13, %%" R "mm10\n\t vfmadd231ps %%" R "mm12, %%" R "mm13, %%" R "mm11\n\t"        \
  ".endr\n\t"                                                                                                      \
  "dec %0\n\t"                                                                                                     \
  "jnz 1b\n\t"                                                                                                     \
  "vzeroupper"

/// One trial: `blocks` x 96 independent FMAs on ymm (or, `zmm`, on zmm)
/// registers. The clock assumes two retire per cycle (true of 256-bit FMAs
/// on every AVX2 core).
ClockMeasurement time_fma_throughput(long long blocks, bool zmm = false) {
  long long n = blocks;
  const auto t0 = std::chrono::steady_clock::now();
  const unsigned long long c0 = __rdtsc();
  if (zmm)
    asm volatile(RML_FMA_LOOP("z")
                 : "+r"(n)
                 :
                 : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
                   "xmm11", "xmm12", "xmm13");
  else
    asm volatile(RML_FMA_LOOP("y")
                 : "+r"(n)
                 :
                 : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
                   "xmm11", "xmm12", "xmm13");
  const unsigned long long c1 = __rdtsc();
  const auto t1 = std::chrono::steady_clock::now();
  const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  ClockMeasurement m;
  m.fmas = blocks * 96;
  if (n != 0 || ns <= 0) return m;  // the loop did not run as written
  m.ghz = static_cast<double>(m.fmas) / 2.0 / ns;
  m.tsc_ghz = static_cast<double>(c1 - c0) / ns;
  return m;
}
#undef RML_FMA_LOOP
#endif

ClockMeasurement measure_clock() {
  ClockMeasurement best;
#if defined(__x86_64__) && defined(__FMA__)
  time_fma_throughput(3'000'000);  // warm-up (2.9e8 FMAs): let the core reach its boost clock
  constexpr int trials = 7;
  for (int t = 0; t < trials; ++t) {
    const ClockMeasurement m = time_fma_throughput(2'000'000);  // 1.9e8 FMAs, ~30 ms at 3 GHz
    // Interruptions only lengthen a trial, so the fastest trial is the clock.
    if (m.ghz > best.ghz) best = m;
  }
  best.trials = trials;
#endif
  return best;
}

/// f32 FLOP per cycle with the executor's vectors: 32 for AVX2; with
/// AVX-512, from the 512-bit loop's rate against the 256-bit one's (its
/// "clock" is half the clock per 512-bit FMA retired each cycle).
double measure_flops_per_cycle(double ghz) {
#if defined(__x86_64__) && defined(__FMA__)
  if (rml::exec::active_isa() == rml::exec::Isa::avx512 && ghz > 0) {
    double best = 0;
    for (int t = 0; t < 7; ++t) best = std::max(best, time_fma_throughput(2'000'000, true).ghz);
    const double per_cycle = std::round(2.0 * best / ghz);  // 512-bit FMAs a cycle: 1 or 2
    return 32.0 * std::clamp(per_cycle, 1.0, 2.0);
  }
#endif
  (void)ghz;
  return 32.0;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown";
}

std::string format(const char* fmt, double a, double b = 0, double c = 0) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, fmt, a, b, c);
  return buffer;
}

}  // namespace

double clock_ghz() { return measured_ghz; }
double flops_per_cycle() { return measured_flops_per_cycle; }

}  // namespace rml_bench

int main(int argc, char** argv) {
  using namespace rml_bench;
  const ClockMeasurement clock = measure_clock();
  const bool plausible = clock.ghz >= 1.0 && clock.ghz <= 6.0;
  measured_ghz = plausible ? clock.ghz : 0.0;
  measured_flops_per_cycle = measure_flops_per_cycle(measured_ghz);

  benchmark::AddCustomContext("cpu_model", cpu_model());
  const bool avx512 = rml::exec::active_isa() == rml::exec::Isa::avx512;
  benchmark::AddCustomContext(
      "isa", avx512 ? format("the executor's vectors: AVX-512: %.0f f32 FLOP/cycle/core = %.0f 512-bit FMAs a cycle "
                             "(measured) x 16 lanes x 2 FLOP",
                             measured_flops_per_cycle, measured_flops_per_cycle / 32)
                    : std::string("the executor's vectors: AVX2 + FMA (or portable): 32 f32 FLOP/cycle/core = 2 FMA "
                                  "pipes x 8 lanes x 2 FLOP"));
  if (plausible) {
    benchmark::AddCustomContext(
        "clock_measured",
        format("%.3f GHz = fastest of 7 trials of 1.9e8 independent 256-bit FMAs (2 per cycle) / 2 / wall time; "
               "TSC ran at %.3f GHz meanwhile",
               clock.ghz, clock.tsc_ghz));
    benchmark::AddCustomContext(
        "peak_f32",
        format("%.0f FLOP/cycle x %.3f GHz = %.1f GFLOP/s per core; %%peak = GFLOP/s / (threads x that)",
               measured_flops_per_cycle, clock.ghz, measured_flops_per_cycle * clock.ghz));
  } else {
    benchmark::AddCustomContext("clock_measured",
                                format("implausible (%.3f GHz, outside 1-6 GHz): %%peak not reported", clock.ghz));
  }
  benchmark::AddCustomContext("note",
                              "times are wall-clock (UseRealTime); another process may share a core: "
                              "use --benchmark_repetitions and read the median");

  // --rml_profile[=THREADS]: per-kernel times instead of the benchmarks.
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--rml_profile", 13) == 0) {
      const int threads = argv[i][13] == '=' ? std::atoi(argv[i] + 14) : 1;
      std::printf("clock %.3f GHz (measured), peak %.1f GFLOP/s per core\n", clock.ghz, peak_gflops(1));
      profile_models(threads < 1 ? 1 : threads);
      return 0;
    }

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
