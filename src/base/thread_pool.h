// A persistent pool of worker threads for data-parallel loops (ParallelFor). Threads are
// created once; a ParallelFor call wakes them, splits [0, n) into one contiguous range per
// thread (the calling thread takes the first), and returns when every range is done.
//
// The split is static and depends only on n and the thread count, so any computation whose
// outputs are independent per index (matmul rows, attention heads) gives bit-identical
// results for every thread count.
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
  void WorkerLoop(int index);
  void RunShare(int index);

  int num_threads_ = 1;
  std::vector<std::thread> workers_;

  std::mutex call_mu_;  // serializes ParallelFor callers

  // The current job, published by `generation_`.
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int parts_ = 0;  // ranges in this job (<= num_threads_)
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};  // workers that have not finished the current job
  bool stop_ = false;

  std::mutex mu_;
  std::condition_variable wake_cv_;
  std::condition_variable done_cv_;
};

}  // namespace gemlet
