#include "tools/server/anthropic_api.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include "tools/server/ollama_api.h"
#include "tools/server/testing/test_server.h"

namespace gemlet::server {
namespace anthropic_api_test {

using testing::Bytes;
using testing::TestServer;

TEST(AnthropicApiTest, TranslatesToTheOpenAiRequest) {
  Json body = Json::parse(R"({
    "model": "m", "max_tokens": 50, "system": [{"type": "text", "text": "Be brief."}],
    "stop_sequences": ["END"], "temperature": 0.2, "top_k": 5,
    "thinking": {"type": "enabled", "budget_tokens": 1024},
    "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
    "tools": [{"name": "get", "description": "d", "input_schema": {"type": "object"}}],
    "messages": [
      {"role": "user", "content": "weather?"},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": ""},
                                        {"type": "tool_use", "id": "toolu_1", "name": "get", "input": {"city": "Oslo"}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "sunny"}]}]}]})");
  auto oa = AnthropicToOpenAi(body);
  ASSERT_TRUE(oa.ok()) << oa.error().message;
  const Json& m = (*oa)["messages"];
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0]["role"], "system");
  EXPECT_EQ(m[0]["content"], "Be brief.");
  EXPECT_EQ(m[2]["reasoning_content"], "hmm");
  EXPECT_EQ(m[2]["tool_calls"][0]["id"], "toolu_1");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["arguments"], R"({"city":"Oslo"})");
  EXPECT_EQ(m[3]["role"], "tool");
  EXPECT_EQ(m[3]["tool_call_id"], "toolu_1");
  EXPECT_EQ(m[3]["name"], "get");
  EXPECT_EQ(m[3]["content"], "sunny");
  EXPECT_EQ((*oa)["tool_choice"], "required");
  EXPECT_EQ((*oa)["parallel_tool_calls"], false);
  EXPECT_EQ((*oa)["tools"][0]["function"]["parameters"]["type"], "object");
  EXPECT_EQ((*oa)["stop"], Json::array({"END"}));
  EXPECT_EQ((*oa)["think"], true);
  auto req = ParseChatRequest(*oa);
  ASSERT_TRUE(req.ok()) << req.error().message;
  EXPECT_EQ(req->tool_choice, ToolChoice::kRequired);
  EXPECT_EQ(*req->max_tokens, 50);
  for (const char* bad : {R"({"messages": [{"role": "user", "content": "x"}]})",  // no max_tokens
                          R"({"max_tokens": 5, "messages": []})",
                          R"({"max_tokens": 5, "messages": [{"role": "system", "content": "x"}]})",
                          R"({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image"}]}]})",
                          R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "some"}})"}) {
    EXPECT_FALSE(AnthropicToOpenAi(Json::parse(bad)).ok()) << bad;
  }
}

// "event: NAME\ndata: JSON" pairs of an SSE body.
std::vector<std::pair<std::string, Json>> Events(const std::string& body) {
  std::vector<std::pair<std::string, Json>> out;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    const std::string ev = body.substr(pos, end - pos);
    pos = end + 2;
    const size_t nl = ev.find('\n');
    if (ev.rfind("event: ", 0) != 0 || nl == std::string::npos) continue;
    out.emplace_back(ev.substr(7, nl - 7), Json::parse(ev.substr(nl + 7)));
  }
  return out;
}

TEST(AnthropicApiTest, MessagesWholeStreamedAndStopped) {
  TestServer s;
  s.backend.SetScript(testing::ReplyScript(Bytes("hey there")));
  httplib::Client c("127.0.0.1", s.port);
  const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";
  auto r = c.Post("/v1/messages", "{\"max_tokens\":50," + msgs + "}", "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  Json j = Json::parse(r->body);
  EXPECT_EQ(j["type"], "message");
  EXPECT_EQ(j["role"], "assistant");
  EXPECT_EQ(j["content"][0]["type"], "text");
  EXPECT_EQ(j["content"][0]["text"], "hey there");
  EXPECT_EQ(j["stop_reason"], "end_turn");
  EXPECT_TRUE(j["stop_sequence"].is_null());
  EXPECT_EQ(j["usage"]["input_tokens"], 20);
  EXPECT_EQ(j["usage"]["output_tokens"], 10);

  auto stop = c.Post("/v1/messages", "{\"max_tokens\":50,\"stop_sequences\":[\"zz\",\"y t\"]," + msgs + "}",
                     "application/json");
  ASSERT_TRUE(stop);
  Json sj = Json::parse(stop->body);
  EXPECT_EQ(sj["content"][0]["text"], "he");
  EXPECT_EQ(sj["stop_reason"], "stop_sequence");
  EXPECT_EQ(sj["stop_sequence"], "y t");
  auto len = c.Post("/v1/messages", "{\"max_tokens\":2," + msgs + "}", "application/json");
  ASSERT_TRUE(len);
  EXPECT_EQ(Json::parse(len->body)["stop_reason"], "max_tokens");

  auto st = c.Post("/v1/messages", "{\"max_tokens\":50,\"stream\":true," + msgs + "}", "application/json");
  ASSERT_TRUE(st);
  auto ev = Events(st->body);
  ASSERT_GE(ev.size(), 6u) << st->body;
  EXPECT_EQ(ev.front().first, "message_start");
  EXPECT_EQ(ev.front().second["message"]["role"], "assistant");
  std::string text;
  int starts = 0, stops = 0;
  for (const auto& [name, data] : ev) {
    EXPECT_EQ(data["type"], name);
    if (name == "content_block_start") ++starts;
    if (name == "content_block_stop") ++stops;
    if (name == "content_block_delta") text += data["delta"]["text"].get<std::string>();
  }
  EXPECT_EQ(text, "hey there");
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(stops, 1);
  EXPECT_EQ(ev[ev.size() - 2].first, "message_delta");
  EXPECT_EQ(ev[ev.size() - 2].second["delta"]["stop_reason"], "end_turn");
  EXPECT_EQ(ev.back().first, "message_stop");

  auto bad = c.Post("/v1/messages", "{" + msgs + "}", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  Json bj = Json::parse(bad->body);
  EXPECT_EQ(bj["type"], "error");
  EXPECT_EQ(bj["error"]["type"], "invalid_request_error");
}

}  // namespace anthropic_api_test
}  // namespace gemlet::server

namespace gemlet::server {
namespace anthropic_api_test {

// Fields of the wrong type are 400s, never exceptions (nlohmann's value() throws on them).
TEST(AnthropicApiTest, WrongTypesAreRefusedNotThrown) {
  for (const char* body : {R"({"max_tokens": 5, "messages": [{"role": 5, "content": "x"}]})",
                           R"({"max_tokens": 5, "system": [{"type": 1}], "messages": [{"role": "user", "content": "x"}]})",
                           R"({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "is_error": "yes"}]}]})",
                           R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "auto", "disable_parallel_tool_use": 3}})"}) {
    EXPECT_NO_THROW((void)AnthropicToOpenAi(Json::parse(body))) << body;
  }
  EXPECT_FALSE(AnthropicToOpenAi(Json::parse(R"({"max_tokens": 5, "messages": [{"role": 5, "content": "x"}]})")).ok());
  EXPECT_NO_THROW((void)OllamaChatToOpenAi(Json::parse(
      R"({"messages": [{"role": 7, "content": "x", "tool_calls": [{"function": {"name": 3}}]}]})")));
}

TEST(AnthropicApiTest, ImageBlocksBecomeImagePartsInPlace) {
  auto oa = AnthropicToOpenAi(Json::parse(R"({"max_tokens": 5, "messages": [{"role": "user", "content": [
      {"type": "text", "text": "Look: "},
      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGk="}},
      {"type": "text", "text": "what?"},
      {"type": "image", "source": {"type": "url", "url": "https://example.com/x.png"}}]}]})"));
  ASSERT_TRUE(oa.ok()) << oa.error().message;
  auto req = ParseChatRequest(*oa, {});
  ASSERT_TRUE(req.ok()) << req.error().message;
  const ChatMessage& m = req->messages[0];
  EXPECT_EQ(m.content, "Look: what?");
  ASSERT_EQ(m.images.size(), 2u);
  EXPECT_EQ(m.images[0].offset, 6u);
  EXPECT_EQ(m.images[0].part, "messages[0].content[1]");
  EXPECT_EQ(m.images[0].bytes, (std::vector<uint8_t>{'h', 'i'}));
  EXPECT_EQ(m.images[1].url, "https://example.com/x.png");
  EXPECT_EQ(m.images[1].part, "messages[0].content[3]");
  for (const char* bad : {
           R"({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "text/plain", "data": "aGk="}}]}]})",
           R"({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "file"}}]}]})",
           R"({"max_tokens": 5, "messages": [{"role": "assistant", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGk="}}]}]})"}) {
    EXPECT_FALSE(AnthropicToOpenAi(Json::parse(bad)).ok()) << bad;
  }
}

}  // namespace anthropic_api_test
}  // namespace gemlet::server

namespace gemlet::server {
namespace anthropic_api_test {

// A reply that thinks, writes and calls a tool: a thinking block (with its empty signature),
// a text block and a tool_use block, in that order, whole and streamed (thinking_delta,
// text_delta, input_json_delta); stop_reason "tool_use".
TEST(AnthropicApiTest, ThinkingTextAndToolUseBlocksWholeAndStreamed) {
  TestServer s;
  std::vector<int32_t> reply = {testing::kThinkStart};
  for (int32_t t : Bytes("thought\nhmm")) reply.push_back(t);
  reply.push_back(testing::kThinkEnd);
  for (int32_t t : Bytes("Let me look.")) reply.push_back(t);
  reply.push_back(testing::kToolStart);
  for (int32_t t : Bytes("call:get_weather{\"city\":\"Paris\"}")) reply.push_back(t);
  reply.push_back(testing::kToolEnd);
  s.backend.SetScript(testing::ReplyScript(reply));
  httplib::Client c("127.0.0.1", s.port);
  const std::string body =
      R"({"max_tokens":200,"thinking":{"type":"enabled","budget_tokens":1024},)"
      R"("tools":[{"name":"get_weather","input_schema":{"type":"object"}}],)"
      R"("messages":[{"role":"user","content":"weather?"}])";
  auto r = c.Post("/v1/messages", body + "}", "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  Json j = Json::parse(r->body);
  ASSERT_EQ(j["content"].size(), 3u) << r->body;
  EXPECT_EQ(j["content"][0]["type"], "thinking");
  EXPECT_EQ(j["content"][0]["thinking"], "hmm");
  EXPECT_EQ(j["content"][0]["signature"], "");
  EXPECT_EQ(j["content"][1]["type"], "text");
  EXPECT_EQ(j["content"][1]["text"], "Let me look.");
  EXPECT_EQ(j["content"][2]["type"], "tool_use");
  EXPECT_EQ(j["content"][2]["name"], "get_weather");
  EXPECT_EQ(j["content"][2]["input"]["city"], "Paris");
  EXPECT_EQ(j["content"][2]["id"].get<std::string>().rfind("toolu_", 0), 0u);
  EXPECT_EQ(j["stop_reason"], "tool_use");

  auto st = c.Post("/v1/messages", body + R"(,"stream":true})", "application/json");
  ASSERT_TRUE(st);
  ASSERT_EQ(st->status, 200) << st->body;
  std::vector<std::string> block_types;
  std::string thinking, text, input;
  for (const auto& [name, data] : Events(st->body)) {
    if (name == "content_block_start") {
      EXPECT_EQ(data["index"], block_types.size());
      block_types.push_back(data["content_block"]["type"]);
    }
    if (name != "content_block_delta") continue;
    const Json& d = data["delta"];
    if (d["type"] == "thinking_delta") thinking += d["thinking"].get<std::string>();
    if (d["type"] == "text_delta") text += d["text"].get<std::string>();
    if (d["type"] == "input_json_delta") input += d["partial_json"].get<std::string>();
  }
  EXPECT_EQ(block_types, (std::vector<std::string>{"thinking", "text", "tool_use"})) << st->body;
  EXPECT_EQ(thinking, "hmm");
  EXPECT_EQ(text, "Let me look.");
  EXPECT_EQ(Json::parse(input)["city"], "Paris");
  EXPECT_NE(st->body.find(R"("stop_reason":"tool_use")"), std::string::npos) << st->body;
}

// With --api-key, Anthropic's clients send the key as x-api-key (not Authorization).
TEST(AnthropicApiTest, XApiKeyIsTheKey) {
  HttpOptions h;
  h.api_key = "sekret";
  TestServer s({}, h);
  httplib::Client c("127.0.0.1", s.port);
  const std::string body = R"({"max_tokens":4,"messages":[{"role":"user","content":"hi"}]})";
  auto none = c.Post("/v1/messages", body, "application/json");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  auto wrong = c.Post("/v1/messages", {{"x-api-key", "nope"}}, body, "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto ok = c.Post("/v1/messages", {{"x-api-key", "sekret"}}, body, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(Json::parse(ok->body)["type"], "message");
}

}  // namespace anthropic_api_test
}  // namespace gemlet::server
