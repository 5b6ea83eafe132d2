// Strict parsing of OpenAI request bodies into api_types.h structs. Known fields are
// type- and range-checked (a wrong type is a 400 naming the field in `param`); unknown fields
// are ignored, as OpenAI-compatible servers do, so newer clients keep working.
#pragma once

#include <string_view>

#include "tools/server/api_error.h"
#include "tools/server/api_types.h"
#include "tools/server/json_util.h"

namespace gemlet::server {

struct ParseLimits {
  size_t max_messages = 4096;
  size_t max_tools = 128;
  size_t max_stop = 16;           // OpenAI allows 4; we allow more
  size_t max_stop_bytes = 256;    // per stop string
  size_t max_prompt_tokens = 1 << 20;  // token-id prompts of /v1/completions
};

ApiOr<ChatRequest> ParseChatRequest(const Json& body, const ParseLimits& limits = {});
ApiOr<CompletionRequest> ParseCompletionRequest(const Json& body, const ParseLimits& limits = {});

// Convenience: body text → request (ParseRequestBody + Parse*Request).
ApiOr<ChatRequest> ParseChatRequest(std::string_view body, const ParseLimits& limits = {});
ApiOr<CompletionRequest> ParseCompletionRequest(std::string_view body,
                                                const ParseLimits& limits = {});

}  // namespace gemlet::server
