#include "tools/server/output_router.h"

#include <gtest/gtest.h>

#include "tools/server/openai_format.h"
#include "tools/server/testing/fake_model.h"

namespace gemlet::server {
namespace {

using testing::Bytes;

std::string Feed(StopMatcher& m, const std::vector<std::string>& pieces, bool* matched) {
  std::string out;
  *matched = false;
  for (const auto& p : pieces) {
    bool hit = false;
    out += m.Push(p, &hit);
    if (hit) {
      *matched = true;
      return out;
    }
  }
  return out + m.Flush();
}

TEST(StopMatcherTest, FindsStopsAcrossPieces) {
  bool matched;
  StopMatcher a({"END"});
  EXPECT_EQ(Feed(a, {"hello E", "N", "D world"}, &matched), "hello ");
  EXPECT_TRUE(matched);
  StopMatcher b({"END"});
  EXPECT_EQ(Feed(b, {"hello E", "N", "d"}, &matched), "hello ENd");
  EXPECT_FALSE(matched);
  StopMatcher c({"\n\n", "x"});
  EXPECT_EQ(Feed(c, {"a\n", "b\n", "\nc"}, &matched), "a\nb");
  EXPECT_TRUE(matched);
  StopMatcher d({});
  EXPECT_EQ(Feed(d, {"a", "b"}, &matched), "ab");
}

TEST(StopMatcherTest, HoldsBackOnlyPossibleStarts) {
  StopMatcher m({"abc"});
  bool hit;
  EXPECT_EQ(m.Push("xxab", &hit), "xx");
  EXPECT_EQ(m.Push("d", &hit), "abd");
  EXPECT_FALSE(hit);
}

struct Routed {
  std::string content, reasoning;
  std::vector<ToolCall> calls;
};

Routed Route(OutputRouter& r, const std::vector<int32_t>& tokens, bool* stopped = nullptr) {
  Routed out;
  std::vector<RouterEvent> ev;
  bool go = true;
  for (int32_t t : tokens) {
    if (!(go = r.Push(t, &ev))) break;
  }
  if (stopped) *stopped = !go;
  r.Finish(&ev);
  for (auto& e : ev) {
    if (e.kind == RouterEvent::kContent) out.content += e.text;
    if (e.kind == RouterEvent::kReasoning) out.reasoning += e.text;
    if (e.kind == RouterEvent::kToolCall) out.calls.push_back(e.call);
  }
  return out;
}

std::vector<int32_t> Cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

TEST(OutputRouterTest, SeparatesThoughtFromAnswer) {
  testing::FakeBackend backend;
  testing::FakeChatModel model(backend);
  OutputRouter r(model, {}, /*chat=*/true);
  Routed out = Route(r, Cat({{testing::kThinkStart}, Bytes("thought\nLet me think."),
                             {testing::kThinkEnd}, Bytes("The answer is 4.")}));
  EXPECT_EQ(out.reasoning, "Let me think.");
  EXPECT_EQ(out.content, "The answer is 4.");
}

TEST(OutputRouterTest, ParsesToolCallsAndHidesControlTokens) {
  testing::FakeBackend backend;
  testing::FakeChatModel model(backend);
  OutputRouter r(model, {}, /*chat=*/true);
  Routed out = Route(r, Cat({Bytes("Checking."), {testing::kHiddenTok, testing::kToolStart},
                             Bytes("get_weather:{\"city\": \"Paris\"}"), {testing::kToolEnd}}));
  EXPECT_EQ(out.content, "Checking.");
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(out.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(out.calls[0].id.rfind("call_", 0), 0u);
  EXPECT_EQ(r.tool_calls(), 1);
}

TEST(OutputRouterTest, MalformedToolCallBecomesContent) {
  testing::FakeBackend backend;
  testing::FakeChatModel model(backend);
  OutputRouter r(model, {}, /*chat=*/true);
  Routed out = Route(r, Cat({{testing::kToolStart}, Bytes("nonsense"), {testing::kToolEnd}}));
  EXPECT_TRUE(out.calls.empty());
  EXPECT_EQ(out.content, "nonsense");
}

TEST(OutputRouterTest, PrimedToolCallOpening) {
  testing::FakeBackend backend;
  testing::FakeChatModel model(backend);
  OutputRouter r(model, {}, /*chat=*/true);
  r.Prime(Cat({{testing::kToolStart}, Bytes("f:{")}));
  Routed out = Route(r, Cat({Bytes("\"a\":1}"), {testing::kToolEnd}}));
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "f");
  EXPECT_EQ(out.calls[0].arguments, R"({"a":1})");
}

TEST(OutputRouterTest, StopStringEndsReplyButNotThought) {
  testing::FakeBackend backend;
  testing::FakeChatModel model(backend);
  OutputRouter r(model, {"STOP"}, /*chat=*/true);
  bool stopped = false;
  Routed out = Route(r, Cat({{testing::kThinkStart}, Bytes("thought\nno STOP here"),
                             {testing::kThinkEnd}, Bytes("one two STOP three")}),
                     &stopped);
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out.reasoning, "no STOP here");
  EXPECT_EQ(out.content, "one two ");
}

TEST(OutputRouterTest, Utf8SplitAcrossTokensIsJoined) {
  testing::FakeBackend backend;
  testing::FakeChatModel model(backend);
  OutputRouter r(model, {}, /*chat=*/false);
  std::vector<RouterEvent> ev;
  r.Push(0xc3, &ev);
  EXPECT_TRUE(ev.empty());
  r.Push(0xa9, &ev);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].text, "\xc3\xa9");
}

TEST(OpenAiFormatTest, ChunksAndSse) {
  ResponseMeta meta{"chatcmpl-1", 100, "m"};
  Json c = ChatChunkJson(meta, {{"content", "Hi"}}, std::nullopt, true);
  EXPECT_EQ(c["object"], "chat.completion.chunk");
  EXPECT_EQ(c["choices"][0]["delta"]["content"], "Hi");
  EXPECT_TRUE(c["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(c.contains("usage") && c["usage"].is_null());
  Json f = ChatChunkJson(meta, Json::object(), std::string("stop"), false);
  EXPECT_EQ(f["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(f.contains("usage"));
  Json u = ChatUsageChunkJson(meta, Usage{10, 5, 3});
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_EQ(u["usage"]["total_tokens"], 15);
  EXPECT_EQ(u["usage"]["prompt_tokens_details"]["cached_tokens"], 3);
  EXPECT_EQ(SseData(Json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_EQ(SseDone(), "data: [DONE]\n\n");

  ChatResult r;
  r.tool_calls.push_back(ToolCall{"call_1", "f", "{}"});
  r.finish_reason = "tool_calls";
  Json full = ChatCompletionJson(meta, r);
  EXPECT_EQ(full["object"], "chat.completion");
  EXPECT_TRUE(full["choices"][0]["message"]["content"].is_null());
  EXPECT_EQ(full["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(full["choices"][0]["finish_reason"], "tool_calls");
  // Invalid UTF-8 in generated text never throws.
  ChatResult bad;
  bad.content = "\xff\xfe";
  EXPECT_NO_THROW(Dump(ChatCompletionJson(meta, bad)));
}

}  // namespace
}  // namespace gemlet::server
