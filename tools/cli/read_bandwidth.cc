#include "tools/cli/read_bandwidth.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "base/clock.h"

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
  const int64_t n = std::max<int64_t>(mib, 1) * (int64_t{1} << 20) / 8;
  // An anonymous mapping of its own, unmapped at the end (so the pages leave the process).
  void* mem = mmap(nullptr, n * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return 0;
  uint64_t* buf = static_cast<uint64_t*>(mem);
  std::fill(buf, buf + n, uint64_t{1});
  double best = 0;
  std::vector<uint64_t> sums(threads);
  for (int pass = 0; pass < 3; ++pass) {
    const auto t0 = SteadyClock::now();
    std::vector<std::thread> team;
    for (int t = 1; t < threads; ++t) {
      team.emplace_back([&, t] { sums[t] = SumWords(buf + n * t / threads, n / threads); });
    }
    sums[0] = SumWords(buf, n / threads);
    for (auto& th : team) th.join();
    const double s = SecondsSince(t0);
    uint64_t total = 0;
    for (uint64_t x : sums) total += x;
    if (total != 0) best = std::max(best, static_cast<double>(n / threads * threads) * 8 / s / 1e9);
  }
  munmap(mem, n * 8);
  return best;
}

}  // namespace gemlet::cli
