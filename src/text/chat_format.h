// The Gemma 4 E2B/E4B chat template in C++: a faithful port of Google's "Gemma 4 Canonical
// Chat Template" (E2B/E4B variant, shared/tokenizer/gemma4/chat_template.jinja; spec §4.4).
//
// Covered: <bos> exactly once; the system turn (system/developer message, `<|think|>` when
// thinking is on, tool declarations from OpenAI-style JSON schemas); user/model turns and
// consecutive assistant messages merged into one model turn; reasoning shown only after the
// last user message (or with preserve_thinking on tool-call turns); earlier thoughts stripped
// from model content; assistant tool calls and the tool responses that follow them (OpenAI
// role "tool" messages, resolved by tool_call_id, or the legacy tool_responses field);
// multimodal placeholders in content parts; the generation prompt (none after a tool call,
// `<|channel>thought\n` after a tool response when thinking is on). Thinking off adds no empty
// thought block (the E2B/E4B behaviour).
//
// Jinja semantics reproduced: Python `trim` (Unicode whitespace), case-insensitive `dictsort`,
// Python truthiness and str() of non-string values, `upper` (ASCII letters only here).
// Deliberate differences from the template, where it would raise an error instead:
//  * tool_calls[].function.arguments given as a JSON string (the OpenAI wire form) is parsed;
//    it must hold a JSON object;
//  * a role "tool" message whose content is a JSON object renders as the mapping form
//    `response:NAME{key:value,...}` (the template's legacy tool_responses form).
// Errors (kInvalidArgument, naming the message) for input the template cannot render: no role,
// a tool call without a function name, non-object arguments, and the like.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/gemma4_tokens.h"

namespace gemlet {

// tool_choice "required" (some call) or a named function: the reply is made to begin with
// the call's opening, which the renderer writes at the end of the prompt.
enum class ForcedToolCall { kNone, kAnyFunction, kFunction };

struct ChatOptions {
  bool add_generation_prompt = false;  // Hugging Face's default
  bool enable_thinking = false;
  bool preserve_thinking = false;
  nlohmann::json tools = nlohmann::json::array();  // [{"type": "function", "function": {...}}]
  std::string bos_token = std::string(gemma4::kBos);
  ForcedToolCall forced_tool_call = ForcedToolCall::kNone;
  std::string forced_function;  // with kFunction: its name
};

// From {"add_generation_prompt": bool, "enable_thinking": bool, "preserve_thinking": bool,
// "tools": [...]} (the "options" of the chat cases in shared/tokenizer/vectors.json). Missing
// keys keep their defaults; other keys are ignored.
Result<ChatOptions> ChatOptionsFromJson(const nlohmann::json& options);

// Members have default initializers so that designated initializers may leave any out.
struct ChatToolCall {
  std::string id = {};  // optional; matched against a tool message's tool_call_id
  std::string name = {};
  nlohmann::json arguments = nlohmann::json::object();
};

struct ChatMessage {
  std::string role = {};  // "system", "developer", "user", "assistant" or "tool"
  std::string content = {};
  std::string reasoning = {};  // assistant: its thinking (shown after the last user turn)
  std::vector<ChatToolCall> tool_calls = {};  // assistant
  std::string tool_call_id = {};              // tool: the call it answers
  std::string name = {};                      // tool: the function name
};

// OpenAI-style message object.
nlohmann::json ToJson(const ChatMessage& message);
Result<ChatMessage> ChatMessageFromJson(const nlohmann::json& message);

// Renders OpenAI-style messages ([{"role": ..., "content": ...}, ...]) to the prompt text, which
// is then tokenised with special-token matching and no extra <bos>.
Result<std::string> RenderChat(const nlohmann::json& messages, const ChatOptions& options);
Result<std::string> RenderChat(const std::vector<ChatMessage>& messages,
                               const ChatOptions& options);

// A rendered prompt and what a server needs to know about it.
struct RenderedChat {
  // The prompt (RenderChat's text), ending in reply_prefix.
  std::string text;
  // Characters of the leading system turn ("<bos><|turn>system\n...<turn|>\n"), which many
  // requests share (a prefix cache keeps the state there); 0 when there is no system turn.
  size_t shared_prefix_chars = 0;
  // What the reply is forced to begin with, already at the end of `text`:
  // "<|tool_call>call:" (ForcedToolCall::kAnyFunction), "<|tool_call>call:NAME{" (kFunction),
  // else empty. The output parser reads its tokens first (ChatParser::Prime).
  std::string reply_prefix;
};
Result<RenderedChat> RenderChatPrompt(const nlohmann::json& messages, const ChatOptions& options);
Result<RenderedChat> RenderChatPrompt(const std::vector<ChatMessage>& messages,
                                      const ChatOptions& options);

}  // namespace gemlet
