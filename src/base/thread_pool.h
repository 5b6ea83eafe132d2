// A persistent pool of worker threads for data-parallel loops (ParallelFor). Threads are
// created once; a ParallelFor call splits [0, n) into a few contiguous chunks per thread,
// wakes the workers, and every thread (the caller included) claims chunks until none is
// left; it returns when every chunk is done. Claiming (rather than one fixed range per
// thread) keeps a loop going when a worker is descheduled on a busy machine: the others take
// its chunks instead of waiting for it.
//
// Any computation whose outputs are independent per index (matmul rows, attention heads)
// gives bit-identical results for every thread count and every chunking.
//
// Thread safety: ParallelFor may be called from several threads at once (sessions sharing
// an engine); calls are serialized. A ParallelFor issued from inside a running job (nested)
// runs inline on the calling worker.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gemlet {

class ThreadPool {
 public:
  // `num_threads` counts the calling thread: 1 means no workers (everything runs inline).
  // 0 or less means one per hardware thread.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(begin, end) on disjoint ranges that cover [0, n). Ranges are never smaller than
  // `grain` indices (except the last), so small loops use fewer threads.
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 1);

  // Number of hardware threads (at least 1).
  static int HardwareThreads();

 private:
  void WorkerLoop();
  // Claims and runs chunks of job `generation` until none is left.
  void RunChunks(uint32_t generation);

  int num_threads_ = 1;
  std::vector<std::thread> workers_;

  std::mutex call_mu_;  // serializes ParallelFor callers

  // The current job, published by `generation_`. `claim_` holds the job's generation (high 32
  // bits), its chunk count and the next unclaimed chunk (16 bits each), so a late worker
  // cannot claim a chunk of a later job; fn_ and n_ stay valid while any chunk of the job is
  // unfinished.
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  std::atomic<uint32_t> generation_{0};
  std::atomic<uint64_t> claim_{0};
  std::atomic<int> done_{0};  // chunks of the current job finished
  bool stop_ = false;

  std::mutex mu_;
  std::condition_variable wake_cv_;
  std::condition_variable done_cv_;
};

// fn(begin, end) over disjoint ranges covering [0, n): pool->ParallelFor(n, fn, grain) when
// there is a pool with workers and at least two grains of work, else fn(0, n) on the caller
// (no wake-up for a loop too small to share). For loops whose outputs are independent per
// index, so the bits do not depend on which runs.
void ParallelForOrInline(ThreadPool* pool, int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                         int64_t grain = 1);

}  // namespace gemlet
