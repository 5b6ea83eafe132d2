// Parses Gemma 4 model output (decoded with special tokens kept) into visible content,
// thinking and tool calls, incrementally:
//   <|channel>thought\n ... <channel|>          -> reasoning ("thought\n" dropped)
//   <|tool_call>call:NAME{key:value,...}<tool_call|> -> a tool call; strings are <|"|>...<|"|>,
//                                                     keys bare; nested {..} and [..]; numbers,
//                                                     true/false/null; other bare words as strings
//   <turn|>, <|tool_response>, <eos>             -> end of the turn (the rest is ignored)
// Everything else is content. A marker split across Push() calls is held back until it is
// whole. Output cut off mid-call is parsed as far as it goes: Finish() reports the call with
// complete = false and the arguments read so far (open strings and brackets closed).
// The parser works on text, so a marker the model writes as plain characters is a marker too.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace gemlet {

struct ParsedToolCall {
  std::string name;
  nlohmann::json arguments = nlohmann::json::object();
  bool complete = true;  // false: the output ended inside the call
  std::string raw;       // the text between <|tool_call> and <tool_call|>
};

struct ParsedOutput {
  std::string content;
  std::string reasoning;
  std::vector<ParsedToolCall> tool_calls;
  bool ended = false;  // an end-of-turn marker was seen
};

// {"content": ..., "reasoning": ..., "tool_calls": [{"type": "function", "function":
// {"name": ..., "arguments": {...}}, "complete": bool}]} (reasoning/tool_calls only if any).
nlohmann::json ToJson(const ParsedOutput& out);

// Gemma's argument syntax `{key:value,...}` to JSON. `text` starts at the '{'. Sets *complete
// to false when the text ends before the closing '}' (what was read is still returned) and
// *consumed to the number of bytes used.
nlohmann::json ParseGemmaArguments(std::string_view text, bool* complete, size_t* consumed);

class ChatParser {
 public:
  // in_reasoning: the prompt already opened the thought channel (the generation prompt after a
  // tool response with thinking on ends in "<|channel>thought\n").
  explicit ChatParser(bool in_reasoning = false);

  // What one Push() or Finish() adds.
  struct Delta {
    std::string content;
    std::string reasoning;
    std::vector<ParsedToolCall> tool_calls;
  };
  Delta Push(std::string_view text);
  // End of output: releases held-back text and reports an unfinished tool call.
  Delta Finish();

  // Everything parsed so far.
  const ParsedOutput& result() const { return result_; }
  bool ended() const { return result_.ended; }

 private:
  enum class State { kContent, kChannelName, kReasoning, kToolCall, kEnded };
  void Run(bool final, Delta* d);
  void Emit(std::string_view text, Delta* d);

  State state_;
  std::string buf_;  // text not yet consumed
  // Inside a tool call: how far buf_ has been scanned for its end, and whether that point is
  // inside a <|"|> string (so long calls are not rescanned on every Push).
  size_t call_scan_ = 0;
  bool call_in_string_ = false;
  ParsedOutput result_;
};

// One-shot: Push(text) then Finish().
ParsedOutput ParseChatOutput(std::string_view text, bool in_reasoning = false);

}  // namespace gemlet
