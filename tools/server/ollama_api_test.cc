#include "tools/server/ollama_api.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <sstream>

#include "tools/server/testing/test_server.h"

namespace gemlet::server {
namespace ollama_api_test {

using testing::Bytes;
using testing::TestServer;

TEST(OllamaApiTest, ChatTranslatesToTheOpenAiRequest) {
  Json body = Json::parse(R"({
    "model": "m", "stream": false, "think": true, "keep_alive": "5m", "format": "json",
    "options": {"temperature": 0.5, "seed": 7, "num_predict": 12, "stop": ["x"], "num_ctx": 99},
    "messages": [
      {"role": "user", "content": "weather?"},
      {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get", "arguments": {"city": "Oslo"}}}]},
      {"role": "tool", "content": "sunny", "tool_name": "get"}],
    "tools": [{"type": "function", "function": {"name": "get", "parameters": {"type": "object"}}}]})");
  auto oa = OllamaChatToOpenAi(body);
  ASSERT_TRUE(oa.ok()) << oa.error().message;
  EXPECT_EQ((*oa)["stream"], false);
  EXPECT_EQ((*oa)["think"], true);
  EXPECT_EQ((*oa)["temperature"], 0.5);
  EXPECT_EQ((*oa)["seed"], 7);
  EXPECT_EQ((*oa)["max_tokens"], 12);
  EXPECT_EQ((*oa)["stop"], Json::array({"x"}));
  EXPECT_FALSE(oa->contains("num_ctx"));
  EXPECT_EQ((*oa)["response_format"]["type"], "json_object");
  const Json& call = (*oa)["messages"][1]["tool_calls"][0];
  EXPECT_EQ(call["function"]["arguments"], R"({"city":"Oslo"})");  // OpenAI's string form
  EXPECT_EQ((*oa)["messages"][2]["tool_call_id"], call["id"]);      // answered in order
  EXPECT_EQ((*oa)["messages"][2]["name"], "get");
  auto req = ParseChatRequest(*oa);
  ASSERT_TRUE(req.ok()) << req.error().message;
  EXPECT_EQ(req->messages.size(), 3u);
  EXPECT_TRUE(req->enable_thinking);
  // stream defaults to true; a schema is json_schema.
  auto b = OllamaChatToOpenAi(Json::parse(R"({"messages": [], "format": {"type": "object"}})"));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)["stream"], true);
  EXPECT_EQ((*b)["response_format"]["json_schema"]["schema"]["type"], "object");
  for (const char* bad : {R"({"messages": 5})", R"({"messages": [], "format": 3})",
                          R"({"messages": [], "options": []})",
                          R"({"messages": [{"role": "user", "content": "x", "images": "aGk="}]})",
                          R"({"messages": [{"role": "user", "content": "x", "images": [5]}]})"}) {
    EXPECT_FALSE(OllamaChatToOpenAi(Json::parse(bad)).ok()) << bad;
  }
}

TEST(OllamaApiTest, ImagesBecomeImagePartsNamedByTheirField) {
  auto oa = OllamaChatToOpenAi(Json::parse(
      R"({"messages": [{"role": "user", "content": "what is it?", "images": ["aGk=", "aGk="]}]})"));
  ASSERT_TRUE(oa.ok()) << oa.error().message;
  auto req = ParseChatRequest(*oa, {});
  ASSERT_TRUE(req.ok()) << req.error().message;
  ASSERT_EQ(req->messages.size(), 1u);
  EXPECT_EQ(req->messages[0].content, "what is it?");
  ASSERT_EQ(req->messages[0].images.size(), 2u);
  EXPECT_EQ(req->messages[0].images[1].part, "messages[0].images[1]");
  EXPECT_EQ(req->messages[0].images[1].offset, 0u);  // before the text
  EXPECT_EQ(req->messages[0].images[0].bytes, (std::vector<uint8_t>{'h', 'i'}));
  // Bad base64 is a 400 naming the Ollama field.
  oa = OllamaChatToOpenAi(Json::parse(R"({"messages": [{"role": "user", "content": "x", "images": ["a$$"]}]})"));
  ASSERT_TRUE(oa.ok());
  req = ParseChatRequest(*oa, {});
  ASSERT_FALSE(req.ok());
  EXPECT_NE(req.error().message.find("messages[0].images[0]"), std::string::npos) << req.error().message;
  // /api/generate: the top-level images go with the prompt; not with raw.
  bool raw = false;
  auto g = OllamaGenerateToOpenAi(Json::parse(R"({"prompt": "describe", "images": ["aGk="]})"), &raw);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ((*g)["messages"][0]["content"][0]["x_gemlet_part"], "images[0]");
  EXPECT_FALSE(OllamaGenerateToOpenAi(Json::parse(R"({"prompt": "d", "raw": true, "images": ["aGk="]})"), &raw).ok());
}

std::vector<Json> NdjsonLines(const std::string& body) {
  std::vector<Json> out;
  std::istringstream in(body);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(Json::parse(line));
  }
  return out;
}

TEST(OllamaApiTest, ChatWholeAndStreamed) {
  TestServer s;
  s.backend.SetScript(testing::ReplyScript(Bytes("hey")));
  httplib::Client c("127.0.0.1", s.port);
  auto r = c.Post("/api/chat", R"({"model":"fake-model","stream":false,"messages":[{"role":"user","content":"hi"}]})",
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  Json j = Json::parse(r->body);
  EXPECT_EQ(j["message"]["role"], "assistant");
  EXPECT_EQ(j["message"]["content"], "hey");
  EXPECT_EQ(j["done"], true);
  EXPECT_EQ(j["done_reason"], "stop");
  EXPECT_EQ(j["prompt_eval_count"], 20);
  EXPECT_EQ(j["eval_count"], 4);
  EXPECT_TRUE(j["created_at"].is_string());

  auto st = c.Post("/api/chat", R"({"model":"fake-model","messages":[{"role":"user","content":"hi"}]})",
                   "application/json");
  ASSERT_TRUE(st);
  ASSERT_EQ(st->status, 200);
  EXPECT_EQ(st->get_header_value("Content-Type"), "application/x-ndjson");
  auto lines = NdjsonLines(st->body);
  ASSERT_GE(lines.size(), 2u);
  std::string text;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["done"], false);
    text += lines[i]["message"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, "hey");
  EXPECT_EQ(lines.back()["done"], true);
  EXPECT_EQ(lines.back()["eval_count"], 4);

  // generate: a templated prompt; num_predict limits it.
  auto g = c.Post("/api/generate", R"({"model":"fake-model","prompt":"hi","stream":false,"options":{"num_predict":2}})",
                  "application/json");
  ASSERT_TRUE(g);
  Json gj = Json::parse(g->body);
  EXPECT_EQ(gj["response"], "he");
  EXPECT_EQ(gj["done_reason"], "length");
}

TEST(OllamaApiTest, ErrorsAndModelRoutes) {
  TestServer s;
  httplib::Client c("127.0.0.1", s.port);
  auto r = c.Post("/api/chat", R"({"messages":[{"role":"user","content":"x"}],"options":{"temperature":"hot"}})",
                  "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  Json e = Json::parse(r->body);
  ASSERT_TRUE(e["error"].is_string()) << r->body;  // Ollama's shape
  EXPECT_NE(e["error"].get<std::string>().find("options.temperature"), std::string::npos) << r->body;
  auto tags = c.Get("/api/tags");
  ASSERT_TRUE(tags);
  EXPECT_EQ(Json::parse(tags->body)["models"][0]["name"], "fake-model");
  auto show = c.Post("/api/show", R"({"model":"fake-model:latest"})", "application/json");
  ASSERT_TRUE(show);
  EXPECT_EQ(show->status, 200);
  EXPECT_TRUE(Json::parse(show->body)["capabilities"].is_array());
  auto missing = c.Post("/api/show", R"({"model":"other"})", "application/json");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  auto v = c.Get("/api/version");
  ASSERT_TRUE(v);
  EXPECT_TRUE(Json::parse(v->body)["version"].is_string());
  auto ps = c.Get("/api/ps");
  ASSERT_TRUE(ps);
  EXPECT_EQ(Json::parse(ps->body)["models"].size(), 1u);
}

}  // namespace ollama_api_test
}  // namespace gemlet::server
