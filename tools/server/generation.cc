#include "tools/server/generation.h"

namespace gemlet::server {

Generation::Generation(ChatModel& model, std::vector<std::string> stops, bool chat,
                       const std::vector<int32_t>& reply_prefix)
    : router_(model, std::move(stops), chat) {
  router_.Prime(reply_prefix);
}

bool Generation::OnToken(int32_t token) {
  std::vector<RouterEvent> out;
  const bool go_on = router_.Push(token, &out);
  if (!out.empty()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& e : out) events_.push_back(std::move(e));
    }
    cv_.notify_all();
  }
  return go_on;
}

void Generation::OnFinish(const JobOutcome& outcome) {
  std::vector<RouterEvent> out;
  if (outcome.reason != FinishReason::kCancelled && outcome.reason != FinishReason::kError) {
    router_.Finish(&out);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& e : out) events_.push_back(std::move(e));
    tool_calls_ = router_.tool_calls();
    stop_matched_ = router_.stopped();
    outcome_ = outcome;
  }
  cv_.notify_all();
}

bool Generation::Wait(std::chrono::milliseconds timeout, std::vector<RouterEvent>* events,
                      std::optional<JobOutcome>* outcome) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !events_.empty() || outcome_.has_value(); });
  const bool any = !events_.empty() || outcome_.has_value();
  for (auto& e : events_) events->push_back(std::move(e));
  events_.clear();
  if (outcome_) *outcome = outcome_;
  return any;
}

std::string Generation::FinishReasonText(const JobOutcome& outcome) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (tool_calls_ > 0) return outcome.reason == FinishReason::kLength ? "length" : "tool_calls";
  if (outcome.reason == FinishReason::kLength && !stop_matched_) return "length";
  return "stop";
}

}  // namespace gemlet::server
