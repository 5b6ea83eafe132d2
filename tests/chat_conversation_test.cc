// runtime::Conversation end to end on the tiny synthetic model: the Gemma 4 prompt format
// against the reference renderings, incremental turns that prefill only their own tokens and
// leave the cache equal to a fresh prefill of the same tokens, the context policies, Ctrl+C
// (should_stop), the thought channel, and /save + /load (runtime/session_file.h) with its
// checks against other models and damaged files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "runtime/conversation.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "runtime/session_file.h"
#include "text/tokenizer.h"
#include "tools/convert/convert.h"
#include "tools/convert/synth.h"

namespace gemlet::runtime {
namespace chat_conversation_test {

namespace fs = std::filesystem;

const std::string& TestDir() {
  static const std::string d = [] {
    const std::string p = ::testing::TempDir() + "/chat_conversation." + std::to_string(::getpid());
    fs::create_directories(p);
    return p;
  }();
  return d;
}

// The tiny preset synthesized with `seed` and converted with the default plan, once.
const std::string& TinyModel(uint64_t seed) {
  static std::map<uint64_t, std::string> made;
  auto it = made.find(seed);
  if (it != made.end()) return it->second;
  const std::string src = TestDir() + "/tiny-src-" + std::to_string(seed);
  const std::string out = TestDir() + "/tiny-" + std::to_string(seed) + ".gemlet";
  convert::SynthOptions so;
  so.preset = "tiny";
  so.out_dir = src;
  so.seed = seed;
  auto s = convert::Synthesize(so);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  convert::ConvertOptions co;
  co.src = src;
  co.out = out;
  co.progress = false;
  auto c = convert::Convert(co);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return made[seed] = out;
}

std::unique_ptr<Engine> OpenTiny(uint64_t seed = 0) {
  EngineOptions eo;
  eo.threads = 1;
  auto e = Engine::Open(TinyModel(seed), eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

ConversationOptions Greedy(int64_t ctx = 4096, int64_t max_tokens = 12) {
  ConversationOptions o;
  o.session = SessionOptions{ctx, 8};
  o.sampler.temperature = 0;
  o.max_tokens = max_tokens;
  return o;
}

std::vector<int32_t> Encode(const Tokenizer& tok, const std::string& text) {
  auto r = tok.Encode(text);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<int32_t>{};
}

bool StartsWith(const std::vector<int32_t>& a, const std::vector<int32_t>& prefix) {
  return a.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), a.begin());
}

// Next-token logits after `history` + `next`, computed from scratch in one prefill.
std::vector<float> FreshLogits(const Engine& engine, std::vector<int32_t> history, int32_t next) {
  history.push_back(next);
  Session s(engine, SessionOptions{static_cast<int64_t>(history.size()), 256});
  std::vector<float> logits;
  EXPECT_TRUE(s.Prefill(history, &logits).ok());
  return logits;
}

TEST(Conversation, RendersThroughTheChatTemplate) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  auto text = ReadFileToString(std::string(GEMLET_SHARED_DIR) + "/tokenizer/vectors.json");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const auto vectors = nlohmann::json::parse(*text);
  int checked = 0;
  for (const auto& c : vectors["chat"]) {
    if (c["name"] != "two_turn_system" && c["name"] != "two_turn_thinking_history") continue;
    ConversationOptions o = Greedy();
    o.thinking = c["options"].value("enable_thinking", false);
    std::vector<ChatMessage> msgs;
    for (const auto& m : c["messages"]) {
      if (m["role"] == "system") {
        o.system = m["content"];
      } else {
        msgs.emplace_back();
        msgs.back().role = m["role"];
        msgs.back().content = m["content"];
      }
    }
    Conversation conv(*engine, *engine->tokenizer(), o);
    auto got = conv.Render(msgs, true);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, c["prompt"].get<std::string>()) << c["name"];
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

TEST(Conversation, LaterTurnsPrefillOnlyTheirOwnTokens) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  const Tokenizer& tok = *engine->tokenizer();
  ConversationOptions o = Greedy();
  o.stop_at_eog = false;  // every answer ends at max_tokens: its last token opens the next turn
  Conversation conv(*engine, tok, o);

  auto t1 = conv.Send("Hello, how are you?");
  ASSERT_TRUE(t1.ok()) << t1.status().ToString();
  EXPECT_TRUE(t1->full_prefill);
  EXPECT_EQ(t1->cached_tokens, 0);
  EXPECT_EQ(t1->prefill_tokens,
            static_cast<int64_t>(Encode(tok, "<bos><|turn>user\nHello, how are you?<turn|>\n<|turn>model\n").size()));
  EXPECT_EQ(t1->generated_tokens, 12);
  EXPECT_TRUE(t1->token_limit);

  std::vector<int32_t> before = conv.session().history();
  for (const std::string text : {"Tell me more.", "And then?"}) {
    const int64_t pos = conv.position();
    auto t = conv.Send(text);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    const auto own = Encode(tok, "<turn|>\n<|turn>user\n" + text + "<turn|>\n<|turn>model\n");
    EXPECT_FALSE(t->full_prefill) << text;
    EXPECT_EQ(t->cached_tokens, pos) << text;
    EXPECT_EQ(t->prefill_tokens, 1 + static_cast<int64_t>(own.size())) << text;  // + the answer's last token
    const auto& after = conv.session().history();
    ASSERT_TRUE(StartsWith(after, before)) << "the cache was not carried over at '" << text << "'";
    // What follows the old history: the previous answer's last token, then this turn's own tokens.
    EXPECT_TRUE(std::equal(own.begin(), own.end(), after.begin() + before.size() + 1)) << text;
    before = after;
  }
  EXPECT_EQ(conv.messages().size(), 6u);

  // The carried cache equals a fresh prefill of the same tokens.
  const std::vector<int32_t> history = conv.session().history();
  std::vector<float> carried;
  ASSERT_TRUE(conv.session().Decode(7, &carried).ok());
  const auto fresh = FreshLogits(*engine, history, 7);
  ASSERT_EQ(carried.size(), fresh.size());
  for (size_t i = 0; i < fresh.size(); ++i) ASSERT_NEAR(carried[i], fresh[i], 1e-4) << i;
}

TEST(Conversation, EndOfTurnAnswersCarryOverWithTheirTurnEnd) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  const Tokenizer& tok = *engine->tokenizer();
  ConversationOptions o = Greedy(4096, 48);
  o.sampler.temperature = 1.5;  // flat enough that an answer soon samples an end-of-generation id
  o.sampler.top_k = 0;
  o.sampler.top_p = 1.0;
  bool tested = false;
  for (uint64_t seed = 1; seed <= 60 && !tested; ++seed) {
    o.sampler.seed = seed;
    Conversation conv(*engine, tok, o);
    ASSERT_TRUE(conv.Send("Hi").ok());
    if (!conv.turns().back().stopped_at_eog) continue;
    tested = true;
    const std::vector<int32_t> before = conv.session().history();  // the answer without its end id
    auto t2 = conv.Send("Go on");
    ASSERT_TRUE(t2.ok()) << t2.status().ToString();
    EXPECT_FALSE(t2->full_prefill);
    const auto& after = conv.session().history();
    ASSERT_TRUE(StartsWith(after, before));
    // A <turn|> that ended the answer is fed first, followed by the template's "\n"; an <eos>
    // or <|tool_response> is dropped and the turn closed with "<turn|>\n". Either way the
    // cache continues with the same tokens.
    const auto own = Encode(tok, "<turn|>\n<|turn>user\nGo on<turn|>\n<|turn>model\n");
    EXPECT_EQ(t2->prefill_tokens, static_cast<int64_t>(own.size()));
    EXPECT_TRUE(std::equal(own.begin(), own.end(), after.begin() + before.size()));
  }
  EXPECT_TRUE(tested) << "no sampled answer ended by itself: the end-of-turn path went untested";
}

TEST(Conversation, SaveAndLoadResumeWithTheSameGreedyContinuation) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  const Tokenizer& tok = *engine->tokenizer();
  const std::string file = TestDir() + "/conv.gemlet-session";
  Conversation a(*engine, tok, Greedy());
  a.SetSystem("Be brief.");
  ASSERT_TRUE(a.Send("First question").ok());
  ASSERT_TRUE(a.Save(file).ok());
  const int64_t saved_pos = a.position();
  const auto saved_history = a.session().history();
  auto ta = a.Send("Second question");
  ASSERT_TRUE(ta.ok());
  const std::string answer = a.messages().back().content;

  // A new conversation (as in a new process) resumes without prefilling the saved part.
  Conversation b(*engine, tok, Greedy());
  Status st = b.Load(file);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(b.position(), saved_pos);
  EXPECT_EQ(b.session().history(), saved_history);
  EXPECT_EQ(b.system(), "Be brief.");
  ASSERT_EQ(b.messages().size(), 2u);
  auto tb = b.Send("Second question");
  ASSERT_TRUE(tb.ok());
  EXPECT_FALSE(tb->full_prefill);
  EXPECT_EQ(tb->cached_tokens, saved_pos);
  EXPECT_EQ(tb->prefill_tokens, ta->prefill_tokens);
  EXPECT_EQ(b.messages().back().content, answer);
  EXPECT_EQ(b.session().history(), a.session().history());

  // Loading into the conversation that saved it rewinds it.
  ASSERT_TRUE(a.Load(file).ok());
  EXPECT_EQ(a.position(), saved_pos);
  ASSERT_TRUE(a.Send("Second question").ok());
  EXPECT_EQ(a.messages().back().content, answer);
}

TEST(Conversation, LoadRefusesAnotherModelAndDamagedFilesAndChangesNothing) {
  auto engine = OpenTiny();
  auto other = OpenTiny(/*seed=*/1);
  ASSERT_TRUE(engine && other);
  const std::string file = TestDir() + "/refuse.gemlet-session";
  Conversation a(*engine, *engine->tokenizer(), Greedy());
  ASSERT_TRUE(a.Send("Hello").ok());
  ASSERT_TRUE(a.Save(file).ok());
  EXPECT_NE(ModelFingerprint(engine->file()), ModelFingerprint(other->file()));

  Conversation b(*other, *other->tokenizer(), Greedy());
  ASSERT_TRUE(b.Send("Hi there").ok());
  const auto history = b.session().history();
  auto unchanged = [&] {
    EXPECT_EQ(b.session().history(), history);
    EXPECT_EQ(b.messages().size(), 2u);
  };
  Status st = b.Load(file);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("different model"), std::string::npos) << st.message();
  unchanged();

  auto bytes = ReadFileToString(file);
  ASSERT_TRUE(bytes.ok());
  auto write = [&](const std::string& name, const std::string& data) {
    std::ofstream(TestDir() + "/" + name, std::ios::binary) << data;
    return TestDir() + "/" + name;
  };
  std::string flipped = *bytes;
  flipped[flipped.size() / 2] ^= 0x40;
  std::string version = *bytes;
  version[8] = 2;
  // A NaN as the last V value, with a checksum that matches (a hostile rather than a damaged
  // file): refused before it can reach the attention.
  std::string nan_kv = *bytes;
  const uint32_t nan_bits = 0x7fc00000u;
  std::memcpy(nan_kv.data() + nan_kv.size() - 12, &nan_bits, 4);
  const uint64_t fnv = SessionFileChecksum(nan_kv.data(), nan_kv.size() - 8);
  std::memcpy(nan_kv.data() + nan_kv.size() - 8, &fnv, 8);
  for (const auto& [path, code, words] : std::vector<std::tuple<std::string, ErrorCode, std::string>>{
           {write("flipped", flipped), ErrorCode::kCorrupt, "damaged"},
           {write("nan", nan_kv), ErrorCode::kCorrupt, "NaN or infinity"},
           {write("truncated", bytes->substr(0, bytes->size() - 100)), ErrorCode::kCorrupt, ""},
           {write("short", bytes->substr(0, 11)), ErrorCode::kCorrupt, "not a gemlet session file"},
           {write("version", version), ErrorCode::kInvalidArgument, "version 2"},
           {write("model", std::string("GEMLET\0\x1a", 8) + bytes->substr(8)), ErrorCode::kCorrupt, "not a gemlet"},
           {TestDir() + "/missing", ErrorCode::kNotFound, ""}}) {
    Status s = a.Load(path);
    EXPECT_FALSE(s.ok()) << path;
    if (code != ErrorCode::kNotFound) {
      EXPECT_EQ(s.code(), code) << path << ": " << s.ToString();
    }
    EXPECT_NE(s.message().find(words), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(path), std::string::npos) << "the error names the file: " << s.message();
  }
  EXPECT_EQ(a.messages().size(), 2u);
}

TEST(Conversation, StopPolicyRefusesAMessageThatDoesNotFit) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  Conversation conv(*engine, *engine->tokenizer(), Greedy(/*ctx=*/80, /*max_tokens=*/10));
  Status last = Status::Ok();
  for (int i = 0; i < 10 && last.ok(); ++i) {
    const auto history = conv.session().history();
    const size_t msgs = conv.messages().size();
    auto t = conv.Send("Message number " + std::to_string(i));
    if (!t.ok()) {
      last = t.status();
      EXPECT_EQ(conv.session().history(), history);  // nothing changed
      EXPECT_EQ(conv.messages().size(), msgs);
    } else {
      EXPECT_LE(t->position, 80);
    }
  }
  EXPECT_EQ(last.code(), ErrorCode::kOutOfRange);
  EXPECT_NE(last.message().find("context is full"), std::string::npos) << last.message();
  EXPECT_NE(last.message().find("/reset"), std::string::npos) << last.message();
  conv.Reset();
  EXPECT_EQ(conv.position(), 0);
  EXPECT_TRUE(conv.Send("Again").ok());
}

TEST(Conversation, DropOldestDropsWholeTurnsKeepsTheSystemPromptAndPrefillsTheRest) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  const Tokenizer& tok = *engine->tokenizer();
  ConversationOptions o = Greedy(/*ctx=*/100, /*max_tokens=*/10);
  o.policy = ContextPolicy::kDropOldest;
  o.system = "Be brief.";
  Conversation conv(*engine, tok, o);
  std::vector<std::string> notices;
  TurnCallbacks cb;
  cb.on_notice = [&](const std::string& n) { notices.push_back(n); };
  bool dropped = false;
  for (int i = 0; i < 6; ++i) {
    auto t = conv.Send("Message number " + std::to_string(i), cb);
    ASSERT_TRUE(t.ok()) << i << ": " << t.status().ToString();
    EXPECT_LE(t->position, 100);
    if (t->dropped_messages == 0) continue;
    dropped = true;
    EXPECT_TRUE(t->full_prefill);
    EXPECT_EQ(t->dropped_messages % 2, 0);  // whole turns
    ASSERT_GE(conv.messages().size(), 2u);
    EXPECT_EQ(conv.messages().front().role, "user");
    EXPECT_NE(conv.messages().front().content, "Message number 0");
    // The cache holds the system turn, the kept turns and the new one, rendered afresh.
    std::vector<ChatMessage> kept(conv.messages().begin(), conv.messages().end() - 1);
    auto prompt = conv.Render(kept, true);
    ASSERT_TRUE(prompt.ok());
    EXPECT_TRUE(StartsWith(conv.session().history(), Encode(tok, *prompt)));
    EXPECT_TRUE(StartsWith(conv.session().history(), Encode(tok, "<bos><|turn>system\nBe brief.<turn|>\n")));
  }
  EXPECT_TRUE(dropped);
  ASSERT_FALSE(notices.empty());
  EXPECT_NE(notices.front().find("dropped"), std::string::npos) << notices.front();
}

// shift keeps the system turn and the first turn, drops the oldest turns after them, and
// prefills only what follows that kept start: it stays in the cache.
TEST(Conversation, ShiftKeepsTheFirstTurnAndPrefillsOnlyWhatFollowsIt) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  const Tokenizer& tok = *engine->tokenizer();
  ConversationOptions o = Greedy(/*ctx=*/120, /*max_tokens=*/10);
  o.policy = ContextPolicy::kShift;
  o.system = "Be brief.";
  Conversation conv(*engine, tok, o);
  std::vector<std::string> notices;
  TurnCallbacks cb;
  cb.on_notice = [&](const std::string& n) { notices.push_back(n); };
  ASSERT_TRUE(conv.Send("Message number 0", cb).ok());
  // The start the shift keeps in the cache: the system turn and the first turn (at least up
  // to its answer; with random weights the answer as generated need not re-tokenize the same).
  auto first = conv.Render(std::vector<ChatMessage>(conv.messages().begin(), conv.messages().begin() + 1), true);
  ASSERT_TRUE(first.ok());
  const std::vector<int32_t> start = Encode(tok, *first);
  int shifts = 0;
  for (int i = 1; i < 8; ++i) {
    auto t = conv.Send("Message number " + std::to_string(i), cb);
    ASSERT_TRUE(t.ok()) << i << ": " << t.status().ToString();
    EXPECT_LE(t->position, 120);
    ASSERT_GE(conv.messages().size(), 4u);
    EXPECT_EQ(conv.messages()[0].content, "Message number 0") << "the first turn stays";
    EXPECT_TRUE(StartsWith(conv.session().history(), start)) << i;
    if (t->dropped_messages == 0) continue;
    ++shifts;
    EXPECT_EQ(t->dropped_messages % 2, 0);  // whole turns
    EXPECT_NE(conv.messages()[2].content, "Message number 1");
    // Only what follows the kept start was prefilled: it was reused from the cache.
    EXPECT_GE(t->cached_tokens, static_cast<int64_t>(start.size())) << i;
    EXPECT_LT(t->prefill_tokens + t->cached_tokens, 120);
  }
  EXPECT_GT(shifts, 0);
  ASSERT_FALSE(notices.empty());
  EXPECT_NE(notices.front().find("after the first turn"), std::string::npos) << notices.front();
}

TEST(Conversation, ShouldStopInterruptsTheAnswerAndTheNextTurnClosesIt) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  const Tokenizer& tok = *engine->tokenizer();
  ConversationOptions o = Greedy(4096, 40);
  o.stop_at_eog = false;
  Conversation conv(*engine, tok, o);
  int polls = 0;
  std::string shown;
  TurnCallbacks cb;
  cb.should_stop = [&] { return ++polls > 20; };
  cb.on_text = [&](std::string_view t, bool) { shown += t; };
  auto t = conv.Send("Write a long story", cb);
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->interrupted);
  EXPECT_GT(t->generated_tokens, 5);
  EXPECT_LT(t->generated_tokens, 30);
  EXPECT_EQ(conv.messages().back().content, shown);  // what was shown is what is kept
  // Every shown token is in the cache; the next turn closes the answer with <turn|>.
  const int64_t pos = conv.position();
  auto t2 = conv.Send("Stop there");
  ASSERT_TRUE(t2.ok());
  EXPECT_FALSE(t2->full_prefill);
  EXPECT_EQ(t2->cached_tokens, pos);
  EXPECT_EQ(t2->prefill_tokens,
            static_cast<int64_t>(Encode(tok, "<turn|>\n<|turn>user\nStop there<turn|>\n<|turn>model\n").size()));

  // Interrupted during the prefill: no answer, and the next turn prefills everything again.
  ConversationOptions small = o;
  small.session.prefill_chunk = 2;
  Conversation c2(*engine, tok, small);
  TurnCallbacks now;
  now.should_stop = [] { return true; };
  auto t3 = c2.Send("A message long enough for several prefill chunks", now);
  ASSERT_TRUE(t3.ok());
  EXPECT_TRUE(t3->interrupted);
  EXPECT_EQ(t3->generated_tokens, 0);
  EXPECT_TRUE(c2.messages().empty());
  auto t4 = c2.Send("Hello");
  ASSERT_TRUE(t4.ok());
  EXPECT_TRUE(t4->full_prefill);
  EXPECT_TRUE(StartsWith(c2.session().history(), Encode(tok, "<bos><|turn>user\nHello<turn|>\n<|turn>model\n")));
}

TEST(Conversation, SystemAndThinkingChangesPrefillTheConversationAgain) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  const Tokenizer& tok = *engine->tokenizer();
  Conversation conv(*engine, tok, Greedy());
  ASSERT_TRUE(conv.Send("Hello").ok());
  conv.SetThinking(true);
  conv.SetSystem("Think first.");
  auto t = conv.Send("Why?");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->full_prefill);
  EXPECT_EQ(t->cached_tokens, 2) << "only <bos><|turn> is shared with what the cache held";
  EXPECT_TRUE(StartsWith(conv.session().history(),
                         Encode(tok, "<bos><|turn>system\n<|think|>\nThink first.<turn|>\n<|turn>user\nHello<turn|>\n")));
  EXPECT_FALSE(conv.Send("").ok());  // an empty message is refused
  EXPECT_FALSE(conv.Send(" \n ").ok());
}

TEST(AnswerStream, SplitsTheThoughtChannelFromTheAnswer) {
  auto engine = OpenTiny();
  ASSERT_TRUE(engine);
  const Tokenizer& tok = *engine->tokenizer();
  std::string seen;
  AnswerStream s(tok, [&](std::string_view t, bool thinking) { seen += (thinking ? "[T]" : "[A]") + std::string(t); });
  for (int32_t id : Encode(tok, "<|channel>thought\nabc<channel|>Hello<turn|>")) s.Push(id);
  s.Flush();
  EXPECT_EQ(s.thinking(), "abc");
  EXPECT_EQ(s.content(), "Hello");
  EXPECT_EQ(seen.find("thought"), std::string::npos) << seen;


  // Tool calls are read, other special tokens are not shown.
  AnswerStream calls(tok, nullptr);
  for (int32_t id : Encode(tok, "<|turn>Hi <|tool_call>call:get{key:<|\"|>v<|\"|>}<tool_call|>")) calls.Push(id);
  calls.Flush();
  EXPECT_EQ(calls.content(), "Hi ");
  ASSERT_EQ(calls.tool_calls().size(), 1u);
  EXPECT_EQ(calls.tool_calls()[0].name, "get");
  EXPECT_EQ(calls.tool_calls()[0].arguments, nlohmann::json({{"key", "v"}}));

  // Past an end of turn (generation that ignores it) the text goes on as a new segment.
  AnswerStream past(tok, nullptr);
  for (int32_t id : Encode(tok, "one<turn|>two")) past.Push(id);
  past.Flush();
  EXPECT_EQ(past.content(), "onetwo");
}

}  // namespace chat_conversation_test
}  // namespace gemlet::runtime
