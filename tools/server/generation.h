// One request's generation as seen from both sides: the scheduler thread feeds it tokens
// (JobSink), the runtime output parser (text/chat_parser.h) turns them into content /
// reasoning / tool-call events, and the HTTP thread waits for those events to stream or
// collect them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "text/chat_parser.h"
#include "tools/server/chat_model.h"
#include "tools/server/scheduler.h"

namespace gemlet::server {

struct GenerationEvent {
  enum Kind { kContent, kReasoning, kToolCall } kind = kContent;
  std::string text;
  ToolCall call;  // kToolCall: with its id and the arguments as JSON text
  // The tokens generated since the previous event with logprobs, when the request asked for
  // them (the text of an event and its tokens need not align: stop strings are held back).
  // Tokens left at the end come in a last kContent event with empty text.
  std::vector<TokenLogprobText> logprobs;
};

class Generation : public JobSink {
 public:
  // chat = false: raw completion; every text token is content, control tokens are hidden.
  // Markers are read by token only (a model writing "<|tool_call>" in characters shows them);
  // end-of-turn tokens show nothing (the scheduler stops at them unless ignore_eos); a tool
  // call without a name is shown as its text.
  Generation(ChatModel& model, std::vector<std::string> stops, bool chat,
             const std::vector<int32_t>& reply_prefix);

  // JobSink (scheduler thread).
  bool OnToken(int32_t token) override;
  bool OnToken(int32_t token, const runtime::PickLogprobs* logprobs) override;
  void OnFinish(const JobOutcome& outcome) override;

  // HTTP thread: waits up to `timeout` for news. Moves new events to *events; sets *outcome
  // once the job has finished (after its last events). Returns true if anything arrived.
  bool Wait(std::chrono::milliseconds timeout, std::vector<GenerationEvent>* events,
            std::optional<JobOutcome>* outcome);

  // "stop", "length" or "tool_calls" (valid once finished). A stop string found in the text
  // released at the end still counts as "stop", as OpenAI reports it.
  std::string FinishReasonText(const JobOutcome& outcome) const;
  // Whether the generation ended on one of the request's stop strings, and which (the one
  // whose first occurrence in the generated text ends first). Valid once finished.
  bool StopMatched() const;
  std::string MatchedStop() const;

 private:
  void Publish(ChatParser::Delta delta);

  std::string TokenText(int32_t token) const;

  ChatModel& model_;
  ChatParser parser_;  // scheduler thread only
  std::vector<TokenLogprobText> pending_logprobs_;  // scheduler thread only
  std::vector<std::string> stops_;
  std::unique_ptr<TokenTextDecoder> raw_decoder_;  // scheduler thread only
  std::string raw_text_;  // every generated token's text (under mu_ once finished)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<GenerationEvent> events_;
  std::optional<JobOutcome> outcome_;
  int tool_calls_ = 0;
  bool stop_matched_ = false;
};

}  // namespace gemlet::server
