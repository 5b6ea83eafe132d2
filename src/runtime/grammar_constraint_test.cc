// GrammarConstraint over the real Gemma 4 vocabulary: the symbol convention for control
// tokens, the free-block and lazy schedules, rollback, and sampling from random logits (a
// random-weight model tries every token) that always ends in text the grammar matches.
#include "runtime/grammar_constraint.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>
#include <vector>

#include "format/gemma4_tokens.h"
#include "runtime/sampler.h"
#include "text/tokenizer_test_util.h"

namespace gemlet::runtime {
namespace grammar_constraint_test {

using testing_util::RealTokenizer;

const std::shared_ptr<const grammar::Vocabulary>& Vocab() {
  static const auto* v = [] {
    auto r = GrammarVocabulary(RealTokenizer());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return new std::shared_ptr<const grammar::Vocabulary>(std::move(r).value());
  }();
  return *v;
}

int32_t Id(std::string_view piece) {
  const int32_t id = RealTokenizer().PieceToId(piece);
  EXPECT_GE(id, 0) << piece;
  return id;
}

std::unique_ptr<GrammarConstraint> Make(const std::string& gbnf, const GrammarSchedule& s = {}) {
  auto r = GrammarConstraint::Create(gbnf, Vocab(), s);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

std::vector<int32_t> Encode(std::string_view text) { return RealTokenizer().Encode(text).value(); }

// Random logits for a random-weight model: windows of one pool of N(0, 3) draws at random
// offsets in [0, 65536) (drawing 262,144 fresh normals per step would dominate the tests' time).
const std::vector<float>& LogitPool() {
  static const auto* pool = [] {
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 3.0f);
    auto* p = new std::vector<float>(RealTokenizer().size() + 65536);
    for (float& l : *p) l = nd(rng);
    return p;
  }();
  return *pool;
}

void AcceptAll(GrammarConstraint& c, const std::vector<int32_t>& ids) {
  for (int32_t t : ids) ASSERT_TRUE(c.Accept(t).ok()) << "token " << t;
}

TEST(GrammarConstraintTest, VocabularyMapsPiecesBytesAndControlTokens) {
  const grammar::Vocabulary& v = *Vocab();
  ASSERT_EQ(v.size(), static_cast<size_t>(RealTokenizer().size()));
  EXPECT_EQ(v.piece(Id("▁hello")), " hello");
  EXPECT_EQ(v.piece(Id("<0x0A>")), "\n");
  EXPECT_EQ(v.kind(Id("<0xF4>")), grammar::TokenKind::kSpecial);  // could spell a symbol
  EXPECT_EQ(v.kind(gemma4::kTurnCloseId), grammar::TokenKind::kEnd);
  EXPECT_EQ(v.kind(gemma4::kToolCallOpenId), grammar::TokenKind::kText);
  EXPECT_EQ(v.piece(gemma4::kToolCallOpenId), "\xF4\x80\x80\xB0");  // U+100030: id 48
  EXPECT_EQ(GrammarSymbol(48), "\\U00100030");
}

TEST(GrammarConstraintTest, AllowsExactlyWhatTheGrammarContinues) {
  auto c = Make("root ::= \"yes\" | \"no\"");
  EXPECT_TRUE(c->Allows(Id("yes")));
  EXPECT_TRUE(c->Allows(Id("no")));
  EXPECT_FALSE(c->Allows(Id("maybe")));
  EXPECT_FALSE(c->Allows(gemma4::kTurnCloseId));  // not before the grammar may end
  EXPECT_FALSE(c->Accept(Id("maybe")).ok());
  ASSERT_TRUE(c->Accept(Id("yes")).ok());
  EXPECT_TRUE(c->Complete());
  EXPECT_TRUE(c->Allows(gemma4::kTurnCloseId));
  std::vector<uint32_t> mask(Vocab()->mask_words());
  c->Mask(mask);
  int allowed = 0;
  for (uint32_t w : mask) allowed += __builtin_popcount(w);
  EXPECT_EQ(allowed, static_cast<int>(RealTokenizer().eog_ids().size()));
}

TEST(GrammarConstraintTest, ControlTokensAreNamedBySymbol) {
  auto c = Make("root ::= \"" + GrammarSymbol(gemma4::kToolCallOpenId) + "call\"");
  EXPECT_FALSE(c->Allows(Id("<")));  // the marker's characters do not spell it
  ASSERT_TRUE(c->Accept(gemma4::kToolCallOpenId).ok());
  EXPECT_TRUE(c->Allows(Id("call")));
}

TEST(GrammarConstraintTest, FreeBlockFirstThenTheGrammar) {
  GrammarSchedule s{.block_open = gemma4::kChannelOpenId, .block_close = gemma4::kChannelCloseId, .triggers = {}};
  auto c = Make("root ::= \"yes\" | \"no\"", s);
  EXPECT_TRUE(c->Allows(gemma4::kChannelOpenId));
  EXPECT_TRUE(c->Allows(Id("yes")));
  EXPECT_FALSE(c->Allows(Id("hello")));
  auto open = c->Clone();
  ASSERT_TRUE(c->Accept(gemma4::kChannelOpenId).ok());
  EXPECT_FALSE(c->constraining());
  AcceptAll(*c, Encode("thought\nmaybe, perhaps"));
  EXPECT_FALSE(c->Allows(gemma4::kTurnCloseId));  // the block must close first
  ASSERT_TRUE(c->Accept(gemma4::kChannelCloseId).ok());
  EXPECT_TRUE(c->constraining());
  EXPECT_FALSE(c->Allows(Id("hello")));
  ASSERT_TRUE(c->Accept(Id("no")).ok());
  EXPECT_TRUE(c->Complete());
  // Without a block the grammar starts at once, and a late block_open is refused.
  ASSERT_TRUE(open->Accept(Id("yes")).ok());
  EXPECT_FALSE(open->Allows(gemma4::kChannelOpenId));
}

TEST(GrammarConstraintTest, LazyWaitsForTheTriggerAndFreesAfterTheMatch) {
  const std::string close = GrammarSymbol(gemma4::kToolCallCloseId);
  GrammarSchedule s{.triggers = {gemma4::kToolCallOpenId}};
  auto c = Make("root ::= \"call:f{}\" \"" + close + "\"", s);
  EXPECT_TRUE(c->Allows(Id("hello")));
  EXPECT_TRUE(c->Allows(gemma4::kTurnCloseId));
  AcceptAll(*c, Encode("Let me check."));
  ASSERT_TRUE(c->Accept(gemma4::kToolCallOpenId).ok());
  EXPECT_TRUE(c->constraining());
  EXPECT_FALSE(c->Allows(Id("hello")));
  EXPECT_FALSE(c->Allows(gemma4::kTurnCloseId));
  AcceptAll(*c, Encode("call:f{}"));
  ASSERT_TRUE(c->Accept(gemma4::kToolCallCloseId).ok());
  EXPECT_FALSE(c->constraining());
  EXPECT_FALSE(c->Complete());  // lazy: never complete, the output goes on freely
  EXPECT_TRUE(c->Allows(Id("hello")));
  // A second call is constrained from its start again.
  ASSERT_TRUE(c->Accept(gemma4::kToolCallOpenId).ok());
  EXPECT_FALSE(c->Allows(Id("hello")));
  EXPECT_TRUE(c->Allows(Id("call")));
}

TEST(GrammarConstraintTest, RollbackRestoresEveryPhase) {
  GrammarSchedule s{.triggers = {gemma4::kToolCallOpenId}};
  auto c = Make("root ::= \"call:f{\" [a-z]+ \"}\" \"" + GrammarSymbol(gemma4::kToolCallCloseId) + "\"", s);
  AcceptAll(*c, Encode("Hi"));
  ASSERT_TRUE(c->Accept(gemma4::kToolCallOpenId).ok());
  const std::vector<int32_t> body = Encode("call:f{abc}");
  AcceptAll(*c, body);
  ASSERT_TRUE(c->Accept(gemma4::kToolCallCloseId).ok());
  EXPECT_FALSE(c->constraining());
  // Back to just after the trigger: the grammar's start again.
  ASSERT_TRUE(c->Rollback(static_cast<int64_t>(body.size()) + 1).ok());
  EXPECT_TRUE(c->constraining());
  EXPECT_TRUE(c->Allows(Id("call")));
  EXPECT_FALSE(c->Allows(Id("hello")));
  // Back before the trigger: free.
  ASSERT_TRUE(c->Rollback(1).ok());
  EXPECT_FALSE(c->constraining());
  EXPECT_TRUE(c->Allows(Id("hello")));
  EXPECT_FALSE(c->Rollback(1000).ok());
  // And forward again the same way.
  ASSERT_TRUE(c->Accept(gemma4::kToolCallOpenId).ok());
  AcceptAll(*c, body);
  EXPECT_TRUE(c->Allows(gemma4::kToolCallCloseId));
}

// Random logits at temperature 1, many seeds: every output the constrained sampler ends is
// matched by the grammar (checked by an independent regular expression).
TEST(GrammarConstraintTest, SampledOutputsAlwaysMatch) {
  const std::string gbnf =
      "root ::= \"{\\\"n\\\": \" num \", \\\"tags\\\": [\" (tag (\", \" tag){0,3})? \"]}\"\n"
      "num ::= \"-\"? [1-9] [0-9]{0,4}\n"
      "tag ::= \"\\\"\" [a-z]{1,8} \"\\\"\"\n";
  const std::regex check(R"(\{"n": -?[1-9][0-9]{0,4}, "tags": \[("[a-z]{1,8}"(, "[a-z]{1,8}"){0,3})?\]\})");
  const int32_t V = RealTokenizer().size();
  const std::vector<float>& pool = LogitPool();
  // One compiled grammar, a clone per seed (as the server keeps compiled grammars): the
  // clones share its mask cache, so later seeds mostly find their masks made.
  const auto prototype = Make(gbnf);
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    auto c = prototype->Clone();
    SamplerOptions o;
    o.seed = seed;
    Sampler s(o);
    std::mt19937 rng(static_cast<uint32_t>(seed));
    std::vector<int32_t> out;
    for (int step = 0; step < 200 && !c->Complete(); ++step) {
      std::span<const float> logits(pool.data() + rng() % 65536, V);
      const int32_t t = s.Sample(logits, *c);
      ASSERT_NE(t, kNoToken);
      ASSERT_TRUE(c->Accept(t).ok());
      if (RealTokenizer().IsEog(t)) break;
      out.push_back(t);
    }
    ASSERT_TRUE(c->Complete()) << "seed " << seed;
    const std::string text = RealTokenizer().Decode(out).value();
    EXPECT_TRUE(std::regex_match(text, check)) << "seed " << seed << ": " << text;
  }
}

// Unbounded strings and lists, which random logits almost never close on their own: with a
// budget, every output is whole within it (and ends with an end token).
TEST(GrammarConstraintTest, BudgetSteersToAWholeOutput) {
  const std::string gbnf =
      "root ::= \"{\\\"a\\\": \\\"\" [^\"\\\\]* \"\\\", \\\"b\\\": [\" ( [0-9]+ ( \",\" [0-9]+ )* )? \"]}\"\n";
  const std::regex check(R"(\{"a": "[^"\\]*", "b": \[([0-9]+(,[0-9]+)*)?\]\})");
  const int32_t V = RealTokenizer().size();
  const std::vector<float>& pool = LogitPool();
  const auto prototype = Make(gbnf);  // cloned per run, as above
  for (int64_t budget : {20, 28, 48}) {  // the shortest document is 18 characters
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      auto c = prototype->Clone();
      SamplerOptions o;
      o.seed = seed;
      Sampler s(o);
      std::mt19937 rng(static_cast<uint32_t>(seed));
      std::vector<int32_t> out;
      bool ended = false;
      for (int64_t i = 0; i < budget; ++i) {
        c->SetBudget(budget - i);
        std::span<const float> logits(pool.data() + rng() % 65536, V);
        const int32_t t = s.Sample(logits, *c);
        ASSERT_NE(t, kNoToken);
        ASSERT_TRUE(c->Accept(t).ok());
        if (RealTokenizer().IsEog(t)) {
          ended = true;
          break;
        }
        out.push_back(t);
      }
      const std::string text = RealTokenizer().Decode(out).value();
      EXPECT_TRUE(ended) << "budget " << budget << " seed " << seed << ": " << text;
      EXPECT_TRUE(std::regex_match(text, check)) << "budget " << budget << " seed " << seed << ": " << text;
    }
  }
}

}  // namespace grammar_constraint_test
}  // namespace gemlet::runtime
