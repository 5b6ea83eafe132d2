// Kernel microbenchmarks at the E2B model's shapes, for every tier this CPU runs.
//   GEMV (decode): GB/s of weight bytes read. The weights rotate through copies totalling
//     ≥ 512 MB, so they stream from memory as in decode, not from cache.
//   GEMM (prefill): GOP/s (2 ops per multiply-add).
//   ReadBandwidth: the plain memory read rate, the GEMV ceiling.
//   AttnScores / AttnValues / OnlineSoftmax(Bf16): dense attention's steps on one tile (GFLOP/s,
//     Gscores/s), one thread, CPU time.
// Each at 1 and 2 threads (rows split evenly; a spinning helper thread, so no start-up cost).
//   gemlet_kernels_bench --benchmark_filter='Gemv.*avx2' --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/repack.h"

namespace gemlet::kernels {
namespace {

// Runs fn(part, parts) on `parts` threads: the caller and parts−1 spinning helpers.
class SpinTeam {
 public:
  explicit SpinTeam(int parts) : parts_(parts) {
    for (int i = 1; i < parts; ++i) helpers_.emplace_back([this, i] { Loop(i); });
  }
  ~SpinTeam() {
    stop_.store(true);
    epoch_.fetch_add(1);
    for (auto& t : helpers_) t.join();
  }
  void Run(const std::function<void(int, int)>& fn) {
    fn_ = &fn;
    done_.store(0);
    epoch_.fetch_add(1, std::memory_order_release);
    fn(0, parts_);
    while (done_.load(std::memory_order_acquire) != parts_ - 1) std::this_thread::yield();
  }

 private:
  void Loop(int part) {
    uint64_t seen = 0;
    for (;;) {
      uint64_t e;
      // Yielding while waiting: on a shared 2-core machine pure spinning starves the worker.
      while ((e = epoch_.load(std::memory_order_acquire)) == seen) std::this_thread::yield();
      seen = e;
      if (stop_.load()) return;
      (*fn_)(part, parts_);
      done_.fetch_add(1, std::memory_order_release);
    }
  }
  int parts_;
  std::vector<std::thread> helpers_;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> stop_{false};
  const std::function<void(int, int)>* fn_ = nullptr;
};

// [lo, hi) of n items for part p of parts, in multiples of `align`.
std::pair<int64_t, int64_t> Split(int64_t n, int p, int parts, int64_t align) {
  const int64_t units = n / align;
  return {units * p / parts * align, units * (p + 1) / parts * align};
}

struct Buffer {
  explicit Buffer(size_t bytes) : size(bytes) {
    data = static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      std::memcpy(data + i, &s, 8);
    }
  }
  ~Buffer() { std::free(data); }
  uint8_t* data;
  size_t size;
};

enum class WKind { kQ4, kQ4x8, kQ8, kQ8x8 };
constexpr WKind kAllKinds[] = {WKind::kQ4, WKind::kQ4x8, WKind::kQ8, WKind::kQ8x8};
const char* WKindName(WKind k) {
  switch (k) {
    case WKind::kQ4:
      return "q4";
    case WKind::kQ4x8:
      return "q4x8";
    case WKind::kQ8:
      return "q8";
    case WKind::kQ8x8:
      return "q8x8";
  }
  return "?";
}
bool IsQ8(WKind k) { return k == WKind::kQ8 || k == WKind::kQ8x8; }

// Sets every f16 scale d of n blocks at base to `d`.
template <typename Block>
void SetScales(uint8_t* base, int64_t n, uint16_t d) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_array_v<decltype(Block::d)>) {
      for (auto& s : reinterpret_cast<Block*>(base)[i].d) s = d;
    } else {
      reinterpret_cast<Block*>(base)[i].d = d;
    }
  }
}

// Weight copies of a [rows, K] matrix totalling ≥ min_bytes.
struct Weights {
  Weights(WKind kind, int64_t rows, int64_t K, size_t min_bytes) {
    const int64_t nb = K / 32;
    bytes = static_cast<size_t>(rows * nb) * (IsQ8(kind) ? sizeof(BlockQ8) : sizeof(BlockQ4));
    copies = std::max<size_t>(1, (min_bytes + bytes - 1) / bytes);
    buf = std::make_unique<Buffer>(bytes * copies);
    // Finite scales (f16 0x2000 ≈ 0.0078): random bits could be inf/NaN.
    for (size_t c = 0; c < copies; ++c) {
      uint8_t* base = buf->data + c * bytes;
      switch (kind) {
        case WKind::kQ4:
          SetScales<BlockQ4>(base, rows * nb, 0x2000);
          break;
        case WKind::kQ4x8:
          SetScales<BlockQ4x8>(base, rows / 8 * nb, 0x2000);
          break;
        case WKind::kQ8:
          SetScales<BlockQ8>(base, rows * nb, 0x2000);
          break;
        case WKind::kQ8x8:
          SetScales<BlockQ8x8>(base, rows / 8 * nb, 0x2000);
          break;
      }
    }
  }
  const void* Copy(size_t i) const { return buf->data + (i % copies) * bytes; }
  size_t bytes, copies;
  std::unique_ptr<Buffer> buf;
};

std::vector<ActBlock> MakeAct(const KernelTable& k, int64_t T, int64_t K) {
  std::vector<float> x(T * K);
  for (int64_t i = 0; i < T * K; ++i) x[i] = static_cast<float>((i * 7919) % 2001 - 1000) * 1e-3f;
  std::vector<ActBlock> q(T * K / 32);
  for (int64_t t = 0; t < T; ++t) k.quantize_act(x.data() + t * K, q.data() + t * K / 32, K);
  return q;
}

// min_bytes 0: one copy (cache-resident if small: the kernel's compute ceiling).
void BM_Gemv(benchmark::State& state, Tier tier, WKind kind, int64_t rows, int64_t K, int threads,
             size_t min_bytes) {
  const KernelTable& k = *KernelsForTier(tier);
  Weights w(kind, rows, K, min_bytes);
  std::vector<ActBlock> x = MakeAct(k, 1, K);
  std::vector<float> y(rows);
  SpinTeam team(threads);
  size_t it = 0;
  const int64_t nb = K / 32;
  for (auto _ : state) {
    const void* wc = w.Copy(it++);
    team.Run([&](int p, int parts) {
      auto [r0, r1] = Split(rows, p, parts, 8);
      if (p == parts - 1) r1 = rows;
      switch (kind) {
        case WKind::kQ4:
          k.gemv_q4(static_cast<const BlockQ4*>(wc), nb, r0, r1, x.data(), K, y.data());
          break;
        case WKind::kQ4x8:
          k.gemv_q4x8(static_cast<const BlockQ4x8*>(wc), nb, r0, r1, x.data(), K, y.data());
          break;
        case WKind::kQ8:
          k.gemv_q8(static_cast<const BlockQ8*>(wc), nb, r0, r1, x.data(), K, y.data());
          break;
        case WKind::kQ8x8:
          k.gemv_q8x8(static_cast<const BlockQ8x8*>(wc), nb, r0, r1, x.data(), K, y.data());
          break;
      }
    });
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(
      static_cast<double>(w.bytes) * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

// min_bytes 0: one copy (cache-resident if small); 512 MiB: weights streamed from memory, as in
// a batched decode step (few tokens per weight byte).
void BM_Gemm(benchmark::State& state, Tier tier, WKind kind, int64_t rows, int64_t K, int64_t T,
             int threads, size_t min_bytes) {
  const KernelTable& k = *KernelsForTier(tier);
  Weights w(kind, rows, K, min_bytes);
  std::vector<ActBlock> x = MakeAct(k, T, K);
  std::vector<float> y(T * rows);
  SpinTeam team(threads);
  const int64_t nb = K / 32;
  size_t it = 0;
  for (auto _ : state) {
    const void* wc = w.Copy(it++);
    team.Run([&](int p, int parts) {
      auto [r0, r1] = Split(rows, p, parts, 8);
      if (p == parts - 1) r1 = rows;
      switch (kind) {
        case WKind::kQ4:
          k.gemm_q4(static_cast<const BlockQ4*>(wc), nb, r0, r1, x.data(), nb, T, K, y.data(),
                    rows);
          break;
        case WKind::kQ4x8:
          k.gemm_q4x8(static_cast<const BlockQ4x8*>(wc), nb, r0, r1, x.data(), nb, T, K, y.data(),
                      rows);
          break;
        case WKind::kQ8:
          k.gemm_q8(static_cast<const BlockQ8*>(wc), nb, r0, r1, x.data(), nb, T, K, y.data(),
                    rows);
          break;
        case WKind::kQ8x8:
          k.gemm_q8x8(static_cast<const BlockQ8x8*>(wc), nb, r0, r1, x.data(), nb, T, K, y.data(), rows);
          break;
      }
    });
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GOP/s"] = benchmark::Counter(2.0 * rows * K * T * state.iterations() / 1e9,
                                               benchmark::Counter::kIsRate);
}

void BM_GemvF(benchmark::State& state, Tier tier, TensorType wt, int64_t rows, int64_t K) {
  const KernelTable& k = *KernelsForTier(tier);
  const size_t bytes = static_cast<size_t>(rows * K) * (wt == TensorType::kF32 ? 4 : 2);
  const size_t copies = std::max<size_t>(1, (size_t{512} << 20) / bytes);
  Buffer buf(bytes * copies);
  if (wt != TensorType::kF32) {  // keep values finite: clear exponent bits' top
    for (size_t i = 1; i < bytes * copies; i += 2) buf.data[i] &= 0x3f;
  } else {
    for (size_t i = 3; i < bytes * copies; i += 4) buf.data[i] &= 0x3f;
  }
  std::vector<float> x(K, 0.5f), y(rows);
  size_t it = 0;
  for (auto _ : state) {
    k.gemv_f(wt, buf.data + (it++ % copies) * bytes, K, 0, rows, x.data(), K, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) * state.iterations() / 1e9,
                                              benchmark::Counter::kIsRate);
}

void BM_QuantizeAct(benchmark::State& state, Tier tier, int64_t K) {
  const KernelTable& k = *KernelsForTier(tier);
  std::vector<float> x(K);
  for (int64_t i = 0; i < K; ++i) x[i] = static_cast<float>(i % 97) - 48.0f;
  std::vector<ActBlock> q(K / 32);
  for (auto _ : state) {
    k.quantize_act(x.data(), q.data(), K);
    benchmark::DoNotOptimize(q.data());
  }
  state.counters["Gvalues/s"] = benchmark::Counter(
      static_cast<double>(K) * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

// Dense attention's inner steps on one 64-query × 128-key tile (ops/dense_attention.cc), in L1/L2,
// one thread: the scores Q·Kᵀ (gemm_acc_f over head dim 64 against packed Kᵀ panels), the online
// softmax of the tile, and the weighted values P·V (gemm_acc_f over the 128 keys). GFLOP/s for
// the products, Gscores/s for the softmax.
constexpr int64_t kAttnRows = 64, kAttnKeys = 128, kAttnDim = 64;

// y [64, cols] += a [64, inner] · b [inner, cols] by gemm_acc_f: the scores (inner = head dim,
// cols = keys; the caller zeroes y first) or the weighted values (inner = keys, cols = head dim).
void BM_AttnProduct(benchmark::State& state, Tier tier, int64_t inner, int64_t cols, bool zero_first) {
  const KernelTable& k = *KernelsForTier(tier);
  std::vector<float> a(kAttnRows * inner, 0.01f), b(inner * cols, 0.02f), y(kAttnRows * cols);
  for (auto _ : state) {
    if (zero_first) std::fill(y.begin(), y.end(), 0.0f);
    k.gemm_acc_f(TensorType::kF32, a.data(), inner, kAttnRows, b.data(), cols, inner, cols, y.data(), cols, 0);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kAttnRows * inner * cols * state.iterations() / 1e9,
                                                 benchmark::Counter::kIsRate);
}

// bf16: online_softmax_bf16 (the weights rounded to bf16 into their own buffer; the scores stay).
void BM_OnlineSoftmax(benchmark::State& state, Tier tier, bool bf16) {
  const KernelTable& k = *KernelsForTier(tier);
  std::vector<float> s(kAttnRows * kAttnKeys), m(kAttnRows, -1e30f), l(kAttnRows, 0.0f), corr(kAttnRows);
  std::vector<uint16_t> p(kAttnRows * kAttnKeys);
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<float>((i * 7919) % 2001 - 1000) * 0.02f;
  // (Each call turns the scores into weights in (0, 1], which the next takes as scores: the
  // same work every time, and l grows by at most 128 a call.)
  for (auto _ : state) {
    if (bf16) {
      k.online_softmax_bf16(s.data(), kAttnKeys, kAttnRows, kAttnKeys, m.data(), l.data(), corr.data(), p.data(),
                            kAttnKeys);
      benchmark::DoNotOptimize(p.data());
    } else {
      k.online_softmax(s.data(), kAttnKeys, kAttnRows, kAttnKeys, m.data(), l.data(), corr.data());
      benchmark::DoNotOptimize(s.data());
    }
  }
  state.counters["Gscores/s"] = benchmark::Counter(static_cast<double>(kAttnRows * kAttnKeys) * state.iterations() / 1e9,
                                                   benchmark::Counter::kIsRate);
}

// Sum of a 1 GiB buffer: the read bandwidth the GEMV kernels compete with.
void BM_ReadBandwidth(benchmark::State& state, int threads) {
  const size_t bytes = size_t{1} << 30;
  Buffer buf(bytes);
  SpinTeam team(threads);
  std::vector<uint64_t> sums(threads * 8);
  for (auto _ : state) {
    team.Run([&](int p, int parts) {
      auto [lo, hi] = Split(static_cast<int64_t>(bytes / 64), p, parts, 1);
      const uint64_t* d = reinterpret_cast<const uint64_t*>(buf.data);
      uint64_t a[8] = {};
      for (int64_t i = lo * 8; i < hi * 8; i += 8) {
        for (int j = 0; j < 8; ++j) a[j] += d[i + j];
      }
      uint64_t s = 0;
      for (int j = 0; j < 8; ++j) s += a[j];
      sums[p * 8] = s;
    });
    benchmark::DoNotOptimize(sums.data());
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) * state.iterations() / 1e9,
                                              benchmark::Counter::kIsRate);
}

struct Shape {
  const char* what;
  int64_t rows, K;
};
// E2B: q projection, FFN down, FFN gate+up fused, tied LM head.
constexpr Shape kGemvShapes[] = {{"attn_q", 2048, 1536},
                                 {"ffn_down", 1536, 6144},
                                 {"ffn_gate_up", 12288, 1536},
                                 {"lm_head", 262144, 1536},
                                 // E4B (hidden 2560, intermediate 10240)
                                 {"e4b_ffn_gate_up", 20480, 2560},
                                 {"e4b_ffn_down", 2560, 10240}};
// Prefill (the text model's FFN) and an image through the vision tower (E2B: its MLP's gate or
// up, [3072, 768], over the 2,520 patches of 280 soft tokens).
struct GemmCase {
  Shape shape;
  int64_t tokens[2];  // 0: none
};
constexpr GemmCase kGemmCases[] = {{{"ffn_gate_up", 12288, 1536}, {64, 512}},
                                   {{"ffn_down", 1536, 6144}, {64, 512}},
                                   {{"vision_mlp", 3072, 768}, {2520, 0}}};

int RegisterAll() {
  for (int th : {1, 2}) {
    benchmark::RegisterBenchmark(("ReadBandwidth/threads:" + std::to_string(th)).c_str(),
                                 BM_ReadBandwidth, th)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  for (Tier tier : AvailableTiers()) {
    const std::string tn = TierName(tier);
    benchmark::RegisterBenchmark(("QuantizeAct/" + tn + "/K:6144").c_str(), BM_QuantizeAct, tier,
                                 6144);
    const std::string tile = std::to_string(kAttnRows) + "x" + std::to_string(kAttnKeys) + "x" + std::to_string(kAttnDim);
    benchmark::RegisterBenchmark(("AttnScores/" + tn + "/" + tile).c_str(), BM_AttnProduct, tier, kAttnDim,
                                 kAttnKeys, true)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("AttnValues/" + tn + "/" + tile).c_str(), BM_AttnProduct, tier, kAttnKeys,
                                 kAttnDim, false)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("OnlineSoftmax/" + tn + "/" + tile).c_str(), BM_OnlineSoftmax, tier, false)
        ->Unit(benchmark::kMicrosecond);
    if (KernelsForTier(tier)->online_softmax_bf16 != nullptr) {
      benchmark::RegisterBenchmark(("OnlineSoftmaxBf16/" + tn + "/" + tile).c_str(), BM_OnlineSoftmax, tier, true)
          ->Unit(benchmark::kMicrosecond);
    }
    // Weights in L2, one thread, CPU time: compute ceiling, robust to a busy machine.
    for (WKind kind : kAllKinds) {
      benchmark::RegisterBenchmark(("GemvL2/" + tn + "/" + WKindName(kind) + "/256x1536").c_str(),
                                   BM_Gemv, tier, kind, 256, 1536, 1, size_t{0})
          ->Unit(benchmark::kMicrosecond);
    }
    for (const Shape& s : kGemvShapes) {
      for (WKind kind : kAllKinds) {
        if (IsQ8(kind) && s.rows > 100000) continue;
        for (int th : {1, 2}) {
          if (tier == Tier::kScalar && (th == 2 || s.rows > 100000)) continue;
          const std::string name = "Gemv/" + tn + "/" + WKindName(kind) + "/" + s.what + ":" +
                                   std::to_string(s.rows) + "x" + std::to_string(s.K) +
                                   "/threads:" + std::to_string(th);
          benchmark::RegisterBenchmark(name.c_str(), BM_Gemv, tier, kind, s.rows, s.K, th,
                                       size_t{512} << 20)
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
    if (tier == Tier::kScalar) continue;
    for (TensorType wt : {TensorType::kBF16, TensorType::kF16, TensorType::kF32}) {
      benchmark::RegisterBenchmark(
          ("GemvF/" + tn + "/" + TensorTypeName(wt) + "/2048x1536").c_str(), BM_GemvF, tier, wt,
          2048, 1536)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
    for (const GemmCase& c : kGemmCases) {
      for (int64_t T : c.tokens) {
        if (T == 0) continue;
        for (WKind kind : kAllKinds) {
          for (int th : {1, 2}) {
            const Shape& s = c.shape;
            const std::string name = "Gemm/" + tn + "/" + WKindName(kind) + "/" + s.what + ":" +
                                     std::to_string(s.rows) + "x" + std::to_string(s.K) +
                                     "/T:" + std::to_string(T) + "/threads:" + std::to_string(th);
            benchmark::RegisterBenchmark(name.c_str(), BM_Gemm, tier, kind, s.rows, s.K, T, th, 0)
                ->UseRealTime()
                ->Unit(benchmark::kMillisecond);
          }
        }
      }
    }
    // The GEMM's compute ceiling at few tokens: 256 × 1536 q4x8 weights stay in L2.
    for (int64_t T : {1, 4}) {
      const std::string name = "GemmL2/" + tn + "/q4x8/256x1536/T:" + std::to_string(T);
      benchmark::RegisterBenchmark(name.c_str(), BM_Gemm, tier, WKind::kQ4x8, 256, 1536, T, 1, 0)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
    // Batched decode (the server's step over N streams): q4x8 weights from memory.
    for (int64_t T : {2, 4, 8}) {
      for (int th : {1, 2}) {
        const std::string name = "GemmStream/" + tn + "/q4x8/ffn_gate_up:12288x1536/T:" + std::to_string(T) +
                                 "/threads:" + std::to_string(th);
        benchmark::RegisterBenchmark(name.c_str(), BM_Gemm, tier, WKind::kQ4x8, 12288, 1536, T, th,
                                     size_t{512} << 20)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  return 0;
}

const int kRegistered = RegisterAll();

}  // namespace
}  // namespace gemlet::kernels

BENCHMARK_MAIN();
