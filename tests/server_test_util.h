// A server::JobSink for the tests that drive the scheduler directly (server_engine_test.cc,
// server_vision_test.cc): a JobSink that keeps the streamed tokens and waits for the outcome,
// and the reference a stream must equal: the same prompt's greedy tokens from a Session alone.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "base/status.h"
#include "runtime/generate.h"
#include "runtime/media.h"
#include "runtime/session.h"
#include "tools/server/chat_model.h"
#include "tools/server/scheduler.h"

namespace gemlet::oracle {

class Collect : public server::JobSink {
 public:
  bool OnToken(int32_t t) override {
    std::lock_guard<std::mutex> lock(mu_);
    tokens_.push_back(t);
    return true;
  }
  void OnFinish(const server::JobOutcome& o) override {
    std::lock_guard<std::mutex> lock(mu_);
    outcome_ = o;
    cv_.notify_all();
  }
  server::JobOutcome Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, std::chrono::seconds(120), [&] { return outcome_.has_value(); }));
    return outcome_.value_or(server::JobOutcome{});
  }
  std::vector<int32_t> tokens() {
    std::lock_guard<std::mutex> lock(mu_);
    return tokens_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int32_t> tokens_;
  std::optional<server::JobOutcome> outcome_;
};

// `n` greedy tokens of `prompt` (past end-of-turn) in a Session of its own with `ctx` positions,
// prefilled `chunk` tokens per step.
inline Result<runtime::GenerateResult> GreedyAlone(const runtime::Engine& engine, const runtime::MediaPrompt& prompt,
                                                   int64_t n, int64_t ctx, int64_t chunk = 64) {
  runtime::Session s(engine, runtime::SessionOptions{ctx, chunk});
  runtime::SamplerOptions greedy;
  greedy.temperature = 0;
  s.set_sampler(greedy);
  runtime::GenerateOptions go;
  go.max_tokens = n;
  go.stop_at_eog = false;
  return runtime::Generate(s, prompt, go);
}

// Submits `p` (its tokens and media rows) to `sched` for `n` greedy tokens into `sink`.
inline void SubmitGreedy(server::Scheduler& sched, server::ChatModel& model, const server::RenderedPrompt& p,
                         int64_t n, std::shared_ptr<Collect> sink) {
  server::JobSpec spec;
  spec.prompt = p.tokens;
  spec.media = p.media;
  spec.max_tokens = n;
  server::SamplingOptions greedy;
  greedy.temperature = 0;
  spec.sampler = model.NewSampler(greedy, 1, nullptr);
  spec.sink = std::move(sink);
  auto h = sched.Submit(std::move(spec));
  EXPECT_TRUE(h.ok()) << (h.ok() ? "" : h.error().message);
}

}  // namespace gemlet::oracle
