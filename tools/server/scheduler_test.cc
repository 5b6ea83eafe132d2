#include "tools/server/scheduler.h"

#include <gtest/gtest.h>

#include <future>

#include "base/clock.h"
#include "tools/server/testing/fake_model.h"

namespace gemlet::server {
namespace scheduler_test {

using testing::Bytes;
using testing::FakeBackend;
using testing::FakeSampler;
using testing::kEos;

// Collects tokens; optionally stops after `stop_after` tokens or blocks in OnToken.
class CollectSink : public JobSink {
 public:
  bool OnToken(int32_t t) override {
    std::lock_guard<std::mutex> lock(mu);
    tokens.push_back(t);
    cv.notify_all();
    return stop_after < 0 || static_cast<int>(tokens.size()) < stop_after;
  }
  void OnFinish(const JobOutcome& o) override {
    std::lock_guard<std::mutex> lock(mu);
    outcome = o;
    cv.notify_all();
  }
  JobOutcome WaitDone() {
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return outcome.has_value(); }));
    return outcome.value_or(JobOutcome{});
  }
  void WaitTokens(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return tokens.size() >= n; }));
  }
  int stop_after = -1;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int32_t> tokens;
  std::optional<JobOutcome> outcome;
};

JobSpec Spec(const std::string& prompt, int64_t max_tokens, uint64_t seed,
             std::shared_ptr<JobSink> sink, double temperature = 1.0) {
  JobSpec s;
  s.prompt = Bytes(prompt);
  s.max_tokens = max_tokens;
  s.stop_tokens = {kEos};
  s.sampler = std::make_unique<FakeSampler>(temperature, seed);
  s.sink = std::move(sink);
  return s;
}

TEST(SchedulerTest, GeneratesScriptedReplyAndStopsAtStopToken) {
  FakeBackend backend;
  backend.SetScript(testing::ReplyScript(Bytes("hello")));
  Metrics metrics;
  Scheduler sched(backend, metrics, SchedulerOptions{});
  auto sink = std::make_shared<CollectSink>();
  auto h = sched.Submit(Spec("[user]hi\n[assistant]", 100, 1, sink));
  ASSERT_TRUE(h.ok());
  JobOutcome o = sink->WaitDone();
  EXPECT_EQ(o.reason, FinishReason::kStop);
  EXPECT_EQ(sink->tokens, Bytes("hello"));
  EXPECT_EQ(o.completion_tokens, 6);  // "hello" + the stop token
  EXPECT_EQ(o.prompt_tokens, 20);  // "[user]hi\n[assistant]"
}

TEST(SchedulerTest, MaxTokensEndsWithLength) {
  FakeBackend backend;
  Metrics metrics;
  Scheduler sched(backend, metrics, SchedulerOptions{});
  auto sink = std::make_shared<CollectSink>();
  ASSERT_TRUE(sched.Submit(Spec("abc", 7, 1, sink)).ok());
  JobOutcome o = sink->WaitDone();
  EXPECT_EQ(o.reason, FinishReason::kLength);
  EXPECT_EQ(sink->tokens.size(), 7u);
}

TEST(SchedulerTest, ContextLimitEndsWithLengthAndRejectsLongPrompts) {
  FakeBackend backend(/*context=*/32);
  Metrics metrics;
  Scheduler sched(backend, metrics, SchedulerOptions{});
  auto sink = std::make_shared<CollectSink>();
  ASSERT_TRUE(sched.Submit(Spec(std::string(20, 'a'), 1000, 1, sink)).ok());
  JobOutcome o = sink->WaitDone();
  EXPECT_EQ(o.reason, FinishReason::kLength);
  // 20 prompt tokens + 12 fed generated tokens fill 32; the 13th sampled token is not fed.
  EXPECT_EQ(sink->tokens.size(), 13u);

  auto too_long = sched.Submit(Spec(std::string(32, 'a'), 10, 1, std::make_shared<CollectSink>()));
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().status, 400);
  EXPECT_EQ(too_long.error().code, "context_length_exceeded");
}

TEST(SchedulerTest, SinkCanStopGeneration) {
  FakeBackend backend;
  Metrics metrics;
  Scheduler sched(backend, metrics, SchedulerOptions{});
  auto sink = std::make_shared<CollectSink>();
  sink->stop_after = 3;
  ASSERT_TRUE(sched.Submit(Spec("abc", 100, 1, sink)).ok());
  JobOutcome o = sink->WaitDone();
  EXPECT_EQ(o.reason, FinishReason::kStop);
  EXPECT_EQ(sink->tokens.size(), 3u);
}

TEST(SchedulerTest, SameSeedSameTokensAloneOrBatched) {
  FakeBackend backend;
  Metrics metrics;
  SchedulerOptions opt;
  opt.slots = 8;
  opt.cache_sessions = 0;  // every run prefills from scratch
  Scheduler sched(backend, metrics, opt);
  auto solo = std::make_shared<CollectSink>();
  ASSERT_TRUE(sched.Submit(Spec("same prompt", 40, 1234, solo)).ok());
  solo->WaitDone();
  ASSERT_EQ(solo->tokens.size(), 40u);

  std::vector<std::shared_ptr<CollectSink>> sinks;
  for (int i = 0; i < 8; ++i) {
    sinks.push_back(std::make_shared<CollectSink>());
    // Half with the same seed and prompt; the rest differ, to share batches with them.
    const bool same = i % 2 == 0;
    ASSERT_TRUE(sched.Submit(Spec(same ? "same prompt" : "other prompt " + std::to_string(i), 40,
                                  same ? 1234 : 99 + i, sinks.back()))
                    .ok());
  }
  for (int i = 0; i < 8; ++i) {
    sinks[i]->WaitDone();
    if (i % 2 == 0) {
      EXPECT_EQ(sinks[i]->tokens, solo->tokens) << "stream " << i;
    }
  }
  EXPECT_NE(sinks[1]->tokens, solo->tokens);
  EXPECT_GT(backend.max_batch.load(), 1);
}

TEST(SchedulerTest, ConcurrentStreamsShareDecodeSteps) {
  FakeBackend backend;
  backend.pass_delay = std::chrono::microseconds(2000);
  Metrics metrics;
  SchedulerOptions opt;
  opt.slots = 4;
  Scheduler sched(backend, metrics, opt);
  std::vector<std::shared_ptr<CollectSink>> sinks;
  backend.hold = true;  // the first prefill waits until all four jobs are queued
  for (int i = 0; i < 4; ++i) {
    sinks.push_back(std::make_shared<CollectSink>());
    ASSERT_TRUE(sched.Submit(Spec("prompt " + std::to_string(i), 50, i, sinks.back())).ok());
  }
  backend.hold = false;
  for (auto& s : sinks) EXPECT_EQ(s->WaitDone().reason, FinishReason::kLength);
  // 4 x 49 fed tokens in 49 shared steps, plus at most 3 more while the later jobs join (the
  // first job may be admitted before the others and step alone until they are; their prompts
  // are prefilled beside its decode steps).
  EXPECT_EQ(backend.decode_rows.load(), 4 * 49);
  EXPECT_GE(backend.steps.load(), 49);
  EXPECT_LE(backend.steps.load(), 49 + 3);
  EXPECT_EQ(backend.max_batch.load(), 4);
  EXPECT_LE(metrics.decode_steps(), backend.steps.load());
  EXPECT_GE(metrics.decode_steps(), 49);
}

TEST(SchedulerTest, FullQueueAnswers503WithRetryAfter) {
  FakeBackend backend;
  backend.pass_delay = std::chrono::microseconds(1000);
  Metrics metrics;
  SchedulerOptions opt;
  opt.slots = 1;
  opt.queue_capacity = 2;
  opt.retry_after_s = 3;
  Scheduler sched(backend, metrics, opt);
  // The sinks of the accepted jobs. Which jobs are accepted depends on when the scheduler
  // takes job 0 into the slot (e.g. 0, 1 and 3 when it does so between the 3rd and 4th
  // submission), so each sink is kept with its handle.
  std::vector<std::shared_ptr<CollectSink>> sinks;
  std::vector<std::shared_ptr<JobHandle>> handles;
  int rejected = 0;
  for (int i = 0; i < 6; ++i) {
    auto sink = std::make_shared<CollectSink>();
    auto h = sched.Submit(Spec("p", 1000000, i, sink));
    if (h.ok()) {
      handles.push_back(*h);
      sinks.push_back(sink);
    } else {
      ++rejected;
      EXPECT_EQ(h.error().status, 503);
      EXPECT_EQ(h.error().retry_after_s, 3);
    }
  }
  // One job in the slot (maybe not yet taken), two waiting: at least three are turned away.
  EXPECT_GE(rejected, 3);
  for (auto& h : handles) h->Cancel();
  for (auto& sink : sinks) EXPECT_EQ(sink->WaitDone().reason, FinishReason::kCancelled);
}

TEST(SchedulerTest, CancelFreesTheSlotForTheNextJob) {
  FakeBackend backend;
  Metrics metrics;
  SchedulerOptions opt;
  opt.slots = 1;
  Scheduler sched(backend, metrics, opt);
  auto endless = std::make_shared<CollectSink>();
  auto h = sched.Submit(Spec("endless", 1 << 30, 1, endless));
  ASSERT_TRUE(h.ok());
  endless->WaitTokens(5);
  auto next = std::make_shared<CollectSink>();
  ASSERT_TRUE(sched.Submit(Spec("next", 5, 2, next)).ok());
  (*h)->Cancel();
  EXPECT_EQ(endless->WaitDone().reason, FinishReason::kCancelled);
  EXPECT_EQ(next->WaitDone().reason, FinishReason::kLength);
  EXPECT_EQ(next->tokens.size(), 5u);
  EXPECT_EQ(metrics.cancelled(), 1);
}

TEST(SchedulerTest, PrefixCacheResumesConversationAndSharedSystemPrompt) {
  FakeBackend backend;
  Metrics metrics;
  SchedulerOptions opt;
  opt.slots = 1;
  opt.cache_sessions = 4;
  Scheduler sched(backend, metrics, opt);

  // Turn 1 with a system prefix of 10 tokens: a copy is kept at the prefix.
  auto s1 = std::make_shared<CollectSink>();
  JobSpec spec = Spec("SYSTEMXXXX turn one", 8, 7, s1);
  spec.cache_prefix = 10;
  ASSERT_TRUE(sched.Submit(std::move(spec)).ok());
  JobOutcome o1 = s1->WaitDone();
  EXPECT_EQ(o1.cached_tokens, 0);
  EXPECT_EQ(backend.fork_calls.load(), 1);

  // Turn 2 continues the conversation: prompt = turn 1 prompt + its reply + more.
  std::string p2 = "SYSTEMXXXX turn one";
  for (size_t i = 0; i + 1 < s1->tokens.size(); ++i) p2 += static_cast<char>(s1->tokens[i]);
  const int64_t fed = static_cast<int64_t>(p2.size());
  p2 += " and turn two";
  auto s2 = std::make_shared<CollectSink>();
  ASSERT_TRUE(sched.Submit(Spec(p2, 4, 7, s2)).ok());
  EXPECT_EQ(s2->WaitDone().cached_tokens, fed);

  // Another conversation with the same system prompt reuses the 10-token copy.
  auto s3 = std::make_shared<CollectSink>();
  ASSERT_TRUE(sched.Submit(Spec("SYSTEMXXXX something else", 4, 7, s3)).ok());
  EXPECT_EQ(s3->WaitDone().cached_tokens, 10);
  EXPECT_EQ(metrics.prefix_cache_hits(), 2);

  // Reuse gives the same tokens as a fresh prefill would.
  FakeBackend fresh_backend;
  Metrics m2;
  SchedulerOptions no_cache;
  no_cache.cache_sessions = 0;
  Scheduler fresh(fresh_backend, m2, no_cache);
  auto s4 = std::make_shared<CollectSink>();
  ASSERT_TRUE(fresh.Submit(Spec("SYSTEMXXXX something else", 4, 7, s4)).ok());
  s4->WaitDone();
  EXPECT_EQ(s4->tokens, s3->tokens);
}

TEST(SchedulerTest, LongPromptsArePrefilledInChunksWhileOthersDecode) {
  FakeBackend backend;
  Metrics metrics;
  SchedulerOptions opt;
  opt.slots = 2;
  opt.prefill_chunk = 16;
  Scheduler sched(backend, metrics, opt);
  auto a = std::make_shared<CollectSink>();
  auto b = std::make_shared<CollectSink>();
  ASSERT_TRUE(sched.Submit(Spec("short", 30, 1, a)).ok());
  ASSERT_TRUE(sched.Submit(Spec(std::string(200, 'x'), 5, 2, b)).ok());
  a->WaitDone();
  b->WaitDone();
  EXPECT_GE(backend.prefill_parts.load(), 1 + 200 / 16);
  EXPECT_GE(backend.mixed_steps.load(), 1) << "the long prompt's chunks shared steps with a's decoding";
  EXPECT_EQ(b->tokens.size(), 5u);
}

TEST(SchedulerTest, ShutdownCancelsEverything) {
  FakeBackend backend;
  Metrics metrics;
  SchedulerOptions opt;
  opt.slots = 1;
  auto running = std::make_shared<CollectSink>();
  auto waiting = std::make_shared<CollectSink>();
  {
    Scheduler sched(backend, metrics, opt);
    ASSERT_TRUE(sched.Submit(Spec("a", 1 << 30, 1, running)).ok());
    ASSERT_TRUE(sched.Submit(Spec("b", 1 << 30, 1, waiting)).ok());
    running->WaitTokens(3);
    sched.Shutdown();
    auto after = sched.Submit(Spec("c", 1, 1, std::make_shared<CollectSink>()));
    ASSERT_FALSE(after.ok());
    EXPECT_EQ(after.error().status, 503);
  }
  EXPECT_EQ(running->WaitDone().reason, FinishReason::kCancelled);
  EXPECT_EQ(waiting->WaitDone().reason, FinishReason::kCancelled);
}

// Drain (SIGTERM): new jobs get 503 at once; running ones may finish within the grace, the
// rest are cut with kCancelled when it ends.
TEST(SchedulerTest, DrainLetsRunningJobsFinishWithinTheGrace) {
  FakeBackend backend;
  backend.pass_delay = std::chrono::microseconds(2000);
  Metrics metrics;
  SchedulerOptions opt;
  opt.slots = 2;
  Scheduler sched(backend, metrics, opt);
  auto endless = std::make_shared<CollectSink>();
  auto shorter = std::make_shared<CollectSink>();
  ASSERT_TRUE(sched.Submit(Spec("endless", 1 << 30, 1, endless)).ok());
  ASSERT_TRUE(sched.Submit(Spec("shorter", 30, 2, shorter)).ok());
  endless->WaitTokens(2);
  std::thread drain([&] { sched.Drain(std::chrono::milliseconds(400)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto late = sched.Submit(Spec("late", 5, 3, std::make_shared<CollectSink>()));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().status, 503);
  const auto t0 = std::chrono::steady_clock::now();
  drain.join();
  const double waited = SecondsSince(t0);
  EXPECT_GT(waited, 0.2);  // the endless job had the rest of the grace
  EXPECT_LT(waited, 5.0);
  EXPECT_EQ(shorter->WaitDone().reason, FinishReason::kLength);
  EXPECT_EQ(shorter->tokens.size(), 30u);
  EXPECT_EQ(endless->WaitDone().reason, FinishReason::kCancelled);
  EXPECT_GT(endless->tokens.size(), 30u);
}

}  // namespace scheduler_test
}  // namespace gemlet::server

namespace gemlet::server {
namespace scheduler_test {

// n > 1: one prefill, forked; the choices decode in the same steps, and each is what the
// same seed gives alone.
TEST(SchedulerTest, ForksSharePrefillAndDecodeTogether) {
  std::vector<std::vector<int32_t>> alone;
  for (uint64_t seed : {1, 2, 3}) {
    FakeBackend backend;
    Metrics metrics;
    Scheduler sched(backend, metrics, SchedulerOptions{});
    auto sink = std::make_shared<CollectSink>();
    ASSERT_TRUE(sched.Submit(Spec("abc", 8, seed, sink)).ok());
    sink->WaitDone();
    alone.push_back(sink->tokens);
  }
  FakeBackend backend;
  Metrics metrics;
  Scheduler sched(backend, metrics, SchedulerOptions{});
  std::vector<std::shared_ptr<CollectSink>> sinks = {std::make_shared<CollectSink>(),
                                                     std::make_shared<CollectSink>(),
                                                     std::make_shared<CollectSink>()};
  JobSpec spec = Spec("abc", 8, 1, sinks[0]);
  for (uint64_t i = 1; i < 3; ++i) {
    spec.forks.push_back({std::make_unique<FakeSampler>(1.0, 1 + i), sinks[i]});
  }
  ASSERT_TRUE(sched.Submit(std::move(spec)).ok());
  for (size_t i = 0; i < 3; ++i) {
    JobOutcome o = sinks[i]->WaitDone();
    EXPECT_EQ(o.reason, FinishReason::kLength) << i;
    EXPECT_EQ(o.prompt_tokens, 3);
    EXPECT_EQ(sinks[i]->tokens, alone[i]) << i;
  }
  EXPECT_NE(alone[0], alone[1]);
  EXPECT_EQ(backend.prefill_parts.load(), 1);  // the prompt once
  EXPECT_EQ(backend.fork_calls.load(), 2);
  EXPECT_EQ(backend.max_batch.load(), 3);      // the three decode side by side
}

TEST(SchedulerTest, ForksNeedASlotEach) {
  FakeBackend backend;
  Metrics metrics;
  SchedulerOptions so;
  so.slots = 2;
  Scheduler sched(backend, metrics, so);
  auto sink = std::make_shared<CollectSink>();
  JobSpec spec = Spec("abc", 8, 1, sink);
  for (int i = 0; i < 2; ++i) spec.forks.push_back({std::make_unique<FakeSampler>(1.0, 9), sink});
  auto r = sched.Submit(std::move(spec));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, 400);
  EXPECT_EQ(r.error().param, "n");
  // Two choices in a context of 4: each ends by length.
  FakeBackend small(4);
  Scheduler s2(small, metrics, so);
  auto a = std::make_shared<CollectSink>(), b = std::make_shared<CollectSink>();
  JobSpec two = Spec("ab", 8, 1, a);
  two.forks.push_back({std::make_unique<FakeSampler>(1.0, 2), b});
  ASSERT_TRUE(s2.Submit(std::move(two)).ok());
  const JobOutcome oa = a->WaitDone(), ob = b->WaitDone();
  EXPECT_EQ(oa.reason, FinishReason::kLength);
  EXPECT_EQ(ob.reason, FinishReason::kLength);
  EXPECT_EQ(a->tokens.size(), 3u);  // positions 2, 3 and the last, sampled at 4
  EXPECT_EQ(b->tokens.size(), 3u);
}

}  // namespace scheduler_test
}  // namespace gemlet::server
