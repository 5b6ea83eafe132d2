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
};

// {"id","object":"chat.completion","created","model","system_fingerprint","choices":[...],"usage"}
Json ChatCompletionJson(const ResponseMeta& meta, const ChatResult& r);

// One streaming chunk. `delta` is e.g. {"content": "Hel"}; finish_reason null until the last
// choice chunk. With include_usage every chunk carries "usage": null, as OpenAI does.
Json ChatChunkJson(const ResponseMeta& meta, const Json& delta,
                   const std::optional<std::string>& finish_reason, bool include_usage);
// The extra last chunk of a stream with include_usage: "choices": [] and the usage.
Json ChatUsageChunkJson(const ResponseMeta& meta, const Usage& usage);
// Delta for tool call `index` (sent whole, as one delta with id, name and arguments).
Json ToolCallDeltaJson(int index, const ToolCall& call);

struct TextResult {
  std::string text;
  std::string finish_reason = "stop";
  Usage usage;
};
Json TextCompletionJson(const ResponseMeta& meta, const TextResult& r);
Json TextChunkJson(const ResponseMeta& meta, const std::string& text,
                   const std::optional<std::string>& finish_reason, bool include_usage);
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
