#include "runtime/prompt_lookup.h"

#include <gtest/gtest.h>

#include <vector>

namespace gemlet::runtime {
namespace prompt_lookup_test {

TEST(PromptLookupTest, LongestSuffixWinsAndTheMostRecentMatch) {
  //                         0  1  2  3  4  5  6  7  8  9 10 11
  const std::vector<int32_t> c = {5, 1, 2, 9, 7, 1, 2, 3, 4, 8, 1, 2};
  // "1 2" occurs ending at 3 (→ 9 7 …) and at 7 (→ 3 4 8 …): the most recent wins.
  LookupMatch m = PromptLookup(c, 4, 1, 3);
  EXPECT_EQ(m.ngram, 2);
  EXPECT_EQ(m.draft, (std::vector<int32_t>{3, 4, 8}));
  // "8 1 2" is not earlier; with min 3 nothing matches.
  EXPECT_EQ(PromptLookup(c, 4, 3, 3).ngram, 0);
  EXPECT_TRUE(PromptLookup(c, 4, 3, 3).draft.empty());
}

TEST(PromptLookupTest, LongerSuffixBeatsAMoreRecentShorterOne) {
  const std::vector<int32_t> c = {4, 5, 6, 10, 11, 6, 12, 4, 5, 6};
  LookupMatch m = PromptLookup(c, 3, 1, 2);
  EXPECT_EQ(m.ngram, 3);  // "4 5 6" at 0 → 10 11, not "6" at 5 → 12
  EXPECT_EQ(m.draft, (std::vector<int32_t>{10, 11}));
}

TEST(PromptLookupTest, AMatchNearTheEndContinuesPeriodically) {
  const std::vector<int32_t> c = {7, 8, 7, 8};
  LookupMatch m = PromptLookup(c, 2, 1, 7);
  EXPECT_EQ(m.ngram, 2);
  // What followed "7 8" at 0 is "7 8", then the copy reads itself: period 2.
  EXPECT_EQ(m.draft, (std::vector<int32_t>{7, 8, 7, 8, 7, 8, 7}));
  // A repeated token (a model stuck in a loop, a row of dashes) drafts max_draft of it, not 1.
  m = PromptLookup(std::vector<int32_t>{1, 2, 3, 3, 3}, 3, 1, 5);
  EXPECT_EQ(m.ngram, 2);  // "3 3" last occurred ending at 4
  EXPECT_EQ(m.draft, (std::vector<int32_t>{3, 3, 3, 3, 3}));
  // A quote far back: its own continuation, no repetition.
  m = PromptLookup(std::vector<int32_t>{4, 5, 6, 7, 8, 9, 1, 4, 5}, 2, 1, 4);
  EXPECT_EQ(m.draft, (std::vector<int32_t>{6, 7, 8, 9}));
  EXPECT_TRUE(PromptLookup(std::vector<int32_t>{1}, 4, 1, 4).draft.empty());
  EXPECT_TRUE(PromptLookup(std::vector<int32_t>{}, 4, 1, 4).draft.empty());
  EXPECT_TRUE(PromptLookup(c, 2, 1, 0).draft.empty());
}

}  // namespace prompt_lookup_test
}  // namespace gemlet::runtime
