#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace gemlet {
namespace thread_pool_test {

// Every index is visited exactly once, by disjoint ranges, for many sizes and thread counts.
TEST(ThreadPoolTest, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t n : {1, 2, 3, 7, 64, 1000, 12345}) {
      std::vector<std::atomic<int>> hits(n);
      pool.ParallelFor(n, [&](int64_t b, int64_t e) {
        ASSERT_LT(b, e);
        for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "n=" << n << " i=" << i;
    }
  }
}

TEST(ThreadPoolTest, ZeroAndNegativeSizesDoNothing) {
  ThreadPool pool(2);
  int calls = 0;
  pool.ParallelFor(0, [&](int64_t, int64_t) { ++calls; });
  pool.ParallelFor(-5, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

// The ranges depend only on n and the thread count (a few chunks per thread) and cover
// [0, n) exactly once; work really runs on more than one thread.
TEST(ThreadPoolTest, ChunksCoverTheRangeAndUseSeveralThreads) {
  ThreadPool pool(4);
  std::mutex mu;
  std::set<std::pair<int64_t, int64_t>> ranges;
  std::set<std::thread::id> ids;
  pool.ParallelFor(400, [&](int64_t b, int64_t e) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard<std::mutex> lk(mu);
    ranges.insert({b, e});
    ids.insert(std::this_thread::get_id());
  });
  std::set<std::pair<int64_t, int64_t>> expected;
  for (int64_t i = 0; i < 16; ++i) expected.insert({i * 25, (i + 1) * 25});
  EXPECT_EQ(ranges, expected);
  EXPECT_GE(ids.size(), 2u);
}

// A worker that stalls (descheduled on a busy machine; here: sleeping) holds up only the chunk
// it has claimed: the calling thread takes every other chunk instead of waiting for it.
TEST(ThreadPoolTest, OtherThreadsTakeOverTheChunksOfAStalledThread) {
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> by_caller{0}, total{0};
  pool.ParallelFor(8, [&](int64_t b, int64_t e) {
    if (std::this_thread::get_id() == caller) {
      by_caller.fetch_add(1);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    total.fetch_add(static_cast<int>(e - b));
  });
  EXPECT_EQ(total.load(), 8);
  EXPECT_GE(by_caller.load(), 7);
}

TEST(ThreadPoolTest, GrainLimitsParts) {
  ThreadPool pool(4);
  std::atomic<int> parts{0};
  pool.ParallelFor(
      10, [&](int64_t, int64_t) { parts.fetch_add(1); }, /*grain=*/5);
  EXPECT_EQ(parts.load(), 2);
}

TEST(ThreadPoolTest, NestedCallRunsInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  pool.ParallelFor(8, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      pool.ParallelFor(10, [&](int64_t b2, int64_t e2) {
        for (int64_t j = b2; j < e2; ++j) sum.fetch_add(j);
      });
    }
  });
  EXPECT_EQ(sum.load(), 8 * 45);
}

// Several threads share one pool (sessions of one engine): calls are serialized, none lost.
TEST(ThreadPoolTest, ConcurrentCallers) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int rep = 0; rep < 200; ++rep) {
        pool.ParallelFor(100, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 200 * 100);
}

// Many short jobs in a row (the decode pattern), including after the workers went to sleep.
TEST(ThreadPoolTest, ManyShortJobsAndSleepWake) {
  ThreadPool pool(3);
  int64_t expect = 0;
  std::atomic<int64_t> got{0};
  for (int rep = 0; rep < 2000; ++rep) {
    pool.ParallelFor(rep % 17 + 1, [&](int64_t b, int64_t e) { got.fetch_add(e - b); });
    expect += rep % 17 + 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // workers fall asleep
  pool.ParallelFor(9, [&](int64_t b, int64_t e) { got.fetch_add(e - b); });
  EXPECT_EQ(got.load(), expect + 9);
}

// Without a pool, with one thread, or with under two grains of work, one inline call covers
// [0, n); otherwise the pool's ranges do, none below the grain but the last.
TEST(ThreadPoolTest, ParallelForOrInlineRunsSmallLoopsOnTheCaller) {
  ThreadPool one(1), three(3);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &one, &three}) {
    std::vector<std::pair<int64_t, int64_t>> calls;
    ParallelForOrInline(pool, 15, [&](int64_t b, int64_t e) { calls.emplace_back(b, e); }, 8);
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0], (std::pair<int64_t, int64_t>{0, 15}));
  }
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> calls;
  ParallelForOrInline(&three, 64, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    calls.emplace_back(b, e);
  }, 8);
  std::sort(calls.begin(), calls.end());
  EXPECT_GT(calls.size(), 1u);
  int64_t next = 0;
  for (const auto& [b, e] : calls) {
    EXPECT_EQ(b, next);
    EXPECT_GE(e - b, 8);
    next = e;
  }
  EXPECT_EQ(next, 64);
  int runs = 0;
  ParallelForOrInline(&three, 0, [&](int64_t, int64_t) { ++runs; });
  EXPECT_EQ(runs, 0);
}

}  // namespace thread_pool_test
}  // namespace gemlet
