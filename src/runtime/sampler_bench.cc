// Sampler cost per token over Gemma 4's 262144-entry vocabulary (the server samples every
// stream of a batched step on one thread, so this is paid once per token per stream).
// Logits: N(0, 2) plus one favourite, a flat long tail like a random-weight model's.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "runtime/sampler.h"

namespace gemlet::runtime {
namespace {

std::vector<float> Logits() {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> l(262144);
  for (float& v : l) v = nd(rng);
  l[1000] = 14.0f;
  return l;
}

// Arg: 0 = temperature 1 only (OpenAI's default), 1 = top_k 40, 2 = top_p 0.95, 3 = min_p 0.05.
void BM_Sample(benchmark::State& state) {
  const std::vector<float> logits = Logits();
  SamplerOptions o;
  o.seed = 1;
  if (state.range(0) == 1) o.top_k = 40;
  if (state.range(0) == 2) o.top_p = 0.95;
  if (state.range(0) == 3) o.min_p = 0.05;
  Sampler s(o);
  for (auto _ : state) benchmark::DoNotOptimize(s.Sample(logits, {}));
}
BENCHMARK(BM_Sample)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gemlet::runtime
BENCHMARK_MAIN();
