#include "tools/server/openai_format.h"

#include <chrono>
#include <cmath>
#include <random>

namespace gemlet::server {
namespace {

constexpr const char* kFingerprint = "gemlet-" GEMLET_VERSION;

Json FinishJson(const std::optional<std::string>& f) { return f ? Json(*f) : Json(); }

}  // namespace

Json UsageJson(const Usage& u) {
  return Json{{"prompt_tokens", u.prompt_tokens},
              {"completion_tokens", u.completion_tokens},
              {"total_tokens", u.prompt_tokens + u.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

std::string NewId(const std::string& prefix) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng(std::random_device{}() ^
                                   static_cast<uint64_t>(
                                       std::chrono::steady_clock::now().time_since_epoch().count()));
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
  return id;
}

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Json ToolCallDeltaJson(int index, const ToolCall& call) {
  return Json{{"index", index},
              {"id", call.id},
              {"type", "function"},
              {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

namespace {

Json BytesJson(const std::string& s) {
  Json b = Json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

// A logprob as JSON: −inf (a token the request made impossible) is not a JSON number.
Json LogprobJson(float lp) { return std::isfinite(lp) ? Json(lp) : Json(-9999.0); }

Json ChatMessageJson(const ChatResult& r) {
  Json message = {{"role", "assistant"},
                  {"content", r.content.empty() && !r.tool_calls.empty() ? Json() : Json(r.content)}};
  if (!r.reasoning.empty()) message["reasoning_content"] = r.reasoning;
  if (!r.tool_calls.empty()) {
    Json calls = Json::array();
    for (const auto& c : r.tool_calls) {
      calls.push_back({{"id", c.id},
                       {"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
    message["tool_calls"] = std::move(calls);
  }
  message["refusal"] = nullptr;
  return message;
}

}  // namespace

Json ChatLogprobsJson(const std::vector<TokenLogprobText>& tokens) {
  Json content = Json::array();
  for (const auto& t : tokens) {
    Json top = Json::array();
    for (const auto& [text, lp] : t.top) {
      top.push_back({{"token", text}, {"logprob", LogprobJson(lp)}, {"bytes", BytesJson(text)}});
    }
    content.push_back({{"token", t.token},
                       {"logprob", LogprobJson(t.logprob)},
                       {"bytes", BytesJson(t.token)},
                       {"top_logprobs", std::move(top)}});
  }
  return Json{{"content", std::move(content)}, {"refusal", nullptr}};
}

Json TextLogprobsJson(const std::vector<TokenLogprobText>& tokens, int64_t offset) {
  Json toks = Json::array(), lps = Json::array(), tops = Json::array(), offs = Json::array();
  for (const auto& t : tokens) {
    toks.push_back(t.token);
    lps.push_back(LogprobJson(t.logprob));
    Json top = Json::object();
    for (const auto& [text, lp] : t.top) {
      if (!top.contains(text)) top[text] = LogprobJson(lp);
    }
    tops.push_back(std::move(top));
    offs.push_back(offset);
    offset += static_cast<int64_t>(t.token.size());
  }
  return Json{{"tokens", std::move(toks)},
              {"token_logprobs", std::move(lps)},
              {"top_logprobs", std::move(tops)},
              {"text_offset", std::move(offs)}};
}

Json ChatCompletionJson(const ResponseMeta& meta, const ChatResult& r) {
  return ChatCompletionJson(meta, std::vector<ChatResult>{r}, r.usage);
}

Json ChatCompletionJson(const ResponseMeta& meta, const std::vector<ChatResult>& choices,
                        const Usage& usage) {
  Json list = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChatResult& r = choices[i];
    list.push_back({{"index", i},
                    {"message", ChatMessageJson(r)},
                    {"logprobs", r.logprobs ? ChatLogprobsJson(*r.logprobs) : Json()},
                    {"finish_reason", r.finish_reason}});
  }
  return Json{{"id", meta.id},
              {"object", "chat.completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"system_fingerprint", kFingerprint},
              {"choices", std::move(list)},
              {"usage", UsageJson(usage)}};
}

Json ChatChunkJson(const ResponseMeta& meta, const Json& delta,
                   const std::optional<std::string>& finish_reason, bool include_usage, int index,
                   const Json& logprobs) {
  Json j = {{"id", meta.id},
            {"object", "chat.completion.chunk"},
            {"created", meta.created},
            {"model", meta.model},
            {"system_fingerprint", kFingerprint},
            {"choices", Json::array({{{"index", index},
                                      {"delta", delta},
                                      {"logprobs", logprobs},
                                      {"finish_reason", FinishJson(finish_reason)}}})}};
  if (include_usage) j["usage"] = nullptr;
  return j;
}

Json ChatUsageChunkJson(const ResponseMeta& meta, const Usage& usage) {
  return Json{{"id", meta.id},
              {"object", "chat.completion.chunk"},
              {"created", meta.created},
              {"model", meta.model},
              {"system_fingerprint", kFingerprint},
              {"choices", Json::array()},
              {"usage", UsageJson(usage)}};
}

Json TextCompletionJson(const ResponseMeta& meta, const TextResult& r) {
  return TextCompletionJson(meta, std::vector<TextResult>{r}, r.usage);
}

Json TextCompletionJson(const ResponseMeta& meta, const std::vector<TextResult>& choices,
                        const Usage& usage) {
  Json list = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const TextResult& r = choices[i];
    list.push_back({{"text", r.text},
                    {"index", i},
                    {"logprobs", r.logprobs ? TextLogprobsJson(*r.logprobs, r.logprob_offset) : Json()},
                    {"finish_reason", r.finish_reason}});
  }
  return Json{{"id", meta.id},
              {"object", "text_completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"system_fingerprint", kFingerprint},
              {"choices", std::move(list)},
              {"usage", UsageJson(usage)}};
}

Json TextChunkJson(const ResponseMeta& meta, const std::string& text,
                   const std::optional<std::string>& finish_reason, bool include_usage, int index,
                   const Json& logprobs) {
  Json j = {{"id", meta.id},
            {"object", "text_completion"},
            {"created", meta.created},
            {"model", meta.model},
            {"system_fingerprint", kFingerprint},
            {"choices", Json::array({{{"text", text},
                                      {"index", index},
                                      {"logprobs", logprobs},
                                      {"finish_reason", FinishJson(finish_reason)}}})}};
  if (include_usage) j["usage"] = nullptr;
  return j;
}

Json TextUsageChunkJson(const ResponseMeta& meta, const Usage& usage) {
  return Json{{"id", meta.id},
              {"object", "text_completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"system_fingerprint", kFingerprint},
              {"choices", Json::array()},
              {"usage", UsageJson(usage)}};
}

Json ModelJson(const std::string& id, int64_t created) {
  return Json{{"id", id}, {"object", "model"}, {"created", created}, {"owned_by", "gemlet"}};
}

Json ModelListJson(const std::string& id, int64_t created) {
  return Json{{"object", "list"}, {"data", Json::array({ModelJson(id, created)})}};
}

std::string SseData(const Json& j) { return "data: " + Dump(j) + "\n\n"; }
std::string SseDone() { return "data: [DONE]\n\n"; }
std::string SseComment(const std::string& text) { return ": " + text + "\n\n"; }

}  // namespace gemlet::server
