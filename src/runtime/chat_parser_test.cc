#include "runtime/chat_parser.h"

#include <gtest/gtest.h>

#include "runtime/chat_format.h"

namespace gemlet {
namespace {

using nlohmann::json;

TEST(ChatParser, ContentOnly) {
  const ParsedOutput out = ParseChatOutput("The capital of France is **Paris**.");
  EXPECT_EQ(out.content, "The capital of France is **Paris**.");
  EXPECT_TRUE(out.reasoning.empty());
  EXPECT_TRUE(out.tool_calls.empty());
  EXPECT_FALSE(out.ended);
}

TEST(ChatParser, ThinkingThenAnswer) {
  const ParsedOutput out =
      ParseChatOutput("<|channel>thought\nsimple sum: 2+2<channel|>4<turn|>ignored");
  EXPECT_EQ(out.reasoning, "simple sum: 2+2");
  EXPECT_EQ(out.content, "4");
  EXPECT_TRUE(out.ended);
}

TEST(ChatParser, StartsInsideAThoughtOpenedByThePrompt) {
  const ParsedOutput out = ParseChatOutput("the files are a, b<channel|>Two files.", true);
  EXPECT_EQ(out.reasoning, "the files are a, b");
  EXPECT_EQ(out.content, "Two files.");
}

TEST(ChatParser, ToolCallArgumentsBecomeJson) {
  const ParsedOutput out = ParseChatOutput(
      "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:3,ratio:-0.25,exp:1e3,"
      "ok:true,none:null,list:[1,<|\"|>a<|\"|>,false],nested:{a:{b:<|\"|>x,y}<|\"|>}},"
      "word:hello world,big:123456789012345678901234}<tool_call|><|tool_response>");
  ASSERT_EQ(out.tool_calls.size(), 1u);
  const ParsedToolCall& c = out.tool_calls[0];
  EXPECT_EQ(c.name, "get_weather");
  EXPECT_TRUE(c.complete);
  EXPECT_EQ(c.arguments["city"], "Paris");
  EXPECT_EQ(c.arguments["days"], 3);
  EXPECT_TRUE(c.arguments["days"].is_number_integer());
  EXPECT_DOUBLE_EQ(c.arguments["ratio"].get<double>(), -0.25);
  EXPECT_DOUBLE_EQ(c.arguments["exp"].get<double>(), 1000.0);
  EXPECT_EQ(c.arguments["ok"], true);
  EXPECT_TRUE(c.arguments["none"].is_null());
  EXPECT_EQ(c.arguments["list"], json::parse(R"([1, "a", false])"));
  EXPECT_EQ(c.arguments["nested"], json::parse(R"({"a": {"b": "x,y}"}})"));
  EXPECT_EQ(c.arguments["word"], "hello world");
  EXPECT_TRUE(c.arguments["big"].is_number_float());
  EXPECT_TRUE(out.ended);
  EXPECT_EQ(out.content, "");
}

TEST(ChatParser, SeveralCallsAndContent) {
  const ParsedOutput out = ParseChatOutput(
      "Let me check.<|tool_call>call:a{}<tool_call|><|tool_call>call:b{x:<|\"|>has <tool_call|> "
      "inside<|\"|>}<tool_call|>");
  EXPECT_EQ(out.content, "Let me check.");
  ASSERT_EQ(out.tool_calls.size(), 2u);
  EXPECT_EQ(out.tool_calls[0].name, "a");
  EXPECT_EQ(out.tool_calls[0].arguments, json::object());
  EXPECT_EQ(out.tool_calls[1].name, "b");
  EXPECT_EQ(out.tool_calls[1].arguments["x"], "has <tool_call|> inside");
}

TEST(ChatParser, CutOffMidCallIsReportedIncomplete) {
  ChatParser p;
  auto d = p.Push("Sure.<|tool_call>call:write{path:<|\"|>/tmp/x<|\"|>,text:<|\"|>hel");
  EXPECT_EQ(d.content, "Sure.");
  EXPECT_TRUE(d.tool_calls.empty());  // not finished yet
  d = p.Finish();
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_FALSE(d.tool_calls[0].complete);
  EXPECT_EQ(d.tool_calls[0].name, "write");
  EXPECT_EQ(d.tool_calls[0].arguments, json::parse(R"({"path": "/tmp/x", "text": "hel"})"));
  // Cut inside the name, inside a nested list, right after the marker.
  for (const char* cut : {"<|tool_call>call:wri", "<|tool_call>call:f{a:[1,{b:", "<|tool_call>",
                          "<|tool_call>call:f{a:<|\"|", "<|tool_call>call:f{a:"}) {
    const ParsedOutput out = ParseChatOutput(cut);
    ASSERT_EQ(out.tool_calls.size(), 1u) << cut;
    EXPECT_FALSE(out.tool_calls[0].complete) << cut;
  }
  // Cut by an end-of-turn marker.
  const ParsedOutput ended = ParseChatOutput("<|tool_call>call:f{a:1<turn|>");
  ASSERT_EQ(ended.tool_calls.size(), 1u);
  EXPECT_FALSE(ended.tool_calls[0].complete);
  EXPECT_EQ(ended.tool_calls[0].arguments, json::parse(R"({"a": 1})"));
  EXPECT_TRUE(ended.ended);
}

TEST(ChatParser, HeldBackMarkerPrefixIsReleasedAtTheEnd) {
  ChatParser p;
  auto d = p.Push("a < b and <|tool_");
  EXPECT_EQ(d.content, "a < b and ");
  d = p.Finish();
  EXPECT_EQ(d.content, "<|tool_");
  EXPECT_EQ(p.result().content, "a < b and <|tool_");
}

// Pushing the text in pieces of any size gives the one-shot result.
TEST(ChatParser, StreamingMatchesOneShotForEverySplit) {
  const std::vector<std::string> samples = {
      "<|channel>thought\nplan: call f<channel|>Calling.<|tool_call>call:f{q:<|\"|>a,b<|\"|>,"
      "n:[1,2]}<tool_call|><|tool_response>",
      "Hello <b>world</b> <turn|>",
      "<|channel>thought<channel|>x<|channel>thought\ny<channel|>z",
      "<|tool_call>call:f{a:<|\"|>x<tool_call|>y<|\"|>}<tool_call|>tail",
      "partial <|chan",
  };
  for (const std::string& s : samples) {
    const ParsedOutput whole = ParseChatOutput(s);
    for (size_t step = 1; step <= 4; ++step) {
      ChatParser p;
      std::string content, reasoning;
      std::vector<ParsedToolCall> calls;
      auto take = [&](ChatParser::Delta d) {
        content += d.content;
        reasoning += d.reasoning;
        for (auto& c : d.tool_calls) calls.push_back(c);
      };
      for (size_t i = 0; i < s.size(); i += step) take(p.Push(s.substr(i, step)));
      take(p.Finish());
      EXPECT_EQ(content, whole.content) << s << " step " << step;
      EXPECT_EQ(reasoning, whole.reasoning) << s << " step " << step;
      ASSERT_EQ(calls.size(), whole.tool_calls.size()) << s << " step " << step;
      for (size_t k = 0; k < calls.size(); ++k) {
        EXPECT_EQ(calls[k].name, whole.tool_calls[k].name);
        EXPECT_EQ(calls[k].arguments, whole.tool_calls[k].arguments) << s << " step " << step;
      }
      EXPECT_EQ(p.result().ended, whole.ended);
    }
  }
}

// What the renderer writes for a tool call parses back to the same arguments.
TEST(ChatParser, RendererOutputRoundTrips) {
  const json args = json::parse(
      R"({"city": "São Paulo", "days": 7, "temp": -1.5, "flags": [true, false, null],
          "opts": {"unit": "C", "deep": {"x": "a:b,c"}}, "empty": {}, "list": []})");
  const json msgs = {
      {{"role", "user"}, {"content", "q"}},
      {{"role", "assistant"},
       {"tool_calls", {{{"function", {{"name", "get_weather"}, {"arguments", args}}}}}}}};
  auto prompt = RenderChat(msgs, ChatOptions{});
  ASSERT_TRUE(prompt.ok());
  const size_t at = prompt->find("<|tool_call>");
  ASSERT_NE(at, std::string::npos);
  const ParsedOutput out = ParseChatOutput(prompt->substr(at));
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_TRUE(out.tool_calls[0].complete);
  EXPECT_EQ(out.tool_calls[0].name, "get_weather");
  EXPECT_EQ(out.tool_calls[0].arguments, args);
  EXPECT_TRUE(out.ended);  // the rendered prompt continues with <|tool_response>
}

TEST(ChatParser, HostileInputDoesNotCrash) {
  std::string deep = "<|tool_call>call:f{a:";
  for (int i = 0; i < 100000; ++i) deep += (i % 2) ? "[" : "{";
  const ParsedOutput out = ParseChatOutput(deep);
  ASSERT_EQ(out.tool_calls.size(), 1u);
  EXPECT_FALSE(out.tool_calls[0].complete);
  const ParsedOutput junk = ParseChatOutput("<|tool_call>}}}:::,,,{{:<|\"|><tool_call|>");
  EXPECT_EQ(junk.tool_calls.size(), 1u);
  bool complete = true;
  size_t used = 0;
  EXPECT_EQ(ParseGemmaArguments("", &complete, &used), nullptr);
  EXPECT_FALSE(complete);
  const json j = ToJson(out);
  EXPECT_EQ(j["tool_calls"][0]["complete"], false);
}

}  // namespace
}  // namespace gemlet
