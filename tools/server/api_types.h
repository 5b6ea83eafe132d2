// The OpenAI request schemas the server accepts, as validated C++ structs
// (request_parser.h builds them from JSON).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace gemlet::server {

enum class Role { kSystem, kDeveloper, kUser, kAssistant, kTool };
const char* RoleName(Role r);

struct ToolCall {
  std::string id;         // "call_..."
  std::string name;       // function name
  std::string arguments;  // JSON text of the arguments object
};

// An image part of a message: its file's bytes (from a data: URL or base64), or an http(s)
// URL the server fetches only with --allow-image-urls (api_handlers: FetchImages).
struct ImageInput {
  std::vector<uint8_t> bytes;
  std::string url;     // set instead of bytes: an http(s) URL not fetched yet
  std::string part;    // the request field it came from, for errors ("messages[0].content[1]")
  size_t offset = 0;   // where it goes in the message's content (a byte offset)
  size_t index = 0;    // the part's index in the content array (orders parts at one offset)
};

// An audio part of a message (OpenAI's input_audio): its file's bytes.
struct AudioInput {
  std::vector<uint8_t> bytes;
  std::string part;    // the request field it came from ("messages[0].content[1].input_audio")
  size_t offset = 0;   // where it goes in the message's content (a byte offset)
  size_t index = 0;    // the part's index in the content array (orders parts at one offset)
};

struct ChatMessage {
  Role role = Role::kUser;
  std::string content;  // text parts joined; empty when null
  std::vector<ImageInput> images;  // image parts, in order (their offsets increase)
  std::vector<AudioInput> audios;  // audio parts, in order (their offsets increase)
  std::string name;     // optional participant / tool function name
  std::string reasoning;                // assistant: reasoning_content (extension)
  std::vector<ToolCall> tool_calls;     // assistant
  std::string tool_call_id;             // tool
};

struct ToolSpec {
  std::string name;
  std::string description;
  nlohmann::json parameters = nlohmann::json::object();  // JSON Schema object
};

enum class ToolChoice { kAuto, kNone, kRequired, kFunction };

// What the output must be: response_format (OpenAI) or a GBNF grammar (extension, as
// llama-server's "grammar" field). Enforced while sampling (grammar-constrained decoding).
struct OutputFormat {
  enum class Kind { kText, kJsonObject, kJsonSchema, kGrammar };
  Kind kind = Kind::kText;
  nlohmann::json schema;  // kJsonSchema: response_format.json_schema.schema
  std::string grammar;    // kGrammar: GBNF text
  std::string param;      // the request field it came from, for errors
};

// Sampling knobs shared by chat and text completions. Unset fields take the server defaults.
struct SamplingOptions {
  std::optional<double> temperature;  // [0, 2]; 0 = greedy
  std::optional<double> top_p;        // (0, 1]
  std::optional<int64_t> top_k;       // >= 0; 0 = off (extension)
  std::optional<double> min_p;        // [0, 1] (extension)
  double presence_penalty = 0;        // [-2, 2]
  double frequency_penalty = 0;       // [-2, 2]
  std::optional<uint64_t> seed;
  // logit_bias: token id → bias in [-100, 100] added to its logit (-100 bans the token).
  std::vector<std::pair<int32_t, float>> logit_bias;
  // ≥ 0: report each generated token's log-probability and this many alternatives
  // (chat: logprobs + top_logprobs ≤ 20; completions: logprobs N); -1: off.
  int32_t logprobs = -1;
};

// One generated token's log-probability and its most likely alternatives, as text (what a
// reply's logprobs report).
struct TokenLogprobText {
  std::string token;
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;
};

struct ChatRequest {
  std::string model;
  std::vector<ChatMessage> messages;
  std::vector<ToolSpec> tools;
  ToolChoice tool_choice = ToolChoice::kAuto;
  std::string tool_choice_name;  // kFunction
  bool parallel_tool_calls = true;  // several calls in one reply (a forced choice: up to 4)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  SamplingOptions sampling;
  std::optional<int64_t> max_tokens;  // max_completion_tokens or max_tokens
  std::vector<std::string> stop;
  OutputFormat format;
  bool enable_thinking = false;  // reasoning_effort / chat_template_kwargs.enable_thinking / think
  bool ignore_eos = false;       // extension (llama.cpp, vLLM): generate past end-of-turn tokens
  int64_t n = 1;  // choices, forked from one prefill
};

struct CompletionRequest {
  std::string model;
  std::string prompt;                  // text prompt, or
  std::vector<int32_t> prompt_tokens;  // a token-id prompt
  bool prompt_is_tokens = false;
  bool echo = false;
  bool stream = false;
  bool include_usage = false;
  SamplingOptions sampling;
  std::optional<int64_t> max_tokens;  // default 16 as in OpenAI
  std::vector<std::string> stop;
  bool ignore_eos = false;
  OutputFormat format;
  int64_t n = 1;
};

}  // namespace gemlet::server
