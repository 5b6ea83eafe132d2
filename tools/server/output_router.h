// Turns generated tokens into what the client sees: visible content (with stop strings
// applied), reasoning (the thought channel, returned apart as reasoning_content) and tool
// calls (parsed from the model's tool-call syntax). Runs on the scheduler thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tools/server/chat_model.h"

namespace gemlet::server {

// Finds stop strings in streamed text. Text that might be the start of a stop string is held
// back until it is known not to be one.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // Adds `text`; returns what may be emitted now. On a match, *matched is set, the text
  // before the stop string is returned and everything after it is dropped.
  std::string Push(std::string_view text, bool* matched);
  // The held-back text (the stream ended without a match).
  std::string Flush();

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool done_ = false;
};

struct RouterEvent {
  enum Kind { kContent, kReasoning, kToolCall } kind = kContent;
  std::string text;
  ToolCall call;
};

class OutputRouter {
 public:
  // chat = false: raw completion; every text token is content, control tokens are hidden.
  OutputRouter(ChatModel& model, std::vector<std::string> stops, bool chat);
  // Feeds tokens that the reply starts with but that are part of the prompt (forced tool
  // call opening). They produce no events except through later tokens.
  void Prime(const std::vector<int32_t>& tokens);
  // Returns false when a stop string ended the reply.
  bool Push(int32_t token, std::vector<RouterEvent>* out);
  // End of generation: flushes held text and any unterminated tool call (as content).
  void Finish(std::vector<RouterEvent>* out);
  int tool_calls() const { return tool_calls_; }
  // A stop string ended the reply (possibly only found in the text Finish() released).
  bool stopped() const { return stopped_; }

 private:
  enum class State { kContent, kThinking, kToolCall };
  void EmitContent(std::string text, std::vector<RouterEvent>* out);
  void EmitReasoning(std::string text, std::vector<RouterEvent>* out);
  void CloseToolCall(std::vector<RouterEvent>* out);

  ChatModel& model_;
  std::unique_ptr<TextStream> text_;
  StopMatcher stop_;
  bool chat_;
  State state_ = State::kContent;
  bool stopped_ = false;
  std::string thought_head_;  // start of the thought channel until its "thought\n" header is gone
  bool thought_head_done_ = false;
  std::string tool_body_;
  int tool_calls_ = 0;
};

}  // namespace gemlet::server
