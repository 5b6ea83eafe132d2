#include "tools/server/output_router.h"

#include "tools/server/openai_format.h"

namespace gemlet::server {

std::string StopMatcher::Push(std::string_view text, bool* matched) {
  *matched = false;
  if (done_) return {};
  held_.append(text);
  if (stops_.empty()) return std::exchange(held_, {});
  // Earliest full match.
  size_t best = std::string::npos;
  for (const auto& s : stops_) {
    const size_t p = held_.find(s);
    if (p < best) best = p;
  }
  if (best != std::string::npos) {
    *matched = true;
    done_ = true;
    std::string out = held_.substr(0, best);
    held_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const auto& s : stops_) {
    const size_t max_len = std::min(s.size() - 1, held_.size());
    for (size_t len = max_len; len > keep; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        keep = len;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::Flush() {
  if (done_) return {};
  return std::exchange(held_, {});
}

OutputRouter::OutputRouter(ChatModel& model, std::vector<std::string> stops, bool chat)
    : model_(model), text_(model.NewTextStream()), stop_(std::move(stops)), chat_(chat) {}

void OutputRouter::Prime(const std::vector<int32_t>& tokens) {
  std::vector<RouterEvent> ignored;
  for (int32_t t : tokens) {
    const TokenRole role = model_.RoleOf(t);
    if (role == TokenRole::kToolCallStart) {
      state_ = State::kToolCall;
      tool_body_.clear();
    } else if (role == TokenRole::kText && state_ == State::kToolCall) {
      tool_body_ += text_->Push(t);
    }
  }
}

void OutputRouter::EmitContent(std::string text, std::vector<RouterEvent>* out) {
  if (text.empty() || stopped_) return;
  bool matched = false;
  std::string visible = stop_.Push(text, &matched);
  if (!visible.empty()) out->push_back(RouterEvent{RouterEvent::kContent, std::move(visible), {}});
  if (matched) stopped_ = true;
}

void OutputRouter::EmitReasoning(std::string text, std::vector<RouterEvent>* out) {
  if (!thought_head_done_) {
    // Gemma 4 opens the channel with "thought\n"; drop that header.
    thought_head_ += text;
    static constexpr std::string_view kHead = "thought\n";
    if (thought_head_.size() < kHead.size() &&
        kHead.compare(0, thought_head_.size(), thought_head_) == 0) {
      return;  // could still be the header
    }
    thought_head_done_ = true;
    text = thought_head_.rfind(kHead, 0) == 0 ? thought_head_.substr(kHead.size())
                                               : std::move(thought_head_);
    thought_head_.clear();
  }
  if (!text.empty()) out->push_back(RouterEvent{RouterEvent::kReasoning, std::move(text), {}});
}

void OutputRouter::CloseToolCall(std::vector<RouterEvent>* out) {
  auto call = model_.ParseToolCall(tool_body_);
  if (call.ok()) {
    ToolCall c = std::move(call).value();
    c.id = NewId("call_");
    ++tool_calls_;
    out->push_back(RouterEvent{RouterEvent::kToolCall, {}, std::move(c)});
  } else {
    // Not a well-formed call: show it rather than lose it.
    EmitContent(tool_body_, out);
  }
  tool_body_.clear();
}

bool OutputRouter::Push(int32_t token, std::vector<RouterEvent>* out) {
  if (stopped_) return false;
  const TokenRole role = model_.RoleOf(token);
  if (!chat_) {
    if (role == TokenRole::kText) EmitContent(text_->Push(token), out);
    return !stopped_;
  }
  switch (role) {
    case TokenRole::kText: {
      std::string piece = text_->Push(token);
      if (state_ == State::kThinking) {
        EmitReasoning(std::move(piece), out);
      } else if (state_ == State::kToolCall) {
        tool_body_ += piece;
      } else {
        EmitContent(std::move(piece), out);
      }
      break;
    }
    case TokenRole::kThinkStart:
      if (state_ == State::kContent) {
        state_ = State::kThinking;
        thought_head_.clear();
        thought_head_done_ = false;
      }
      break;
    case TokenRole::kThinkEnd:
      if (state_ == State::kThinking) {
        if (!thought_head_done_ && !thought_head_.empty()) {
          thought_head_done_ = true;
          out->push_back(RouterEvent{RouterEvent::kReasoning, std::move(thought_head_), {}});
          thought_head_.clear();
        }
        state_ = State::kContent;
      }
      break;
    case TokenRole::kToolCallStart:
      if (state_ == State::kToolCall) CloseToolCall(out);
      state_ = State::kToolCall;
      tool_body_.clear();
      break;
    case TokenRole::kToolCallEnd:
      if (state_ == State::kToolCall) {
        tool_body_ += text_->Flush();
        CloseToolCall(out);
        state_ = State::kContent;
      }
      break;
    case TokenRole::kHidden:
      break;
  }
  return !stopped_;
}

void OutputRouter::Finish(std::vector<RouterEvent>* out) {
  std::string tail = text_->Flush();
  if (!tail.empty()) {
    if (state_ == State::kThinking) {
      EmitReasoning(std::move(tail), out);
    } else if (state_ == State::kToolCall) {
      tool_body_ += tail;
    } else {
      EmitContent(std::move(tail), out);
    }
  }
  if (state_ == State::kThinking && !thought_head_done_ && !thought_head_.empty()) {
    out->push_back(RouterEvent{RouterEvent::kReasoning, std::move(thought_head_), {}});
    thought_head_.clear();
  }
  if (state_ == State::kToolCall && !tool_body_.empty()) {
    // Generation ended inside a call (length, or a stop token right after the body).
    CloseToolCall(out);
  }
  state_ = State::kContent;
  if (!stopped_) {
    std::string held = stop_.Flush();
    if (!held.empty()) out->push_back(RouterEvent{RouterEvent::kContent, std::move(held), {}});
  }
}

}  // namespace gemlet::server
