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
    : model_(model),
      parser_(ServerParserOptions(stops, chat), &model.output_vocab()),
      stops_(std::move(stops)),
      raw_decoder_(model.output_vocab().NewDecoder()) {
  parser_.Prime(reply_prefix);
}

std::string Generation::TokenText(int32_t token) const {
  auto d = model_.output_vocab().NewDecoder();
  std::string s = d->Push(token);
  return s + d->Flush();
}

void Generation::Publish(ChatParser::Delta delta) {
  if (delta.events.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t first = events_.size();
    for (auto& e : delta.events) {
      switch (e.kind) {
        case ChatParser::Event::kContent:
          events_.push_back(GenerationEvent{GenerationEvent::kContent, std::move(e.text), {}, {}});
          break;
        case ChatParser::Event::kReasoning:
          events_.push_back(GenerationEvent{GenerationEvent::kReasoning, std::move(e.text), {}, {}});
          break;
        case ChatParser::Event::kToolCall:
          ++tool_calls_;
          events_.push_back(GenerationEvent{
              GenerationEvent::kToolCall, {}, ToolCall{NewId("call_"), e.call.name, Dump(e.call.arguments)}, {}});
          break;
      }
    }
    if (!pending_logprobs_.empty() && events_.size() > first) {
      events_[first].logprobs = std::move(pending_logprobs_);
      pending_logprobs_.clear();
    }
  }
  cv_.notify_all();
}

bool Generation::OnToken(int32_t token) { return OnToken(token, nullptr); }

bool Generation::OnToken(int32_t token, const runtime::PickLogprobs* logprobs) {
  if (parser_.stopped()) return false;
  raw_text_ += raw_decoder_->Push(token);
  if (logprobs != nullptr) {
    TokenLogprobText t;
    t.token = TokenText(token);
    t.logprob = logprobs->chosen.logprob;
    for (const auto& alt : logprobs->top) t.top.emplace_back(TokenText(alt.token), alt.logprob);
    pending_logprobs_.push_back(std::move(t));
  }
  Publish(parser_.PushToken(token));
  return !parser_.stopped();
}

void Generation::OnFinish(const JobOutcome& outcome) {
  if (outcome.reason != FinishReason::kCancelled && outcome.reason != FinishReason::kError) {
    Publish(parser_.Finish());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    raw_text_ += raw_decoder_->Flush();  // the decoder may hold the last text back
    if (!pending_logprobs_.empty()) {
      GenerationEvent e;
      e.logprobs = std::move(pending_logprobs_);
      pending_logprobs_.clear();
      events_.push_back(std::move(e));
    }
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

bool Generation::StopMatched() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_matched_;
}

std::string Generation::MatchedStop() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!stop_matched_) return "";
  std::string best;
  size_t best_end = std::string::npos;
  for (const std::string& s : stops_) {
    const size_t at = raw_text_.find(s);
    if (s.empty() || at == std::string::npos) continue;
    if (best_end == std::string::npos || at + s.size() < best_end) {
      best_end = at + s.size();
      best = s;
    }
  }
  return best;
}

std::string Generation::FinishReasonText(const JobOutcome& outcome) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (outcome.reason == FinishReason::kDeadEnd) return FinishReasonName(outcome.reason);
  if (tool_calls_ > 0) return outcome.reason == FinishReason::kLength ? "length" : "tool_calls";
  if (outcome.reason == FinishReason::kLength && !stop_matched_) return "length";
  return "stop";
}

}  // namespace gemlet::server
