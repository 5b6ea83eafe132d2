#include "tools/server/request_parser.h"

#include <gtest/gtest.h>

namespace gemlet::server {
namespace request_parser_test {

ApiError ChatError(const std::string& body) {
  auto r = ParseChatRequest(std::string_view(body));
  EXPECT_FALSE(r.ok()) << body;
  return r.ok() ? ApiError{} : r.error();
}

TEST(RequestParserTest, ParsesAFullChatRequest) {
  const std::string body = R"({
    "model": "gemma-4-e2b", "stream": true, "stream_options": {"include_usage": true},
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Weather "}, {"type": "text", "text": "in Paris?"}]},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"}
    ],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather now",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
    "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 42,
    "presence_penalty": 0.5, "frequency_penalty": -0.5,
    "max_completion_tokens": 100, "max_tokens": 7, "stop": ["\n\n", "END"],
    "reasoning_effort": "high", "some_future_field": {"ignored": true}
  })";
  auto r = ParseChatRequest(std::string_view(body));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->model, "gemma-4-e2b");
  ASSERT_EQ(r->messages.size(), 4u);
  EXPECT_EQ(r->messages[0].role, Role::kSystem);
  EXPECT_EQ(r->messages[1].content, "Weather in Paris?");
  ASSERT_EQ(r->messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(r->messages[2].tool_calls[0].name, "get_weather");
  EXPECT_EQ(r->messages[2].tool_calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(r->messages[3].role, Role::kTool);
  EXPECT_EQ(r->messages[3].tool_call_id, "call_1");
  ASSERT_EQ(r->tools.size(), 1u);
  EXPECT_EQ(r->tools[0].parameters["properties"]["city"]["type"], "string");
  EXPECT_EQ(r->tool_choice, ToolChoice::kFunction);
  EXPECT_EQ(r->tool_choice_name, "get_weather");
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_DOUBLE_EQ(*r->sampling.temperature, 0.5);
  EXPECT_EQ(*r->sampling.top_k, 40);
  EXPECT_EQ(*r->sampling.seed, 42u);
  EXPECT_DOUBLE_EQ(r->sampling.frequency_penalty, -0.5);
  EXPECT_EQ(*r->max_tokens, 100);  // max_completion_tokens wins
  EXPECT_EQ(r->stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_TRUE(r->enable_thinking);
}

TEST(RequestParserTest, IgnoreEosExtension) {
  auto r = ParseChatRequest(std::string_view(R"({"messages":[{"role":"user","content":"x"}],"ignore_eos":true})"));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ignore_eos);
  EXPECT_EQ(ChatError(R"({"messages":[{"role":"user","content":"x"}],"ignore_eos":1})").param, "ignore_eos");
  auto c = ParseCompletionRequest(std::string_view(R"({"prompt":"x","ignore_eos":true})"));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->ignore_eos);
}

TEST(RequestParserTest, LogitBias) {
  auto r = ParseChatRequest(std::string_view(
      R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"100":-100,"7":2.5}})"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->sampling.logit_bias.size(), 2u);
  EXPECT_EQ(r->sampling.logit_bias[0], (std::pair<int32_t, float>{100, -100.f}));
  EXPECT_EQ(r->sampling.logit_bias[1], (std::pair<int32_t, float>{7, 2.5f}));
  for (const std::string bad : {R"({"x":1})", R"({"-1":1})", R"({"5":101})", R"({"5":"a"})", R"([1])",
                                R"({" 5":1})", R"({"99999999999":1})"}) {
    EXPECT_EQ(ChatError(R"({"messages":[{"role":"user","content":"x"}],"logit_bias":)" + bad + "}").status,
              400)
        << bad;
  }
}

TEST(RequestParserTest, ThinkingSwitches) {
  auto on = [](const std::string& extra) {
    auto r = ParseChatRequest(std::string_view(
        R"({"messages":[{"role":"user","content":"x"}])" + extra + "}"));
    EXPECT_TRUE(r.ok());
    return r.ok() && r->enable_thinking;
  };
  EXPECT_FALSE(on(""));
  EXPECT_TRUE(on(R"(,"chat_template_kwargs":{"enable_thinking":true})"));
  EXPECT_TRUE(on(R"(,"think":true)"));
  EXPECT_FALSE(on(R"(,"reasoning_effort":"none")"));
  EXPECT_EQ(ChatError(R"({"messages":[{"role":"user","content":"x"}],"reasoning_effort":"max"})").param,
            "reasoning_effort");
}

TEST(RequestParserTest, WrongTypesNameTheField) {
  struct Case {
    std::string body, param;
  } cases[] = {
      {R"({"messages": "hi"})", "messages"},
      {R"({"messages": []})", "messages"},
      {R"({"model": 3, "messages": [{"role":"user","content":"x"}]})", "model"},
      {R"({"messages": [{"role":"user","content":5}]})", "messages[0].content"},
      {R"({"messages": [{"role":"user"}]})", "messages[0].content"},
      {R"({"messages": [{"content":"x"}]})", "messages[0].role"},
      {R"({"messages": [{"role":"user","content":[{"type":"input_audio"}]}]})",
       "messages[0].content[0].input_audio"},
      {R"({"messages": [{"role":"user","content":[{"type":"input_audio","input_audio":"UklGRg=="}]}]})",
       "messages[0].content[0].input_audio"},
      {R"({"messages": [{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"aac"}}]}]})",
       "messages[0].content[0].input_audio"},
      {R"({"messages": [{"role":"user","content":[{"type":"input_audio","input_audio":{"data":5}}]}]})",
       "messages[0].content[0].input_audio.data"},
      {R"({"messages": [{"role":"user","content":[{"type":"input_file"}]}]})",
       "messages[0].content[0].type"},
      {R"({"messages": [{"role":"user","content":[{"type":"image_url"}]}]})",
       "messages[0].content[0].image_url"},
      {R"({"messages": [{"role":"user","content":[{"type":"image_url","image_url":{"url":5}}]}]})",
       "messages[0].content[0].image_url.url"},
      {R"({"messages": [{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:text/plain;base64,aGk="}}]}]})",
       "messages[0].content[1].image_url.url"},
      {R"({"messages": [{"role":"user","content":"x"}], "temperature": "hot"})", "temperature"},
      {R"({"messages": [{"role":"user","content":"x"}], "temperature": 3})", "temperature"},
      {R"({"messages": [{"role":"user","content":"x"}], "top_p": -1})", "top_p"},
      {R"({"messages": [{"role":"user","content":"x"}], "max_tokens": 0})", "max_tokens"},
      {R"({"messages": [{"role":"user","content":"x"}], "max_tokens": 1.5})", "max_tokens"},
      {R"({"messages": [{"role":"user","content":"x"}], "stream": "yes"})", "stream"},
      {R"({"messages": [{"role":"user","content":"x"}], "stop": 5})", "stop"},
      {R"({"messages": [{"role":"user","content":"x"}], "stop": ["a", 1]})", "stop[1]"},
      {R"({"messages": [{"role":"user","content":"x"}], "seed": "1"})", "seed"},
      {R"({"messages": [{"role":"user","content":"x"}], "n": 17})", "n"},
      {R"({"messages": [{"role":"user","content":"x"}], "n": 0})", "n"},
      {R"({"messages": [{"role":"user","content":"x"}], "logprobs": true, "top_logprobs": 21})",
       "top_logprobs"},
      {R"({"messages": [{"role":"user","content":"x"}], "top_logprobs": 2})", "top_logprobs"},
      {R"({"messages": [{"role":"user","content":"x"}], "tools": [{"type":"function"}]})",
       "tools[0].function"},
      {R"({"messages": [{"role":"user","content":"x"}], "tools": [{"type":"function","function":{"name":"a b"}}]})",
       "tools[0].function.name"},
      {R"({"messages": [{"role":"user","content":"x"}], "tool_choice": "maybe"})", "tool_choice"},
      {R"({"messages": [{"role":"user","content":"x"}], "stream_options": {"include_usage": true}})",
       "stream_options"},
      {R"({"messages": [{"role":"user","content":"x"}], "response_format": {"type":"xml"}})",
       "response_format.type"},
      {R"({"messages": [{"role":"user","content":"x"}], "response_format": {"type":"json_schema"}})",
       "response_format.json_schema"},
      {R"({"messages": [{"role":"user","content":"x"}], "response_format": {"type":"json_schema","json_schema":{"name":"n","schema":3}}})",
       "response_format.json_schema.schema"},
      {R"({"messages": [{"role":"user","content":"x"}], "response_format": {"type":"json_object"}, "grammar": "root ::= \"a\""})",
       "grammar"},
      {R"({"messages": [{"role":"user","content":"x"}], "grammar": 5})", "grammar"},
  };
  for (const auto& c : cases) {
    ApiError e = ChatError(c.body);
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.type, "invalid_request_error");
    EXPECT_EQ(e.param, c.param) << c.body << " → " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
}

TEST(RequestParserTest, OutputFormats) {
  auto j = ParseChatRequest(std::string_view(
      R"({"messages": [{"role":"user","content":"x"}], "response_format": {"type": "json_schema",
          "json_schema": {"name": "n", "strict": true, "schema": {"type": "object"}}}})"));
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->format.kind, OutputFormat::Kind::kJsonSchema);
  EXPECT_EQ(j->format.schema, nlohmann::json({{"type", "object"}}));
  EXPECT_EQ(j->format.param, "response_format.json_schema.schema");
  auto o = ParseChatRequest(std::string_view(
      R"({"messages": [{"role":"user","content":"x"}], "response_format": {"type": "json_object"}})"));
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->format.kind, OutputFormat::Kind::kJsonObject);
  auto g = ParseCompletionRequest(std::string_view(R"({"prompt": "x", "grammar": "root ::= \"a\""})"));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->format.kind, OutputFormat::Kind::kGrammar);
  EXPECT_EQ(g->format.grammar, "root ::= \"a\"");
  auto t = ParseChatRequest(std::string_view(
      R"({"messages": [{"role":"user","content":"x"}], "response_format": {"type": "text"}})"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->format.kind, OutputFormat::Kind::kText);
}

TEST(RequestParserTest, UnknownRoleIsRejected) {
  ApiError e = ChatError(R"({"messages": [{"role": "wizard", "content": "x"}]})");
  EXPECT_EQ(e.param, "messages[0].role");
  EXPECT_NE(e.message.find("wizard"), std::string::npos);
}

TEST(RequestParserTest, MalformedBodies) {
  for (const std::string body : {"", "{", "[1,2]", "null", "\"x\"", "{\"messages\": [}", "{} {}",
                                 "{\"a\":1,}", "\xff\xfe{}",
                                 // a number too large: nlohmann throws out_of_range (fuzzer find)
                                 "{\"a\": 6666e6666666666666666666666666665}"}) {
    ApiError e = ChatError(body);
    EXPECT_EQ(e.status, 400) << body;
  }
}

TEST(RequestParserTest, InvalidUtf8AndBadEscapesAreRejected) {
  // Raw invalid bytes inside a string, an overlong encoding, and a lone surrogate escape.
  for (const std::string s : {"\xc3\x28", "\xc0\xaf", "\xed\xa0\x80", "\\ud800"}) {
    ApiError e = ChatError(R"({"messages": [{"role":"user","content":")" + s + R"("}]})");
    EXPECT_EQ(e.status, 400);
  }
}

TEST(RequestParserTest, DeepNestingIsRejectedCheaply) {
  std::string deep(100000, '[');
  ApiError e = ChatError(deep);
  EXPECT_NE(e.message.find("deeper"), std::string::npos);
  // Brackets inside strings do not count.
  std::string ok = R"({"messages":[{"role":"user","content":")" + std::string(1000, '[') + R"("}]})";
  EXPECT_TRUE(ParseChatRequest(std::string_view(ok)).ok());
}

TEST(RequestParserTest, CompletionPrompts) {
  auto a = ParseCompletionRequest(std::string_view(R"({"prompt": "Once upon"})"));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->prompt, "Once upon");
  EXPECT_EQ(*a->max_tokens, 16);  // OpenAI's default
  auto b = ParseCompletionRequest(std::string_view(R"({"prompt": [2, 105, 9], "max_tokens": 3})"));
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->prompt_is_tokens);
  EXPECT_EQ(b->prompt_tokens, (std::vector<int32_t>{2, 105, 9}));
  auto c = ParseCompletionRequest(std::string_view(R"({"prompt": ["one"], "echo": true})"));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->echo);
  for (const std::string body : {R"({})", R"({"prompt": 5})", R"({"prompt": [-1]})",
                                 R"({"prompt": ["a", "b"]})", R"({"prompt": "x", "best_of": 2})",
                                 R"({"prompt": "x", "logprobs": 21})",
                                 R"({"prompt": "x", "n": 17})",
                                 R"({"prompt": "x", "suffix": "y"})"}) {
    auto r = ParseCompletionRequest(std::string_view(body));
    EXPECT_FALSE(r.ok()) << body;
    if (!r.ok()) {
      EXPECT_EQ(r.error().status, 400);
    }
  }
}

TEST(RequestParserTest, ChoicesAndLogprobs) {
  auto a = ParseChatRequest(std::string_view(
      R"({"messages": [{"role":"user","content":"x"}], "n": 3, "logprobs": true, "top_logprobs": 5})"));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->n, 3);
  EXPECT_EQ(a->sampling.logprobs, 5);
  auto b = ParseChatRequest(std::string_view(R"({"messages": [{"role":"user","content":"x"}], "logprobs": true})"));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->sampling.logprobs, 0);
  EXPECT_EQ(b->n, 1);
  auto c = ParseChatRequest(std::string_view(R"({"messages": [{"role":"user","content":"x"}], "logprobs": false})"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->sampling.logprobs, -1);
  auto d = ParseCompletionRequest(std::string_view(R"({"prompt": "x", "logprobs": 3, "n": 2})"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->sampling.logprobs, 3);
  EXPECT_EQ(d->n, 2);
}

TEST(RequestParserTest, ErrorJsonHasOpenAiShape) {
  ApiError e = BadRequest("bad thing", "messages", "invalid_value");
  auto j = nlohmann::json::parse(e.ToJson());
  EXPECT_EQ(j["error"]["message"], "bad thing");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "messages");
  EXPECT_EQ(j["error"]["code"], "invalid_value");
  auto k = nlohmann::json::parse(InternalError("x").ToJson());
  EXPECT_TRUE(k["error"]["param"].is_null());
  EXPECT_TRUE(k["error"]["code"].is_null());
  EXPECT_EQ(Overloaded("busy", 2).status, 503);
}

TEST(Utf8Test, CompletePrefix) {
  EXPECT_EQ(CompleteUtf8Prefix("abc"), 3u);
  EXPECT_EQ(CompleteUtf8Prefix("ab\xc3"), 2u);
  EXPECT_EQ(CompleteUtf8Prefix("ab\xc3\xa9"), 4u);
  EXPECT_EQ(CompleteUtf8Prefix("\xe2\x82"), 0u);
  EXPECT_EQ(CompleteUtf8Prefix("\xf0\x9f\x98\x80"), 4u);
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));
}

TEST(RequestParserTest, ImagePartsTakeTheirPlaceInTheText) {
  // "hi" is aGk=; the parts are text, image, text, image (by URL, not fetched here).
  auto r = ParseChatRequest(std::string_view(R"({"messages": [{"role": "user", "content": [
      {"type": "text", "text": "Compare"},
      {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
      {"type": "text", "text": "and"},
      {"type": "image_url", "image_url": "https://example.com/cat.jpg"}]}]})"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const ChatMessage& m = r->messages[0];
  EXPECT_EQ(m.content, "Compareand");
  ASSERT_EQ(m.images.size(), 2u);
  EXPECT_EQ(m.images[0].bytes, (std::vector<uint8_t>{'h', 'i'}));
  EXPECT_EQ(m.images[0].offset, 7u);
  EXPECT_EQ(m.images[0].part, "messages[0].content[1]");
  EXPECT_TRUE(m.images[1].bytes.empty());
  EXPECT_EQ(m.images[1].url, "https://example.com/cat.jpg");
  EXPECT_EQ(m.images[1].offset, 10u);
  EXPECT_EQ(m.images[1].part, "messages[0].content[3]");
  // A translated part names its own API's field.
  r = ParseChatRequest(std::string_view(R"({"messages": [{"role": "user", "content": [
      {"type": "image_url", "image_url": {"url": "data:image/png;base64,@@"}, "x_gemlet_part": "messages[2].images[0]"}]}]})"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("messages[2].images[0]"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().status, 400);
}

TEST(RequestParserTest, AudioPartsTakeTheirPlaceInTheText) {
  // "RIFF" is UklGRg==; the parts are text, audio, text, image, audio.
  auto r = ParseChatRequest(std::string_view(R"({"messages": [{"role": "user", "content": [
      {"type": "text", "text": "Hear"},
      {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
      {"type": "text", "text": "then"},
      {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}},
      {"type": "input_audio", "input_audio": {"data": "data:audio/mpeg;base64,SUQz", "format": "mp3"}}]}]})"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const ChatMessage& m = r->messages[0];
  EXPECT_EQ(m.content, "Hearthen");
  ASSERT_EQ(m.audios.size(), 2u);
  EXPECT_EQ(m.audios[0].bytes, (std::vector<uint8_t>{'R', 'I', 'F', 'F'}));
  EXPECT_EQ(m.audios[0].offset, 4u);
  EXPECT_EQ(m.audios[0].part, "messages[0].content[1].input_audio");
  EXPECT_EQ(m.audios[1].bytes, (std::vector<uint8_t>{'I', 'D', '3'}));
  EXPECT_EQ(m.audios[1].offset, 8u);
  ASSERT_EQ(m.images.size(), 1u);
  EXPECT_EQ(m.images[0].offset, 8u);
  // Bad base64 is a 400 naming the part's data.
  r = ParseChatRequest(std::string_view(R"({"messages": [{"role": "user", "content": [
      {"type": "input_audio", "input_audio": {"data": "@@@@", "format": "wav"}}]}]})"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().status, 400);
  EXPECT_NE(r.error().message.find("messages[0].content[0].input_audio.data"), std::string::npos)
      << r.error().message;
}

}  // namespace request_parser_test
}  // namespace gemlet::server
