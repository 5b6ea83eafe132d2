#include "base/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GEMLET_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define GEMLET_CPU_RELAX() asm volatile("yield")
#else
#define GEMLET_CPU_RELAX() ((void)0)
#endif

namespace gemlet {

namespace {
// Iterations a thread spins before it sleeps on a condition variable. Decode issues many
// short jobs back to back; spinning a few tens of microseconds avoids a futex wake-up each.
constexpr int kSpinIterations = 1 << 14;
// Chunks per thread in a ParallelFor: enough that the others can take over a descheduled
// thread's share, few enough that the per-chunk overhead stays negligible.
constexpr int kChunksPerThread = 4;
thread_local bool t_in_job = false;

// One spin step; every 64th gives the core away, so an oversubscribed machine (more pool
// threads than free cores) still makes progress.
inline void Relax(int i) {
  if ((i & 63) == 63) {
    std::this_thread::yield();
  } else {
    GEMLET_CPU_RELAX();
  }
}
}  // namespace

int ThreadPool::HardwareThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int num_threads) {
  num_threads_ = num_threads <= 0 ? HardwareThreads() : num_threads;
  workers_.reserve(num_threads_ - 1);
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  wake_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::RunChunks(uint32_t generation) {
  for (;;) {
    // claim_ = generation (32 bits) | chunks (16 bits) | next chunk (16 bits): the bound is
    // read together with the generation, so a late worker can never claim a later job's
    // chunk against an earlier job's fields.
    uint64_t c = claim_.load(std::memory_order_acquire);
    int chunk = -1, chunks = 0;
    while ((c >> 32) == generation && (c & 0xffff) < ((c >> 16) & 0xffff)) {
      if (claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel)) {
        chunk = static_cast<int>(c & 0xffff);
        chunks = static_cast<int>((c >> 16) & 0xffff);
        break;
      }
    }
    if (chunk < 0) return;
    // The claimed chunk keeps the job alive: fn_ and n_ are this job's until it is done.
    const int64_t begin = n_ * chunk / chunks;
    const int64_t end = n_ * (chunk + 1) / chunks;
    if (begin < end) {
      t_in_job = true;
      (*fn_)(begin, end);
      t_in_job = false;
    }
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) {
      std::lock_guard<std::mutex> lk(mu_);
      done_cv_.notify_one();
    }
  }
}

void ThreadPool::WorkerLoop() {
  uint32_t seen = 0;
  for (;;) {
    uint32_t g = generation_.load(std::memory_order_acquire);
    for (int i = 0; g == seen && i < kSpinIterations; ++i) {
      Relax(i);
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock<std::mutex> lk(mu_);
      wake_cv_.wait(lk, [&] { return stop_ || generation_.load(std::memory_order_acquire) != seen; });
      if (stop_) return;
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    RunChunks(g);
  }
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t max_parts = (n + grain - 1) / grain;
  const int parts = static_cast<int>(std::min<int64_t>(num_threads_, max_parts));
  if (parts <= 1 || t_in_job) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call_lock(call_mu_);
  // A few chunks per thread, each at least `grain` long (except the last).
  const int chunks = static_cast<int>(
      std::min<int64_t>({int64_t{num_threads_} * kChunksPerThread, max_parts, int64_t{0xffff}}));
  fn_ = &fn;
  n_ = n;
  done_.store(0, std::memory_order_relaxed);
  uint32_t g;
  {
    std::lock_guard<std::mutex> lk(mu_);
    g = generation_.load(std::memory_order_relaxed) + 1;
    claim_.store(uint64_t{g} << 32 | uint64_t(chunks) << 16, std::memory_order_release);
    generation_.store(g, std::memory_order_release);
  }
  wake_cv_.notify_all();
  RunChunks(g);
  for (int i = 0; done_.load(std::memory_order_acquire) != chunks && i < kSpinIterations; ++i) {
    Relax(i);
  }
  if (done_.load(std::memory_order_acquire) != chunks) {
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return done_.load(std::memory_order_acquire) == chunks; });
  }
  fn_ = nullptr;
}

void ParallelForOrInline(ThreadPool* pool, int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                         int64_t grain) {
  if (pool != nullptr && pool->num_threads() > 1 && n >= 2 * grain) {
    pool->ParallelFor(n, fn, grain);
  } else if (n > 0) {
    fn(0, n);
  }
}

}  // namespace gemlet
