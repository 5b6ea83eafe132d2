// libFuzzer target: the server's request parser (tools/server/request_parser.h) on arbitrary
// request bodies, as /v1/chat/completions and /v1/completions receive them, and the Ollama
// and Anthropic translations (ollama_api.h, anthropic_api.h) of the same bodies. Parsing must not
// crash, and a request it accepts must hold what the limits allow: every bound of ParseLimits,
// every sampling option inside the range the OpenAI API gives it, and image parts that are
// either decoded bytes or an http(s) URL, named, in order within their message's text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "tools/server/anthropic_api.h"
#include "tools/server/ollama_api.h"
#include "tools/server/request_parser.h"

namespace {

void Require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "request_parser_fuzz: accepted a request with %s\n", what);
    std::abort();
  }
}

void CheckSampling(const gemlet::server::SamplingOptions& s) {
  Require(!s.temperature || (*s.temperature >= 0 && *s.temperature <= 2), "temperature outside [0, 2]");
  Require(!s.top_p || (*s.top_p >= 0 && *s.top_p <= 1), "top_p outside [0, 1]");
  Require(!s.top_k || *s.top_k >= 0, "a negative top_k");
  Require(!s.min_p || (*s.min_p >= 0 && *s.min_p <= 1), "min_p outside [0, 1]");
  Require(s.presence_penalty >= -2 && s.presence_penalty <= 2, "presence_penalty outside [-2, 2]");
  Require(s.frequency_penalty >= -2 && s.frequency_penalty <= 2, "frequency_penalty outside [-2, 2]");
  for (const auto& [id, bias] : s.logit_bias) {
    Require(id >= 0 && bias >= -100 && bias <= 100, "a logit_bias entry out of range");
  }
}

void CheckImages(const std::vector<gemlet::server::ChatMessage>& messages) {
  for (const auto& m : messages) {
    size_t at = 0;
    for (const auto& im : m.images) {
      Require(!im.part.empty(), "an image part without a name");
      Require(im.offset >= at && im.offset <= m.content.size(), "an image part outside its text or out of order");
      at = im.offset;
      Require(im.bytes.empty() != im.url.empty(), "an image part with both or neither bytes and URL");
      Require(im.url.empty() || im.url.rfind("http://", 0) == 0 || im.url.rfind("https://", 0) == 0,
              "an image URL that is not http(s)");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  gemlet::server::ParseLimits limits;
  limits.max_messages = 64;  // small limits, so that inputs can reach them
  limits.max_tools = 8;
  limits.max_stop = 4;
  limits.max_stop_bytes = 16;
  limits.max_prompt_tokens = 64;
  // The other APIs' bodies, translated to OpenAI's: a translation that succeeds must parse
  // within the same bounds (or be refused with a 4xx).
  if (auto j = gemlet::server::ParseRequestBody(body); j.ok()) {
    bool raw = false;
    for (auto t : {gemlet::server::OllamaChatToOpenAi(*j), gemlet::server::OllamaGenerateToOpenAi(*j, &raw),
                   gemlet::server::AnthropicToOpenAi(*j)}) {
      if (!t.ok()) {
        Require(t.error().status >= 400 && t.error().status < 500, "a translation error outside 4xx");
        continue;
      }
      auto r = gemlet::server::ParseChatRequest(*t, limits);
      if (r.ok()) {
        Require(r->messages.size() <= limits.max_messages, "more messages than the limit (translated)");
        Require(r->stop.size() <= limits.max_stop, "more stop strings than the limit (translated)");
        CheckSampling(r->sampling);
        CheckImages(r->messages);
      }
    }
  }
  auto chat = gemlet::server::ParseChatRequest(body, limits);
  if (chat.ok()) {
    Require(!chat->messages.empty(), "no messages");
    Require(chat->messages.size() <= limits.max_messages, "more messages than the limit");
    Require(chat->tools.size() <= limits.max_tools, "more tools than the limit");
    Require(chat->stop.size() <= limits.max_stop, "more stop strings than the limit");
    for (const auto& s : chat->stop) Require(!s.empty() && s.size() <= limits.max_stop_bytes, "a stop string too long");
    Require(!chat->max_tokens || *chat->max_tokens >= 0, "a negative max_tokens");
    Require(chat->tool_choice != gemlet::server::ToolChoice::kFunction || !chat->tool_choice_name.empty(),
            "a named tool choice without a name");
    CheckSampling(chat->sampling);
    CheckImages(chat->messages);
  } else {
    Require(chat.error().status >= 400 && chat.error().status < 600, "an error status outside 4xx/5xx");
  }
  auto completion = gemlet::server::ParseCompletionRequest(body, limits);
  if (completion.ok()) {
    Require(completion->prompt_tokens.size() <= limits.max_prompt_tokens, "more prompt tokens than the limit");
    Require(completion->prompt_is_tokens || completion->prompt_tokens.empty(), "tokens in a text prompt");
    Require(completion->stop.size() <= limits.max_stop, "more stop strings than the limit");
    Require(!completion->max_tokens || *completion->max_tokens >= 0, "a negative max_tokens");
    CheckSampling(completion->sampling);
  }
  return 0;
}
