// Anthropic's Messages API (POST /v1/messages, https://docs.anthropic.com/en/api/messages)
// over the server's common ChatRequest: system, multi-turn, max_tokens (required),
// stop_sequences, temperature / top_p / top_k, tools with tool_use / tool_result blocks,
// tool_choice, thinking blocks, streaming events (message_start, content_block_start /
// _delta / _stop, message_delta, message_stop, ping). x-api-key is checked by the HTTP layer
// like a Bearer key. Errors are Anthropic's {"type": "error", "error": {...}}.
#pragma once

#include <string_view>

#include "tools/server/api_handlers.h"
#include "tools/server/json_util.h"

namespace gemlet::server {

// The OpenAI chat body a Messages body means; a 400 names the Anthropic field.
ApiOr<Json> AnthropicToOpenAi(const Json& body);

HttpReply AnthropicMessages(ApiHandlers& h, std::string_view body);

}  // namespace gemlet::server
