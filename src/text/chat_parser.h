// The one parser of Gemma 4 model output, for `gemlet run --chat`, `gemlet chat` and
// `gemlet serve`: it splits what the model generates, incrementally, into visible content,
// thinking and tool calls:
//   <|channel>thought\n ... <channel|>           -> reasoning ("thought\n" dropped)
//   <|tool_call>call:NAME{key:value,...}<tool_call|> -> a tool call (text/tool_call_syntax.h)
//   <turn|>, <|tool_response>, <eos>             -> end of the turn (the rest is ignored)
// Everything else is content; stop strings (ChatParserOptions::stop) end the content early.
//
// Input is token ids (PushToken, with an OutputVocab that names the markers and decodes the
// rest) or text (Push). Two ways to read markers:
//  * text_markers (the command line; Push always): a marker is its text, so one the model
//    writes as plain characters is a marker too, and a marker token is read through its text.
//    A marker split across pushes is held back until it is whole; inside a tool call, a closing
//    marker within a <|"|> string is text.
//  * !text_markers (the server): markers are tokens only; text is never scanned for them.
// Output cut off mid-call is parsed as far as it goes: Finish() reports the call with
// complete = false and the arguments read so far.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "text/output_vocab.h"
#include "text/stop_matcher.h"
#include "text/tool_call_syntax.h"

namespace gemlet {

struct ParsedOutput {
  std::string content;
  std::string reasoning;
  std::vector<ParsedToolCall> tool_calls;
  bool ended = false;  // an end-of-turn marker was seen
};

// {"content": ..., "reasoning": ..., "tool_calls": [{"type": "function", "function":
// {"name": ..., "arguments": {...}}, "complete": bool}]} (reasoning/tool_calls only if any).
nlohmann::json ToJson(const ParsedOutput& out);

struct ChatParserOptions {
  // The prompt already opened the thought channel (the generation prompt after a tool
  // response with thinking on ends in "<|channel>thought\n").
  bool in_reasoning = false;
  // Markers are read in text as well (see above); false: by token only.
  bool text_markers = true;
  // false: raw completion (/v1/completions): every text token is content, markers are hidden.
  bool chat = true;
  // false: end-of-turn tokens are hidden and the output goes on (the server stops at its own
  // stop tokens, or generates past them with ignore_eos).
  bool end_of_turn_ends = true;
  // A tool call without a function name is shown as its text (content) instead of reported.
  bool bad_calls_as_content = false;
  // Stop strings over the content: the first one found ends the output (it and what follows
  // are dropped; see stopped()).
  std::vector<std::string> stop = {};
};

class ChatParser {
 public:
  // Text only (Push), markers read in text.
  explicit ChatParser(bool in_reasoning = false);
  // `vocab` (needed by PushToken and Prime; may be null for text only) must outlive the parser.
  ChatParser(ChatParserOptions options, const OutputVocab* vocab);

  // One piece of output, in order.
  struct Event {
    enum Kind { kContent, kReasoning, kToolCall } kind = kContent;
    std::string text;     // kContent, kReasoning
    ParsedToolCall call;  // kToolCall
  };
  // What one Push(), PushToken() or Finish() adds: the same output twice, by kind and in order.
  struct Delta {
    std::string content;
    std::string reasoning;
    std::vector<ParsedToolCall> tool_calls;
    std::vector<Event> events;
  };
  Delta Push(std::string_view text);
  Delta PushToken(int32_t token);
  // Tokens the reply begins with that are part of the prompt (a forced tool-call opening,
  // RenderedChat::reply_prefix): read as if generated, but they produce no output by
  // themselves (a call they open is reported when it closes).
  void Prime(std::span<const int32_t> tokens);
  // End of output: releases held-back text, reports an unfinished tool call.
  Delta Finish();

  // Everything parsed so far.
  const ParsedOutput& result() const { return result_; }
  bool ended() const { return result_.ended; }
  // A stop string ended the output (possibly only found in the text Finish() released).
  bool stopped() const { return stopped_; }

 private:
  enum class State { kContent, kChannelName, kReasoning, kToolCall, kEnded };
  // How much more text may follow what buf_ holds: more text, none before the next marker
  // token (kSettle: held-back marker starts are text after all), or none at all.
  enum class Until { kMore, kSettle, kFinal };
  void Run(Until until, Delta* d);
  void OnMarker(TokenKind marker, Delta* d);
  void Emit(std::string_view text, Delta* d);
  void StopInHeldText(Delta* d);
  void AddCall(std::string_view raw, bool closed, Delta* d);
  void ScanToolCall(Until until, Delta* d);

  ChatParserOptions options_;
  const OutputVocab* vocab_ = nullptr;
  std::unique_ptr<TokenTextDecoder> decoder_;
  StopMatcher stop_;
  State state_;
  bool stopped_ = false;
  std::string buf_;  // text not yet consumed (inside a tool call: the call so far)
  // Inside a tool call read from text: how far buf_ has been scanned for its end, and whether
  // that point is inside a <|"|> string (so long calls are not rescanned on every Push).
  size_t call_scan_ = 0;
  bool call_in_string_ = false;
  ParsedOutput result_;
};

// One-shot: Push(text) then Finish().
ParsedOutput ParseChatOutput(std::string_view text, bool in_reasoning = false);

}  // namespace gemlet
