#include "tools/cli/read_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace gemlet::cli {

namespace {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GEMLET_READ_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GEMLET_READ_CLONES
#endif

// Σ of n 64-bit words in 8 independent lanes, so the loop is load-bound, not add-bound.
GEMLET_READ_CLONES uint64_t SumWords(const uint64_t* p, int64_t n) {
  uint64_t a[8] = {};
  for (int64_t i = 0; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) a[j] += p[i + j];
  }
  return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

}  // namespace

double MeasureReadBandwidth(int threads, int64_t mib) {
  threads = std::max(1, threads);
  const int64_t kWords = std::max<int64_t>(mib, 1) * (int64_t{1} << 20) / 8;
  std::unique_ptr<uint64_t[]> buf(new uint64_t[kWords]);
  std::fill(buf.get(), buf.get() + kWords, uint64_t{1});
  double best = 0;
  std::vector<uint64_t> sums(threads);
  for (int pass = 0; pass < 3; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> team;
    for (int t = 1; t < threads; ++t) {
      team.emplace_back([&, t] { sums[t] = SumWords(buf.get() + kWords * t / threads, kWords / threads); });
    }
    sums[0] = SumWords(buf.get(), kWords / threads);
    for (auto& th : team) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    uint64_t total = 0;
    for (uint64_t x : sums) total += x;
    if (total == 0) return 0;  // (keeps the sums alive)
    best = std::max(best, static_cast<double>(kWords) * 8 / s / 1e9);
  }
  return best;
}

}  // namespace gemlet::cli
