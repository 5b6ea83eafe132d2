// Generation over the fake model: the runtime output parser as the server drives it (markers
// by token, tool-call ids, malformed calls as text, the forced reply prefix, finish reasons).
#include "tools/server/generation.h"

#include <gtest/gtest.h>

#include "tools/server/testing/fake_model.h"

namespace gemlet::server {
namespace generation_test {

using testing::Bytes;

struct Collected {
  std::string content, reasoning;
  std::vector<ToolCall> calls;
  std::vector<GenerationEvent::Kind> kinds;  // a run of events of one kind counts once
  std::optional<JobOutcome> outcome;
};

std::vector<int32_t> Cat(std::initializer_list<std::vector<int32_t>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// Feeds `tokens` as the scheduler would (stopping when OnToken says so), then finishes.
Collected Drive(Generation& g, const std::vector<int32_t>& tokens, FinishReason reason = FinishReason::kStop) {
  for (int32_t t : tokens) {
    if (!g.OnToken(t)) break;
  }
  JobOutcome o;
  o.reason = reason;
  g.OnFinish(o);
  Collected c;
  std::vector<GenerationEvent> events;
  while (!c.outcome) g.Wait(std::chrono::milliseconds(10), &events, &c.outcome);
  for (auto& e : events) {
    if (c.kinds.empty() || c.kinds.back() != e.kind || e.kind == GenerationEvent::kToolCall) c.kinds.push_back(e.kind);
    if (e.kind == GenerationEvent::kContent) c.content += e.text;
    if (e.kind == GenerationEvent::kReasoning) c.reasoning += e.text;
    if (e.kind == GenerationEvent::kToolCall) c.calls.push_back(e.call);
  }
  return c;
}

class GenerationTest : public ::testing::Test {
 protected:
  testing::FakeBackend backend;
  testing::FakeChatModel model{backend};
};

TEST_F(GenerationTest, ThoughtAnswerAndToolCallInOrder) {
  Generation g(model, {}, /*chat=*/true, {});
  Collected out = Drive(g, Cat({{testing::kThinkStart}, Bytes("thought\nhmm"), {testing::kThinkEnd},
                              Bytes("Checking."), {testing::kHiddenTok, testing::kToolStart},
                              Bytes("call:get_weather{\"city\": \"Paris\"}"), {testing::kToolEnd}}));
  EXPECT_EQ(out.reasoning, "hmm");
  EXPECT_EQ(out.content, "Checking.");
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(out.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(out.calls[0].id.rfind("call_", 0), 0u);
  EXPECT_EQ(out.kinds, (std::vector<GenerationEvent::Kind>{GenerationEvent::kReasoning, GenerationEvent::kContent,
                                                           GenerationEvent::kToolCall}));
  EXPECT_EQ(g.FinishReasonText(*out.outcome), "tool_calls");
}

TEST_F(GenerationTest, MalformedToolCallBecomesContent) {
  Generation g(model, {}, /*chat=*/true, {});
  Collected out = Drive(g, Cat({{testing::kToolStart}, Bytes("{nonsense}"), {testing::kToolEnd}}));
  EXPECT_TRUE(out.calls.empty());
  EXPECT_EQ(out.content, "{nonsense}");
  EXPECT_EQ(g.FinishReasonText(*out.outcome), "stop");
}

TEST_F(GenerationTest, PrimedToolCallOpening) {
  Generation g(model, {}, /*chat=*/true, Cat({{testing::kToolStart}, Bytes("call:f{")}));
  Collected out = Drive(g, Cat({Bytes("\"a\":1}"), {testing::kToolEnd}}));
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "f");
  EXPECT_EQ(out.calls[0].arguments, R"({"a":1})");
  // Cut off by the token limit: still reported, and the reason is "length".
  Generation cut(model, {}, /*chat=*/true, Cat({{testing::kToolStart}, Bytes("call:f{")}));
  out = Drive(cut, Bytes("\"a\":"), FinishReason::kLength);
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(cut.FinishReasonText(*out.outcome), "length");
}

TEST_F(GenerationTest, StopStringEndsReplyButNotThought) {
  Generation g(model, {"STOP"}, /*chat=*/true, {});
  Collected out = Drive(g, Cat({{testing::kThinkStart}, Bytes("thought\nno STOP here"), {testing::kThinkEnd},
                              Bytes("one two STOP three")}),
                      FinishReason::kLength);
  EXPECT_EQ(out.reasoning, "no STOP here");
  EXPECT_EQ(out.content, "one two ");
  EXPECT_EQ(g.FinishReasonText(*out.outcome), "stop");
}

TEST_F(GenerationTest, RawCompletionJoinsUtf8AndHidesControlTokens) {
  Generation g(model, {}, /*chat=*/false, {});
  EXPECT_TRUE(g.OnToken(0xc3));
  EXPECT_TRUE(g.OnToken(testing::kThinkStart));
  EXPECT_TRUE(g.OnToken(0xa9));
  std::vector<GenerationEvent> events;
  std::optional<JobOutcome> outcome;
  g.Wait(std::chrono::milliseconds(10), &events, &outcome);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].text, "\xc3\xa9");
  // An end-of-turn token the scheduler did not stop at (ignore_eos) shows nothing.
  Collected out = Drive(g, Cat({{testing::kEos}, Bytes("more")}), FinishReason::kLength);
  EXPECT_EQ(out.content, "more");
  EXPECT_EQ(g.FinishReasonText(*out.outcome), "length");
}

}  // namespace generation_test
}  // namespace gemlet::server
