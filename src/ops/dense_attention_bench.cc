// Dense bidirectional attention at an image tower's shape (12 heads of 64, f32 q/k/v rows of
// [N, 768], every query over every key), N = 630 / 1260 / 2520 patches (70 / 140 / 280 soft
// tokens at 3×3 pooling), on 1 and 2 threads:
//   DenseAttention/<N>/<threads>: ops::DenseAttention;
//   DenseAttentionBf16/<N>/<threads>: the same with bf16 products (DenseAttentionMath::kBf16; on a
//     CPU without them, the f32 path);
//   DenseViaCausal/<N>/<threads>: ops::Attention with every query at the last position (what
//     an encoder had before DenseAttention).
// Reports FLOP/s of the two products (4·N²·hd per head).
//   gemlet_ops_bench --benchmark_filter=Dense --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "ops/attention.h"
#include "ops/dense_attention.h"
#include "ops/ops_test_util.h"

namespace gemlet::ops {
namespace {

constexpr int64_t kHeads = 12, kHeadDim = 64, kRow = kHeads * kHeadDim;

void Run(benchmark::State& state, bool dense, DenseAttentionMath math = DenseAttentionMath::kF32) {
  const int64_t N = state.range(0);
  ThreadPool pool(static_cast<int>(state.range(1)));
  // q·k of unit-RMS q and k rows is ~√hd: the peaked softmax of an unscaled image tower.
  const std::vector<float> q = testing::RandomVector(N * kRow, 1), k = testing::RandomVector(N * kRow, 2),
                           v = testing::RandomVector(N * kRow, 3);
  std::vector<float> out(N * kRow);
  const std::vector<int64_t> pos(N, N - 1);
  const KvSegment seg{k.data(), v.data(), kRow, 0, N, TensorType::kF32};
  const AttentionShape causal{kHeads, kHeads, kHeadDim, 0, 1.0f};
  const DenseAttentionShape shape{kHeads, kHeads, kHeadDim, 1.0f, math};
  std::vector<float> scratch(DenseAttentionScratch(shape, N));
  for (auto _ : state) {
    if (dense) {
      DenseAttention(shape, q.data(), kRow, N, k.data(), v.data(), kRow, N, out.data(), kRow, scratch.data(), &pool);
    } else {
      Attention(causal, q.data(), pos.data(), N, &seg, 1, out.data(), &pool);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(4.0 * N * N * kHeadDim * kHeads * state.iterations(),
                                                benchmark::Counter::kIsRate);
}

void BM_DenseAttention(benchmark::State& s) { Run(s, true); }
void BM_DenseAttentionBf16(benchmark::State& s) { Run(s, true, DenseAttentionMath::kBf16); }
void BM_DenseViaCausal(benchmark::State& s) { Run(s, false); }
BENCHMARK(BM_DenseAttention)
    ->ArgsProduct({{630, 1260, 2520}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DenseAttentionBf16)
    ->ArgsProduct({{630, 2520}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DenseViaCausal)
    ->ArgsProduct({{630, 2520}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gemlet::ops
