#include "text/chat_parser.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <utility>
#include <variant>

#include "text/chat_format.h"
#include "text/tokenizer_test_util.h"
#include "text/utf8.h"

namespace gemlet {
namespace chat_parser_test {

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

// ---- Token input (PushToken): the output as the model generates it. ----

// A vocabulary for the tests: bytes 0..255 are text, then the markers; a decoder that spells
// markers the way Gemma 4's does (for text_markers) and holds split UTF-8.
constexpr int32_t kEnd = 256, kOpen = 257, kClose = 258, kCall = 259, kCallEnd = 260, kHide = 261;

class TestVocab : public OutputVocab {
 public:
  TokenKind KindOf(int32_t t) const override {
    switch (t) {
      case kEnd: return TokenKind::kEndOfTurn;
      case kOpen: return TokenKind::kChannelOpen;
      case kClose: return TokenKind::kChannelClose;
      case kCall: return TokenKind::kToolCallOpen;
      case kCallEnd: return TokenKind::kToolCallClose;
      case kHide: return TokenKind::kHidden;
      default: return TokenKind::kText;
    }
  }
  std::unique_ptr<TokenTextDecoder> NewDecoder() const override {
    class Decoder : public TokenTextDecoder {
     public:
      std::string Push(int32_t t) override {
        switch (t) {
          case kEnd: return "<turn|>";
          case kOpen: return "<|channel>";
          case kClose: return "<channel|>";
          case kCall: return "<|tool_call>";
          case kCallEnd: return "<tool_call|>";
          default: break;
        }
        held_ += static_cast<char>(t);
        const size_t n = held_.size() - utf8::IncompleteTailLength(held_);
        std::string out = held_.substr(0, n);
        held_.erase(0, n);
        return out;
      }
      std::string Flush() override { return std::exchange(held_, {}); }
      std::string Peek() const override { return held_; }

     private:
      std::string held_;
    };
    return std::make_unique<Decoder>();
  }
};

std::vector<int32_t> Toks(std::initializer_list<std::variant<int32_t, std::string>> parts) {
  std::vector<int32_t> out;
  for (const auto& p : parts) {
    if (std::holds_alternative<int32_t>(p)) {
      out.push_back(std::get<int32_t>(p));
    } else {
      for (unsigned char c : std::get<std::string>(p)) out.push_back(c);
    }
  }
  return out;
}

struct Collected {
  std::string content, reasoning;
  std::vector<ParsedToolCall> calls;
  std::vector<ChatParser::Event> events;
  void Take(ChatParser::Delta d) {
    content += d.content;
    reasoning += d.reasoning;
    for (auto& c : d.tool_calls) calls.push_back(c);
    for (auto& e : d.events) {  // consecutive text of one kind as one event
      if (e.kind != ChatParser::Event::kToolCall && !events.empty() && events.back().kind == e.kind) {
        events.back().text += e.text;
      } else {
        events.push_back(e);
      }
    }
  }
};

// The server's way: markers by token only.
ChatParserOptions ServerOptions() {
  ChatParserOptions o;
  o.text_markers = false;
  o.end_of_turn_ends = false;
  o.bad_calls_as_content = true;
  return o;
}

Collected Feed(ChatParser& p, const std::vector<int32_t>& tokens) {
  Collected c;
  for (int32_t t : tokens) {
    c.Take(p.PushToken(t));
    if (p.stopped()) break;
  }
  c.Take(p.Finish());
  return c;
}

TEST(ChatParserTokens, SeparatesThoughtFromAnswer) {
  TestVocab v;
  ChatParser p(ServerOptions(), &v);
  Collected out = Feed(p, Toks({kOpen, "thought\nLet me think.", kClose, "The answer is 4."}));
  EXPECT_EQ(out.reasoning, "Let me think.");
  EXPECT_EQ(out.content, "The answer is 4.");
  ASSERT_EQ(out.events.size(), 2u);
  EXPECT_EQ(out.events[0].kind, ChatParser::Event::kReasoning);
  EXPECT_EQ(out.events[1].kind, ChatParser::Event::kContent);
}

TEST(ChatParserTokens, ParsesToolCallsAndHidesControlTokens) {
  TestVocab v;
  ChatParser p(ServerOptions(), &v);
  Collected out = Feed(p, Toks({"Checking.", kHide, kCall, "call:get_weather{\"city\": \"Paris\",days:2}",
                                kCallEnd, "Done."}));
  EXPECT_EQ(out.content, "Checking.Done.");
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "get_weather");
  EXPECT_EQ(out.calls[0].arguments, json::parse(R"({"city":"Paris","days":2})"));
  EXPECT_TRUE(out.calls[0].complete);
  // In order: content, the call, content.
  ASSERT_EQ(out.events.size(), 3u);
  EXPECT_EQ(out.events[1].kind, ChatParser::Event::kToolCall);
  EXPECT_EQ(p.result().tool_calls.size(), 1u);
}

TEST(ChatParserTokens, MalformedToolCallBecomesContent) {
  TestVocab v;
  ChatParser p(ServerOptions(), &v);
  Collected out = Feed(p, Toks({kCall, "{nonsense}", kCallEnd}));
  EXPECT_TRUE(out.calls.empty());
  EXPECT_EQ(out.content, "{nonsense}");
  // Without the option the call is reported, nameless.
  ChatParserOptions o = ServerOptions();
  o.bad_calls_as_content = false;
  ChatParser q(o, &v);
  out = Feed(q, Toks({kCall, "{nonsense}", kCallEnd}));
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "");
}

TEST(ChatParserTokens, PrimedToolCallOpening) {
  TestVocab v;
  ChatParser p(ServerOptions(), &v);
  p.Prime(Toks({kCall, "call:f{"}));
  EXPECT_TRUE(p.result().content.empty());
  Collected out = Feed(p, Toks({"a:1}", kCallEnd}));
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "f");
  EXPECT_EQ(out.calls[0].arguments, json::parse(R"({"a":1})"));
}

TEST(ChatParserTokens, CutOffToolCallIsIncomplete) {
  TestVocab v;
  ChatParser p(ServerOptions(), &v);
  Collected out = Feed(p, Toks({kCall, "call:f{q:<|\"|>half"}));
  ASSERT_EQ(out.calls.size(), 1u);
  EXPECT_EQ(out.calls[0].name, "f");
  EXPECT_FALSE(out.calls[0].complete);
  EXPECT_EQ(out.calls[0].arguments, json::parse(R"({"q":"half"})"));
  // A second call opening cuts the first off.
  ChatParser q(ServerOptions(), &v);
  out = Feed(q, Toks({kCall, "call:f{a:1", kCall, "call:g{}", kCallEnd}));
  ASSERT_EQ(out.calls.size(), 2u);
  EXPECT_FALSE(out.calls[0].complete);
  EXPECT_EQ(out.calls[1].name, "g");
  EXPECT_TRUE(out.calls[1].complete);
}

TEST(ChatParserTokens, StopStringEndsReplyButNotThought) {
  TestVocab v;
  ChatParserOptions o = ServerOptions();
  o.stop = {"STOP"};
  ChatParser p(o, &v);
  Collected out =
      Feed(p, Toks({kOpen, "thought\nno STOP here", kClose, "one two STOP three"}));
  EXPECT_TRUE(p.stopped());
  EXPECT_EQ(out.reasoning, "no STOP here");
  EXPECT_EQ(out.content, "one two ");
  EXPECT_TRUE(p.PushToken('x').content.empty());
  // A stop string the held-back text completes only at the end still counts.
  ChatParser q(o, &v);
  out = Feed(q, Toks({"a ST"}));
  EXPECT_EQ(out.content, "a ST");
  EXPECT_FALSE(q.stopped());
}

// Gemma spells a character without a piece in byte tokens, and the decoder holds a run of them
// until it ends (which in a reply of such characters may be never): a stop string complete in
// the held bytes ends the reply on the token that completes it, at the very start too.
TEST(ChatParserTokens, StopStringInHeldByteTokens) {
  const Tokenizer& tok = testing_util::RealTokenizer();
  Gemma4OutputVocab vocab(tok);
  auto byte = [&](int b) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", b);
    return tok.PieceToId(piece);
  };
  const std::vector<int32_t> e_acute = {byte(0xC3), byte(0xA9)};  // "é"
  std::vector<int32_t> reply;
  for (int i = 0; i < 8; ++i) reply.insert(reply.end(), e_acute.begin(), e_acute.end());
  const std::vector<int32_t> cafe = tok.Encode("caf").value();
  struct Case {
    std::vector<std::string> stop;
    std::vector<int32_t> prefix;  // ids before the byte run
    size_t ends_after;            // tokens read when the reply ends
    std::string content;
  };
  const std::vector<Case> cases = {
      {{"\u00E9"}, {}, 2, ""},                           // at offset 0, in bytes only
      {{"\u00E9\u00E9"}, {}, 4, ""},                      // over several byte characters
      {{"caf\u00E9"}, cafe, cafe.size() + 2, ""},          // completed by the bytes
      {{"\u00E9"}, cafe, cafe.size() + 2, "caf"},          // after text
  };
  for (bool chat : {true, false}) {
    for (const Case& c : cases) {
      ChatParserOptions o = ServerOptions();
      o.chat = chat;
      o.stop = c.stop;
      ChatParser p(o, &vocab);
      std::vector<int32_t> ids = c.prefix;
      ids.insert(ids.end(), reply.begin(), reply.end());
      std::string content;
      size_t read = 0;
      for (int32_t t : ids) {
        ++read;
        content += p.PushToken(t).content;
        if (p.stopped()) break;
      }
      content += p.Finish().content;
      EXPECT_TRUE(p.stopped()) << c.stop[0] << " chat " << chat;
      EXPECT_EQ(read, c.ends_after) << c.stop[0] << " chat " << chat;
      EXPECT_EQ(content, c.content) << c.stop[0] << " chat " << chat;
    }
  }
  // Bytes that do not complete a stop string stay held, and a later byte may still make the
  // run invalid: no stop is found in text the reply does not end in.
  ChatParserOptions o = ServerOptions();
  o.stop = {"\u00E9"};
  ChatParser p(o, &vocab);
  for (int32_t t : {byte(0xC3), byte(0xFF), byte(0xA9)}) {
    EXPECT_TRUE(p.PushToken(t).content.empty());
  }
  EXPECT_FALSE(p.stopped());
  EXPECT_EQ(p.Finish().content, "\uFFFD\uFFFD\uFFFD");
}

TEST(ChatParserTokens, RawCompletionHidesMarkersAndJoinsUtf8) {
  TestVocab v;
  ChatParserOptions o = ServerOptions();
  o.chat = false;
  ChatParser p(o, &v);
  EXPECT_TRUE(p.PushToken(0xc3).content.empty());
  EXPECT_EQ(p.PushToken(0xa9).content, "\xc3\xa9");
  EXPECT_TRUE(p.PushToken(kOpen).content.empty());
  EXPECT_EQ(p.PushToken('x').content, "x");
  EXPECT_TRUE(p.Finish().content.empty());
  EXPECT_EQ(p.result().content, "\xc3\xa9x");
}

// End-of-turn tokens end the answer, or (the server) are hidden and the output goes on.
TEST(ChatParserTokens, EndOfTurn) {
  TestVocab v;
  ChatParserOptions o = ServerOptions();
  o.end_of_turn_ends = true;
  ChatParser p(o, &v);
  Collected out = Feed(p, Toks({"done", kEnd, "more"}));
  EXPECT_EQ(out.content, "done");
  EXPECT_TRUE(p.ended());
  ChatParser q(ServerOptions(), &v);
  out = Feed(q, Toks({"done", kEnd, "more"}));
  EXPECT_EQ(out.content, "donemore");
  EXPECT_FALSE(q.ended());
}

// Markers written as characters are text for the server and markers for the command line.
TEST(ChatParserTokens, MarkersWrittenAsTextAreMarkersOnlyWithTextMarkers) {
  TestVocab v;
  const std::vector<int32_t> tokens = Toks({"a<|channel>thought\nb<channel|>c", kEnd});
  ChatParser server(ServerOptions(), &v);
  Collected out = Feed(server, tokens);
  EXPECT_EQ(out.content, "a<|channel>thought\nb<channel|>c");
  ChatParser cli(ChatParserOptions{}, &v);
  out = Feed(cli, tokens);
  EXPECT_EQ(out.content, "ac");
  EXPECT_EQ(out.reasoning, "b");
  EXPECT_TRUE(cli.ended());
}

// With the real tokenizer, tokens give what the text gives: by their text (the command line)
// and, where no marker hides in a string, by token (the server).
TEST(ChatParserTokens, RealTokensParseLikeTheirText) {
  const Tokenizer& tok = testing_util::RealTokenizer();
  Gemma4OutputVocab vocab(tok);
  const std::vector<std::string> samples = {
      "<|channel>thought\nplan: call f<channel|>Calling.<|tool_call>call:f{q:<|\"|>a,b<|\"|>,"
      "n:[1,2]}<tool_call|>",
      "Hello <b>world</b> caf\xc3\xa9 \xf0\x9f\x98\x80",
      "<|channel>thought\ny<channel|>z<|tool_call>call:g{deep:{x:[true,null,1.5]}}<tool_call|>tail",
      "<|tool_call>call:cut{a:<|\"|>unfinished",
  };
  for (const std::string& s : samples) {
    const ParsedOutput want = ParseChatOutput(s);
    auto ids = tok.Encode(s);
    ASSERT_TRUE(ids.ok());
    for (bool text_markers : {true, false}) {
      ChatParserOptions o;
      o.text_markers = text_markers;
      ChatParser p(o, &vocab);
      Collected got = Feed(p, *ids);
      EXPECT_EQ(got.content, want.content) << s << " text_markers " << text_markers;
      EXPECT_EQ(got.reasoning, want.reasoning) << s;
      ASSERT_EQ(got.calls.size(), want.tool_calls.size()) << s;
      for (size_t k = 0; k < got.calls.size(); ++k) {
        EXPECT_EQ(got.calls[k].name, want.tool_calls[k].name) << s;
        EXPECT_EQ(got.calls[k].arguments, want.tool_calls[k].arguments) << s;
        EXPECT_EQ(got.calls[k].complete, want.tool_calls[k].complete) << s;
      }
    }
  }
}

}  // namespace chat_parser_test
}  // namespace gemlet
