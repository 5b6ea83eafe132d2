// Gemma 4's tool-call syntax, read back into JSON: the text between <|tool_call> and
// <tool_call|> is "call:NAME{key:value,...}" — keys bare, strings between <|"|> quotes, nested
// {..} and [..], numbers, true/false/null, other bare words as strings (JSON "strings" too).
// Input cut off mid-call is read as far as it goes (open strings and brackets closed).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace gemlet {

struct ParsedToolCall {
  std::string name;
  nlohmann::json arguments = nlohmann::json::object();
  bool complete = true;  // false: the output ended inside the call
  std::string raw;       // the text between <|tool_call> and <tool_call|>
};

// Gemma's argument syntax `{key:value,...}` to JSON. `text` starts at the '{'. Sets *complete
// to false when the text ends before the closing '}' (what was read is still returned) and
// *consumed to the number of bytes used.
nlohmann::json ParseGemmaArguments(std::string_view text, bool* complete, size_t* consumed);

// The body of one call ("call:NAME{...}", the "call:" optional). `closed`: the closing marker
// was seen (else the call is incomplete whatever its arguments).
ParsedToolCall ParseToolCallBody(std::string_view raw, bool closed);

}  // namespace gemlet
