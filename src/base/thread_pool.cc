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
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  wake_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::RunShare(int index) {
  if (index >= parts_) return;
  const int64_t begin = n_ * index / parts_;
  const int64_t end = n_ * (index + 1) / parts_;
  if (begin < end) {
    t_in_job = true;
    (*fn_)(begin, end);
    t_in_job = false;
  }
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
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
    RunShare(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lk(mu_);
      done_cv_.notify_one();
    }
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
  fn_ = &fn;
  n_ = n;
  parts_ = parts;
  pending_.store(num_threads_ - 1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lk(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_cv_.notify_all();
  RunShare(0);
  for (int i = 0; pending_.load(std::memory_order_acquire) != 0 && i < kSpinIterations; ++i) {
    Relax(i);
  }
  if (pending_.load(std::memory_order_acquire) != 0) {
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  }
  fn_ = nullptr;
}

}  // namespace gemlet
