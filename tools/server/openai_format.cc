#include "tools/server/openai_format.h"

#include <chrono>
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

Json ChatCompletionJson(const ResponseMeta& meta, const ChatResult& r) {
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
  return Json{{"id", meta.id},
              {"object", "chat.completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"system_fingerprint", kFingerprint},
              {"choices", Json::array({{{"index", 0},
                                        {"message", std::move(message)},
                                        {"logprobs", nullptr},
                                        {"finish_reason", r.finish_reason}}})},
              {"usage", UsageJson(r.usage)}};
}

Json ChatChunkJson(const ResponseMeta& meta, const Json& delta,
                   const std::optional<std::string>& finish_reason, bool include_usage) {
  Json j = {{"id", meta.id},
            {"object", "chat.completion.chunk"},
            {"created", meta.created},
            {"model", meta.model},
            {"system_fingerprint", kFingerprint},
            {"choices", Json::array({{{"index", 0},
                                      {"delta", delta},
                                      {"logprobs", nullptr},
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
  return Json{{"id", meta.id},
              {"object", "text_completion"},
              {"created", meta.created},
              {"model", meta.model},
              {"system_fingerprint", kFingerprint},
              {"choices", Json::array({{{"text", r.text},
                                        {"index", 0},
                                        {"logprobs", nullptr},
                                        {"finish_reason", r.finish_reason}}})},
              {"usage", UsageJson(r.usage)}};
}

Json TextChunkJson(const ResponseMeta& meta, const std::string& text,
                   const std::optional<std::string>& finish_reason, bool include_usage) {
  Json j = {{"id", meta.id},
            {"object", "text_completion"},
            {"created", meta.created},
            {"model", meta.model},
            {"system_fingerprint", kFingerprint},
            {"choices", Json::array({{{"text", text},
                                      {"index", 0},
                                      {"logprobs", nullptr},
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
