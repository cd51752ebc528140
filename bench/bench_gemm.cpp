// GEMM without the executor: rml's packed GEMM called directly (B packed
// once, outside the timing), and Eigen's GEMM as the baseline, both on one
// thread. This TU includes only rml/exec/gemm.hpp and Eigen/Core, so it
// compiles in seconds.
#ifndef EIGEN_DONT_PARALLELIZE
#define EIGEN_DONT_PARALLELIZE
#endif

#include <Eigen/Core>
#include <cstdlib>
#include <memory>

#include "bench_common.hpp"
#include "rml/exec/gemm.hpp"

namespace {

using rml_bench::flop_counters;
using rml_bench::random_floats;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

/// C = A . B through rml::exec::gemm with B prepacked; one thread.
void BM_gemm_rml_raw(benchmark::State& state) {
  const std::int64_t M = state.range(0), K = state.range(1), N = state.range(2);
  const std::vector<float> a = random_floats(static_cast<std::size_t>(M * K), 1);
  const std::vector<float> b = random_floats(static_cast<std::size_t>(K * N), 2);
  std::vector<float> c(static_cast<std::size_t>(M * N));
  const rml::exec::PackedB packed(b.data(), K, N, N);
  const std::size_t scratch_bytes = (rml::exec::gemm_scratch_bytes(K) + 63) / 64 * 64;
  std::unique_ptr<float, FreeDeleter> scratch(static_cast<float*>(std::aligned_alloc(64, scratch_bytes)));
  const rml_bench::LoadProbe probe;
  for (auto _ : state) {
    rml::exec::gemm(a.data(), K, rml::exec::view(packed), c.data(), N, 0, M, 0, N, scratch.get());
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  probe.report(state);
  flop_counters(state, 2.0 * double(M) * double(K) * double(N), 1);
}

/// The same product with Eigen (row-major, c.noalias() = a * b, no threads).
void BM_gemm_eigen(benchmark::State& state) {
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Index M = state.range(0), K = state.range(1), N = state.range(2);
  const std::vector<float> a_data = random_floats(static_cast<std::size_t>(M * K), 1);
  const std::vector<float> b_data = random_floats(static_cast<std::size_t>(K * N), 2);
  const Matrix a = Eigen::Map<const Matrix>(a_data.data(), M, K);
  const Matrix b = Eigen::Map<const Matrix>(b_data.data(), K, N);
  Matrix c(M, N);
  const rml_bench::LoadProbe probe;
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  probe.report(state);
  flop_counters(state, 2.0 * double(M) * double(K) * double(N), 1);
}

void gemm_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "K", "N"});
  for (std::int64_t n : {64, 256, 512, 1024}) b->Args({n, n, n});
  b->Args({64, 512, 512});
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK(BM_gemm_rml_raw)->Apply(gemm_shapes);
BENCHMARK(BM_gemm_eigen)->Apply(gemm_shapes);
