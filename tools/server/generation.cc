#include "tools/server/generation.h"

#include <utility>

#include "tools/server/json_util.h"
#include "tools/server/openai_format.h"

namespace gemlet::server {

namespace {

ChatParserOptions ServerParserOptions(std::vector<std::string> stops, bool chat) {
  ChatParserOptions o;
  o.text_markers = false;
  o.chat = chat;
  o.end_of_turn_ends = false;
  o.bad_calls_as_content = true;
  o.stop = std::move(stops);
  return o;
}

}  // namespace

Generation::Generation(ChatModel& model, std::vector<std::string> stops, bool chat,
                       const std::vector<int32_t>& reply_prefix)
    : parser_(ServerParserOptions(std::move(stops), chat), &model.output_vocab()) {
  parser_.Prime(reply_prefix);
}

void Generation::Publish(ChatParser::Delta delta) {
  if (delta.events.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& e : delta.events) {
      switch (e.kind) {
        case ChatParser::Event::kContent:
          events_.push_back(GenerationEvent{GenerationEvent::kContent, std::move(e.text), {}});
          break;
        case ChatParser::Event::kReasoning:
          events_.push_back(GenerationEvent{GenerationEvent::kReasoning, std::move(e.text), {}});
          break;
        case ChatParser::Event::kToolCall:
          ++tool_calls_;
          events_.push_back(GenerationEvent{
              GenerationEvent::kToolCall, {}, ToolCall{NewId("call_"), e.call.name, Dump(e.call.arguments)}});
          break;
      }
    }
  }
  cv_.notify_all();
}

bool Generation::OnToken(int32_t token) {
  if (parser_.stopped()) return false;
  Publish(parser_.PushToken(token));
  return !parser_.stopped();
}

void Generation::OnFinish(const JobOutcome& outcome) {
  if (outcome.reason != FinishReason::kCancelled && outcome.reason != FinishReason::kError) {
    Publish(parser_.Finish());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_matched_ = parser_.stopped();
    outcome_ = outcome;
  }
  cv_.notify_all();
}

bool Generation::Wait(std::chrono::milliseconds timeout, std::vector<GenerationEvent>* events,
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
  if (outcome.reason == FinishReason::kDeadEnd) return FinishReasonName(outcome.reason);
  if (tool_calls_ > 0) return outcome.reason == FinishReason::kLength ? "length" : "tool_calls";
  if (outcome.reason == FinishReason::kLength && !stop_matched_) return "length";
  return "stop";
}

}  // namespace gemlet::server
