// OpenAI response objects: chat.completion, chat.completion.chunk, text_completion, model
// lists, and their server-sent-event framing. Field order and nulls follow OpenAI's replies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/server/api_types.h"
#include "tools/server/json_util.h"

namespace gemlet::server {

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache
};
Json UsageJson(const Usage& u);

// Identity shared by every object of one response.
struct ResponseMeta {
  std::string id;       // "chatcmpl-…" / "cmpl-…"
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// A random id such as "chatcmpl-3xF…" (24 alphanumerics after the prefix).
std::string NewId(const std::string& prefix);
int64_t UnixNow();

struct ChatResult {
  std::string content;
  std::string reasoning;
  std::vector<ToolCall> tool_calls;
  std::string finish_reason = "stop";  // stop | length | tool_calls
  Usage usage;
  std::optional<std::vector<TokenLogprobText>> logprobs;  // when the request asked
};

// {"id","object":"chat.completion","created","model","system_fingerprint","choices":[...],"usage"}
Json ChatCompletionJson(const ResponseMeta& meta, const ChatResult& r);
// n choices (index = position), with the usage of all of them.
Json ChatCompletionJson(const ResponseMeta& meta, const std::vector<ChatResult>& choices,
                        const Usage& usage);

// One streaming chunk. `delta` is e.g. {"content": "Hel"}; finish_reason null until the last
// choice chunk. With include_usage every chunk carries "usage": null, as OpenAI does.
// `logprobs` is the choice's "logprobs" (null, or ChatLogprobsJson of the chunk's tokens).
Json ChatChunkJson(const ResponseMeta& meta, const Json& delta,
                   const std::optional<std::string>& finish_reason, bool include_usage,
                   int index = 0, const Json& logprobs = nullptr);

// Chat logprobs: {"content": [{"token","logprob","bytes","top_logprobs":[...]}], "refusal": null}.
Json ChatLogprobsJson(const std::vector<TokenLogprobText>& tokens);
// Completions logprobs (the legacy shape): {"tokens","token_logprobs","top_logprobs":[{tok:
// lp}],"text_offset"}, offsets counted in bytes from `offset`.
Json TextLogprobsJson(const std::vector<TokenLogprobText>& tokens, int64_t offset);
// The extra last chunk of a stream with include_usage: "choices": [] and the usage.
Json ChatUsageChunkJson(const ResponseMeta& meta, const Usage& usage);
// Delta for tool call `index` (sent whole, as one delta with id, name and arguments).
Json ToolCallDeltaJson(int index, const ToolCall& call);

struct TextResult {
  std::string text;
  std::string finish_reason = "stop";
  Usage usage;
  std::optional<std::vector<TokenLogprobText>> logprobs;
  int64_t logprob_offset = 0;  // bytes of echoed prompt before the first token
};
Json TextCompletionJson(const ResponseMeta& meta, const TextResult& r);
Json TextCompletionJson(const ResponseMeta& meta, const std::vector<TextResult>& choices,
                        const Usage& usage);
Json TextChunkJson(const ResponseMeta& meta, const std::string& text,
                   const std::optional<std::string>& finish_reason, bool include_usage,
                   int index = 0, const Json& logprobs = nullptr);
Json TextUsageChunkJson(const ResponseMeta& meta, const Usage& usage);

// GET /v1/models and GET /v1/models/{id}.
Json ModelJson(const std::string& id, int64_t created);
Json ModelListJson(const std::string& id, int64_t created);

// Server-sent events: "data: <json>\n\n", the terminating "data: [DONE]\n\n", and a comment
// line clients ignore (used as a keep-alive that also detects closed connections).
std::string SseData(const Json& j);
std::string SseDone();
std::string SseComment(const std::string& text);

}  // namespace gemlet::server
