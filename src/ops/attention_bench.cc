// Attention at the E2B model's shapes over an f16 KV cache (MQA: 8 query heads, 1 KV head):
//   Decode/<hd>/<keys>: one query row (a decode step) over `keys` cached positions;
//   DecodeCold512: the same with the KV cache out of the CPU caches (as in a model's step);
//   Prefill/<hd>/<T>/<depth>: T query rows after `depth` cached positions (causal);
//   DecodeQ8/<hd>/<keys>, DecodeColdQ8, PrefillQ8: the same over a q8 KV cache (--kv-type q8).
// Window 512 for hd 256 (the sliding layers), none for hd 512 (the full layers). Reports
// keys/s (query rows × visible keys per second, so heads are counted once).
//   gemlet_ops_bench --benchmark_filter=Attention --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "base/half.h"
#include "base/thread_pool.h"
#include "ops/attention.h"

namespace gemlet::ops {
namespace {

constexpr int64_t kHeads = 8;

struct Case {
  AttentionShape shape;
  std::vector<uint16_t> kv;  // [positions, 2, head_dim]: K then V of each position
  std::vector<BlockQ8> kv8;  // the same in q8 (for TensorType::kQ8)
  std::vector<float> q, out;
  std::vector<int64_t> pos;
  KvSegment seg;
};

std::unique_ptr<Case> MakeCase(int64_t hd, int64_t positions, int64_t T, TensorType type) {
  auto c = std::make_unique<Case>();
  c->shape = {kHeads, 1, hd, hd == 256 ? 512 : 0, 1.0f / 16};
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  c->kv.resize(positions * 2 * hd);
  for (auto& h : c->kv) h = F32ToF16(nd(rng));
  c->q.resize(T * kHeads * hd);
  for (auto& x : c->q) x = nd(rng);
  c->out.resize(T * kHeads * hd);
  for (int64_t t = 0; t < T; ++t) c->pos.push_back(positions - T + t);
  c->seg = {c->kv.data(), c->kv.data() + hd, 2 * hd, 0, positions, TensorType::kF16};
  if (type == TensorType::kQ8) {
    std::vector<float> f(c->kv.size());
    for (size_t i = 0; i < f.size(); ++i) f[i] = F16ToF32(c->kv[i]);
    c->kv8.resize(f.size() / kQBlock);
    QuantizeKvRowQ8(f.data(), c->kv8.data(), static_cast<int64_t>(f.size()));
    c->seg = {c->kv8.data(), c->kv8.data() + hd / kQBlock, 2 * hd, 0, positions, TensorType::kQ8};
  }
  return c;
}

void Run(benchmark::State& state, int64_t hd, int64_t depth, int64_t T, TensorType type = TensorType::kF16) {
  const int threads = static_cast<int>(state.range(0));
  ThreadPool pool(threads);
  auto c = MakeCase(hd, depth + T, T, type);
  int64_t keys = 0;
  for (int64_t p : c->pos) keys += c->shape.window > 0 ? std::min<int64_t>(p + 1, c->shape.window) : p + 1;
  for (auto _ : state) {
    Attention(c->shape, c->q.data(), c->pos.data(), T, &c->seg, 1, c->out.data(), &pool);
    benchmark::DoNotOptimize(c->out.data());
  }
  state.counters["keys/s"] = benchmark::Counter(static_cast<double>(keys) * state.iterations(),
                                                benchmark::Counter::kIsRate);
}

// Decode with the KV cache out of the CPU caches, as in a model's decode step, where the
// weights of the other layers pass through them between two attention calls: the calls
// rotate over enough copies of the cache to overflow the last-level cache.
void RunCold(benchmark::State& state, int64_t hd, int64_t depth, TensorType type = TensorType::kF16) {
  const int threads = static_cast<int>(state.range(0));
  ThreadPool pool(threads);
  constexpr int kCopies = 16;
  std::vector<std::unique_ptr<Case>> cs;
  for (int i = 0; i < kCopies; ++i) cs.push_back(MakeCase(hd, depth + 1, 1, type));
  int64_t i = 0;
  for (auto _ : state) {
    Case& c = *cs[i++ % kCopies];
    Attention(c.shape, c.q.data(), c.pos.data(), 1, &c.seg, 1, c.out.data(), &pool);
    benchmark::DoNotOptimize(c.out.data());
  }
  state.counters["keys/s"] = benchmark::Counter(static_cast<double>(depth + 1) * state.iterations(),
                                                benchmark::Counter::kIsRate);
}

void BM_AttentionDecode512(benchmark::State& s) { Run(s, 512, 4096, 1); }
void BM_AttentionDecodeCold512(benchmark::State& s) { RunCold(s, 512, 4096); }
void BM_AttentionDecode256(benchmark::State& s) { Run(s, 256, 4096, 1); }
void BM_AttentionPrefill512(benchmark::State& s) { Run(s, 512, 4096, 512); }
void BM_AttentionPrefill256(benchmark::State& s) { Run(s, 256, 0, 512); }
void BM_AttentionDecodeQ8512(benchmark::State& s) { Run(s, 512, 4096, 1, TensorType::kQ8); }
void BM_AttentionDecodeColdQ8512(benchmark::State& s) { RunCold(s, 512, 4096, TensorType::kQ8); }
void BM_AttentionPrefillQ8512(benchmark::State& s) { Run(s, 512, 4096, 512, TensorType::kQ8); }
BENCHMARK(BM_AttentionDecode512)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AttentionDecodeCold512)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AttentionDecodeQ8512)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AttentionDecodeColdQ8512)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AttentionDecode256)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AttentionPrefill512)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttentionPrefillQ8512)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AttentionPrefill256)->Arg(2)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gemlet::ops

BENCHMARK_MAIN();
