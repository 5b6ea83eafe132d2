#include "grammar/step_table.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammar/grammar_test_util.h"

namespace gemlet::grammar {
namespace step_table_test {

Grammar Compile(const char* text) {
  auto g = ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(g).value();
}

// Random walks of bytes (JSON-ish characters, UTF-8 lead and continuation bytes, anything):
// every step through the table is the state Matcher::StepByte gives, whether the table
// remembers it, computes it, or is full (kUnlisted with the state written out).
void CheckWalks(const Grammar& g, size_t max_states, uint32_t seed) {
  StepTable table(g, max_states);
  std::mt19937 rng(seed);
  const std::string common = "{}[],:\"\\ \n0123456789.-+eEtrufalsn";
  const std::string utf8 = "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\x80\xBF\xFF";
  const Matcher start(std::make_shared<const Grammar>(g));
  size_t unlisted = 0, steps = 0;
  for (int walk = 0; walk < 200; ++walk) {
    MatchState ref = start.state();
    int32_t id = table.Intern(ref);
    ASSERT_GE(id, 0);  // the start state is the first one interned
    MatchState own;
    for (int len = 0; len < 24; ++len) {
      // Mostly a byte that keeps the walk alive (the first of a few random tries), so that the
      // walks go deep; dead steps are checked where no try lives.
      uint8_t byte = 0;
      MatchState next;
      bool alive = false;
      for (int attempt = 0; attempt < 12 && !alive; ++attempt) {
        const uint32_t r = rng() % 10;
        byte = r < 7   ? common[rng() % common.size()]
               : r < 9 ? utf8[rng() % utf8.size()]
                       : static_cast<uint8_t>(rng());
        alive = Matcher::StepByte(g, ref, byte, next);
      }
      int32_t to;
      if (id >= 0) {
        to = table.Step(id, byte, &own);
      } else {
        MatchState after;
        to = Matcher::StepByte(g, own, byte, after) ? StepTable::kUnlisted : StepTable::kDead;
        own = std::move(after);
      }
      ++steps;
      ASSERT_EQ(alive, to != StepTable::kDead) << "walk " << walk << " byte " << int{byte};
      if (!alive) break;
      if (to >= 0) {
        ASSERT_EQ(table.state(to), next) << "walk " << walk << " step " << len;
        bool empty = false;
        for (size_t i = 0; i < next.num_stacks(); ++i) empty |= next.stack(i).empty();
        EXPECT_EQ(table.has_empty_stack(to), empty);
        EXPECT_EQ(table.num_stacks(to), next.num_stacks());
        // The same step again is looked up, with the same answer.
        EXPECT_EQ(table.Step(id, byte, &own), to);
      } else {
        ++unlisted;
        ASSERT_EQ(own, next) << "walk " << walk << " step " << len;
      }
      ref = std::move(next);
      id = to;
    }
  }
  EXPECT_LE(table.size(), max_states);
  EXPECT_GT(steps, 1000u);  // the walks went deep (a JSON value can end a walk early)
  if (max_states < 16) {
    EXPECT_GT(unlisted, 0u) << "a full table was never reached";
  }
}

TEST(StepTable, StepsEqualStepByteOnJson) { CheckWalks(Compile(testing::kJsonGbnf), 4096, 1); }

TEST(StepTable, AFullTableStillAnswersExactly) { CheckWalks(Compile(testing::kJsonGbnf), 6, 2); }

TEST(StepTable, StepsEqualStepByteOnALanguage) { CheckWalks(Compile(testing::kLanguageGbnf), 4096, 3); }

TEST(StepTable, FewDistinctStatesInsideAString) {
  const Grammar g = Compile(testing::kJsonGbnf);
  StepTable table(g);
  Matcher m(std::make_shared<const Grammar>(g));
  ASSERT_TRUE(m.AcceptBytes("{\"k\": \"ab"));
  int32_t id = table.Intern(m.state());
  MatchState unused;
  for (char c : std::string("the quick brown fox jumps over the lazy dog")) {
    id = table.Step(id, static_cast<uint8_t>(c), &unused);
    ASSERT_GE(id, 0);
  }
  // Every letter and space inside a string body leads back to the one body state.
  EXPECT_LE(table.size(), 2u);
}

}  // namespace step_table_test
}  // namespace gemlet::grammar
