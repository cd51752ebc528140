// Shared by the rml_bench translation units: the measured peak, the FLOP
// counters, seeded random data.
#pragma once

#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace rml_bench {

/// The core clock measured at start-up (bench_main.cpp), in GHz; 0 when it
/// could not be measured.
double clock_ghz();

/// f32 FLOP per cycle per core with the vectors the executor runs
/// (exec::active_isa()), measured at start-up: 32 for AVX2 (two 256-bit FMA
/// pipes x 8 lanes x 2 FLOP); with AVX-512, 32 x the 512-bit FMAs the core
/// retires per cycle (64 on cores with two 512-bit FMA pipes, 32 on Zen 4,
/// which splits them).
double flops_per_cycle();

/// Prints every kernel's median time for the model benchmarks' plans
/// (bench_models.cpp); `rml_bench --rml_profile[=THREADS]` calls it.
void profile_models(int threads);

/// Peak f32 GFLOP/s of `threads` cores at the measured clock (0 if unknown).
inline double peak_gflops(int threads) { return flops_per_cycle() * clock_ghz() * threads; }

/// "GFLOP/s" and "%peak" counters. Both are rates over the benchmark's time,
/// so every benchmark that uses them is registered with UseRealTime(): the
/// executor's worker threads do not show in the calling thread's CPU time.
inline void flop_counters(benchmark::State& state, double flops_per_iteration, int threads) {
  const double gflop = flops_per_iteration * static_cast<double>(state.iterations()) * 1e-9;
  state.counters["GFLOP/s"] = benchmark::Counter(gflop, benchmark::Counter::kIsRate);
  const double peak = peak_gflops(threads);
  if (peak > 0) state.counters["%peak"] = benchmark::Counter(100.0 * gflop / peak, benchmark::Counter::kIsRate);
}

/// How busy the machine was with other work while a benchmark ran: the
/// machine's busy CPU time (/proc/stat: everything but idle and iowait,
/// steal included) minus this process's own CPU time (getrusage), over the
/// wall time, in cores. Reported as the "other_cores" counter: a row whose
/// value is well above 0 shared the machine and is suspect. /proc/stat
/// counts in 10 ms ticks, so short runs read to about +-0.05.
class LoadProbe {
 public:
  LoadProbe() : busy0_(machine_busy_seconds()), self0_(self_seconds()), t0_(std::chrono::steady_clock::now()) {}
  void report(benchmark::State& state) const {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    if (busy0_ < 0 || wall <= 0) return;
    const double other = (machine_busy_seconds() - busy0_) - (self_seconds() - self0_);
    state.counters["other_cores"] = other > 0 ? other / wall : 0.0;
  }

 private:
  static double machine_busy_seconds() {
    std::ifstream in("/proc/stat");
    std::string cpu;
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) || cpu != "cpu") return -1;
    return static_cast<double>(user + nice + system + irq + softirq + steal) / 100.0;  // USER_HZ = 100
  }
  static double self_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }
  double busy0_, self0_;
  std::chrono::steady_clock::time_point t0_;
};

/// n floats uniform in [-scale, scale] from a seeded generator.
inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> out(n);
  for (float& v : out) v = dist(gen);
  return out;
}

}  // namespace rml_bench
