#include "text/stop_matcher.h"

#include <gtest/gtest.h>

namespace gemlet {
namespace stop_matcher_test {

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
  StopMatcher d;
  EXPECT_EQ(Feed(d, {"a", "b"}, &matched), "ab");
}

TEST(StopMatcherTest, HoldsBackOnlyPossibleStarts) {
  StopMatcher m({"abc"});
  bool hit;
  EXPECT_EQ(m.Push("xxab", &hit), "xx");
  EXPECT_EQ(m.Push("d", &hit), "abd");
  EXPECT_FALSE(hit);
}

// Matches looks at text not yet pushed (the streaming decoder's held bytes) without adding it.
TEST(StopMatcherTest, MatchesTextNotYetPushed) {
  StopMatcher m({"Hello"});
  EXPECT_TRUE(m.Matches("Hello"));  // at the very start
  EXPECT_FALSE(m.Matches("Hell"));
  bool hit;
  EXPECT_EQ(m.Push("say He", &hit), "say ");  // "He" held back
  EXPECT_TRUE(m.Matches("llo"));              // completed across the held text
  EXPECT_FALSE(m.Matches("lp"));
  EXPECT_EQ(m.Push("lp", &hit), "Help");  // nothing was added by Matches
  EXPECT_FALSE(hit);
  EXPECT_EQ(m.Push("Hello", &hit), "");
  EXPECT_TRUE(hit);
  EXPECT_FALSE(m.Matches("Hello"));  // after the match nothing more counts
  EXPECT_FALSE(StopMatcher().Matches("Hello"));
}

}  // namespace stop_matcher_test
}  // namespace gemlet
