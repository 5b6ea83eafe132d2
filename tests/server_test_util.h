// A server::JobSink for the tests that drive the scheduler directly (server_engine_test.cc,
// server_vision_test.cc): it keeps the streamed tokens and waits for the outcome.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

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

}  // namespace gemlet::oracle
