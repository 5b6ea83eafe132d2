// Ollama's API (https://github.com/ollama/ollama/blob/main/docs/api.md) over the server's
// common requests: /api/chat and /api/generate (NDJSON streaming, the default, or one JSON
// object; `options`, `format` "json" or a JSON schema, `think`, `keep_alive` accepted and
// ignored: the model stays loaded), /api/tags, /api/show, /api/version and /api/ps. Requests
// are translated to ChatRequest / CompletionRequest (OllamaChatToOpenAi: through the OpenAI
// parser, so the checks are the same) and run on ApiHandlers' generation path; errors are
// Ollama's {"error": "..."}.
#pragma once

#include <string_view>

#include "tools/server/api_handlers.h"
#include "tools/server/json_util.h"

namespace gemlet::server {

// The OpenAI chat body an Ollama /api/chat body means (messages, tools, format, options,
// think, stream); a 400 names the Ollama field.
ApiOr<Json> OllamaChatToOpenAi(const Json& body);
// /api/generate: the chat body of a templated prompt (system + prompt as a user turn), or,
// with "raw": true, an OpenAI completions body.
ApiOr<Json> OllamaGenerateToOpenAi(const Json& body, bool* raw);

HttpReply OllamaChat(ApiHandlers& h, std::string_view body);
HttpReply OllamaGenerate(ApiHandlers& h, std::string_view body);
HttpReply OllamaShow(ApiHandlers& h, std::string_view body);
HttpReply OllamaTags(ApiHandlers& h);
HttpReply OllamaPs(ApiHandlers& h);
HttpReply OllamaVersion();

}  // namespace gemlet::server
