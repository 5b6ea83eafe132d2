// ops::MatMul at the E2B vision tower's shapes over the 2,520 patches of a 280-token image, as
// the tower calls it (tiling and threads included): the attention projections [768, 768] and
// the MLP's gate or up [3072, 768] and down [768, 3072], with the default plan's bf16 weights
// (MatMulMode::kFastBf16: bf16 dot products where the CPU has them) and the opt-in q8 plan's
// interleaved q8x8 weights (kFast: int8 activations). GOP/s, 2 per multiply-add, wall time.
//   gemlet_ops_bench --benchmark_filter=MatMul --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "ops/matmul.h"
#include "ops/ops_test_util.h"

namespace gemlet::ops {
namespace {

constexpr int64_t kPatches = 2520;

// range(0): rows, range(1): K, range(2): 0 bf16 / 1 q8x8, range(3): threads.
void BM_MatMul(benchmark::State& state) {
  const int64_t rows = state.range(0), K = state.range(1);
  const bool q8 = state.range(2) == 1;
  ThreadPool pool(static_cast<int>(state.range(3)));
  const testing::OwnedWeight w =
      testing::MakeWeight(q8 ? TensorType::kQ8 : TensorType::kBF16, rows, K, 7, 1.0f / 32);
  const testing::InterleavedWeight wi = q8 ? testing::Interleave(w) : testing::InterleavedWeight{};
  const Weight& wt = q8 ? wi.w : w.w;
  const std::vector<float> x = testing::RandomVector(kPatches * K, 8);
  std::vector<float> y(kPatches * rows);
  const MatMulMode mode = q8 ? MatMulMode::kFast : MatMulMode::kFastBf16;
  for (auto _ : state) {
    MatMul(wt, x.data(), kPatches, y.data(), mode, &pool);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(q8 ? "q8x8" : (UsesBf16Activations(wt, mode) ? "bf16 dot" : "bf16 as float"));
  state.counters["GOP/s"] = benchmark::Counter(2.0 * rows * K * kPatches * state.iterations() / 1e9,
                                               benchmark::Counter::kIsRate);
}
BENCHMARK(BM_MatMul)
    ->ArgNames({"rows", "K", "q8", "threads"})
    ->ArgsProduct({{768, 3072}, {768}, {0, 1}, {1, 2}})
    ->Args({768, 3072, 0, 1})
    ->Args({768, 3072, 0, 2})
    ->Args({768, 3072, 1, 1})
    ->Args({768, 3072, 1, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gemlet::ops
