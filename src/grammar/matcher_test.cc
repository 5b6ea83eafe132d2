#include "grammar/matcher.h"
#include "grammar/token_symbols.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar_test_util.h"

namespace gemlet::grammar {
namespace matcher_test {

struct Case {
  const char* name;
  const char* gbnf;
  std::vector<std::string> match;
  std::vector<std::string> no_match;  // neither complete nor (where noted) a viable prefix
};

std::shared_ptr<const Grammar> Compile(const char* text) {
  auto g = ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::make_shared<const Grammar>(std::move(g).value());
}

bool FullMatch(const std::shared_ptr<const Grammar>& g, std::string_view s) {
  Matcher m(g);
  return m.AcceptBytes(s) && m.IsAccepting();
}

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"arithmetic", testing::kArithmeticGbnf,
       {"1", "1+2", "(1+2)*3", "-4/(2-1)", "((7))", "12*-3+4"},
       {"", "1+", "(1", "1)", "+1", "1++2", "a", "1 + 2"}},
      {"json", testing::kJsonGbnf,
       {"{}", "[]", "0", "-1.5e+10", "\"a\\n\\u00e9\"", "{\"a\": [1, 2, {\"b\": null}]}", "[true,false]",
        " {\n\t\"k\" : \"v\" } ", "\"日本\""},
       {"{", "{\"a\"}", "[1,]", "01", "\"\\x\"", "\"a", "tru", "{\"a\":1,}", "\"\x01\"", "1.", "[1 2]"}},
      {"list", "root ::= item (\",\" \" \"? item)*\nitem ::= [a-z]+\n",
       {"a", "ab,cd", "a, b,c", "x,y, z"},
       {"", ",", "a,", "a,,b", "a,  b", "A"}},
      {"language", testing::kLanguageGbnf,
       {"x = 1;", "print(x);", "while (i < 10) { i = i + 1; print(i); }", "a=1;b=a*2;",
        "while(x){while(y){}}"},
       {"x = ;", "print x;", "while (i) { i = 1; ", "1 = x;", "x = 1"}},
      {"csv", "root ::= row (\"\\n\" row)* \"\\n\"?\nrow ::= field (\",\" field)*\n"
              "field ::= [^,\\n\"]* | \"\\\"\" ([^\"] | \"\\\"\\\"\")* \"\\\"\"\n",
       {"a,b,c", "a,b\nc,d\n", "\"q,\"\"x\"\"\",2", "", ",,", "x\n"},
       {"\"a", "a\"b", "\"a\"b", "a\n\"", "\"\"\""}},
      {"repetition bounds", "root ::= \"a\"{2,4} \"b\"{3} \"c\"{1,} \"d\"{0,2} \"e\"{0}\n",
       {"aabbbc", "aaaabbbcccdd", "aaabbbcd"},
       {"abbbc", "aaaaabbbc", "aabbc", "aabbbbc", "aabbb", "aabbbcddd", "aabbbce"}},
      {"negated classes", "root ::= [^abc]+ \"!\" [^\\x00-\\x7F] [^a-zA-Z0-9]\n",
       {"xyz!é.", "d!日 ", "A!\U0001F600_"},
       {"a!é.", "xyz!e.", "xyz!éa", "!é."}},
      {"utf-8", "root ::= \"héllo \" [α-ω]+ \" \" [\\U0001F600-\\U0001F64F] \"日本\"?\n",
       {"héllo αβγ \U0001F600", "héllo ω \U0001F64F日本"},
       {"hello α \U0001F600", "héllo Α \U0001F600", "héllo α \U0001F680", "héllo α \U0001F600日"}},
      {"any char", "root ::= \"<\" . . \">\"\n", {"<ab>", "<éü>", "<\U0001F600\n>"}, {"<a>", "<abc>", "<ab"}},
      {"balanced", "root ::= (\"(\" root \")\")*\n", {"", "()", "(())()", "((()()))"}, {"(", ")", "(()", "())("}},
      {"optional empty alternatives", "root ::= (\"a\" | \"\") \"b\" | \"c\"?\n", {"ab", "b", "c", ""},
       {"a", "cb", "bb"}},
      {"comments and lines", "# leading comment\nroot ::= x # trailing\n  | y\n\nx ::= (\n  \"1\"\n  | \"2\" )\ny ::= \"z\"\n",
       {"1", "2", "z"}, {"12", "y", ""}},
  };
  return cases;
}

TEST(Matcher, GrammarsMatchAndReject) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    auto g = Compile(c.gbnf);
    for (const auto& s : c.match) EXPECT_TRUE(FullMatch(g, s)) << "should match: " << s;
    for (const auto& s : c.no_match) EXPECT_FALSE(FullMatch(g, s)) << "should not match: " << s;
  }
}

TEST(Matcher, ByteByByteEqualsAllAtOnce) {
  // Every split of every matching string, down to single bytes (UTF-8 split inside code points).
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    auto g = Compile(c.gbnf);
    for (const auto& s : c.match) {
      Matcher m(g);
      for (char ch : s) ASSERT_TRUE(m.AcceptBytes(std::string_view(&ch, 1))) << s;
      EXPECT_TRUE(m.IsAccepting()) << s;
    }
  }
}

TEST(Matcher, PartialCodePointsArePruned) {
  auto g = Compile("root ::= \"é\" | \"日\"\n");
  Matcher m(g);
  EXPECT_FALSE(m.CanAcceptBytes("\xC3\xA8"));  // è: same lead byte, wrong code point
  ASSERT_TRUE(m.AcceptBytes("\xC3"));           // the lead byte of é
  EXPECT_FALSE(m.IsAccepting());                // half a code point is not an end
  EXPECT_FALSE(m.CanAcceptBytes("\xA8"));
  EXPECT_FALSE(m.CanAcceptBytes("a"));          // not a continuation byte
  EXPECT_TRUE(m.AcceptBytes("\xA9"));
  EXPECT_TRUE(m.IsAccepting());
  Matcher m2(g);
  EXPECT_FALSE(m2.CanAcceptBytes("\xE4\xB8"));   // 丁 / 日 differ in the second byte: E4 B8 vs E6 97
  EXPECT_TRUE(m2.CanAcceptBytes("\xE6\x97"));
  EXPECT_FALSE(m2.CanAcceptBytes("\xC4"));       // no é-range code point starts with C4 (U+0100..)
  // Invalid UTF-8 never matches, even for `.`.
  auto any = Compile("root ::= .*\n");
  Matcher a(any);
  EXPECT_FALSE(a.CanAcceptBytes("\x80"));
  EXPECT_FALSE(a.CanAcceptBytes("\xC0\x80"));         // overlong
  EXPECT_FALSE(a.CanAcceptBytes("\xE0\x80\x80"));     // overlong
  EXPECT_FALSE(a.CanAcceptBytes("\xED\xA0\x80" "\xFF"));
  EXPECT_FALSE(a.CanAcceptBytes("\xF4\x90\x80\x80")); // over U+10FFFF
  EXPECT_TRUE(a.CanAcceptBytes("\xF3\xBF\xBF\xBF"));   // U+FFFFF (U+10FFFF is a token symbol's plane)
  // A negated set prunes a lead byte whose every completion it excludes.
  auto neg = Compile("root ::= [^\\u0080-\\u07FF]\n");
  Matcher n(neg);
  EXPECT_FALSE(n.CanAcceptBytes("\xC3"));
  EXPECT_TRUE(n.CanAcceptBytes("\xE0\xA0"));
}

TEST(Matcher, AcceptIsAllOrNothingAndEndsAreReported) {
  auto g = Compile("root ::= \"ab\" \"c\"?\n");
  Matcher m(g);
  EXPECT_FALSE(m.IsAccepting());
  EXPECT_FALSE(m.AcceptBytes("ax"));
  EXPECT_EQ(m.history_size(), 0u);
  EXPECT_TRUE(m.CanAcceptBytes("a"));  // unchanged
  ASSERT_TRUE(m.AcceptBytes("ab"));
  EXPECT_TRUE(m.IsAccepting());
  EXPECT_FALSE(m.IsDeadEnd());
  ASSERT_TRUE(m.AcceptBytes("c"));
  EXPECT_TRUE(m.IsAccepting());
  EXPECT_TRUE(m.IsDeadEnd());
  EXPECT_FALSE(m.AcceptBytes("c"));
}

TEST(Matcher, RollbackRestoresExactly) {
  auto g = Compile(testing::kJsonGbnf);
  Matcher m(g);
  const std::vector<std::string> pieces = {"{\"", "ke", "y\": [", "1, ", "\xE6\x97", "\xA5"};
  std::vector<MatchState> states{m.state()};
  for (const auto& p : pieces) {
    if (p == "\xE6\x97") {
      // A string value needs quotes: feed a code point split across two calls inside one.
      ASSERT_TRUE(m.AcceptBytes("\"")) << p;
      states.push_back(m.state());
    }
    ASSERT_TRUE(m.AcceptBytes(p)) << p;
    states.push_back(m.state());
  }
  ASSERT_EQ(m.history_size(), states.size() - 1);
  Matcher copy = m.Copy();
  EXPECT_FALSE(m.Rollback(states.size()).ok());
  EXPECT_EQ(m.state(), states.back());  // a failed rollback changes nothing
  for (size_t n = 1; n < states.size(); ++n) {
    Matcher r = copy.Copy();
    ASSERT_TRUE(r.Rollback(n).ok());
    EXPECT_EQ(r.state(), states[states.size() - 1 - n]) << n;
    EXPECT_EQ(r.history_size(), states.size() - 1 - n);
  }
  // After a rollback, the same input is accepted again and lands on the same state.
  ASSERT_TRUE(m.Rollback(2).ok());
  ASSERT_TRUE(m.AcceptBytes("\xE6\x97"));
  ASSERT_TRUE(m.AcceptBytes("\xA5"));
  EXPECT_EQ(m.state(), states.back());
  // The history is bounded.
  m.set_max_history(3);
  EXPECT_EQ(m.history_size(), 3u);
  EXPECT_FALSE(m.Rollback(4).ok());
  EXPECT_TRUE(m.Rollback(3).ok());
  EXPECT_EQ(m.state(), states[states.size() - 4]);
}

TEST(Matcher, DuplicateStacksAreMerged) {
  // Two alternatives that reach the same position: one stack, not two.
  auto g = Compile("root ::= (\"a\" | \"a\") \"b\"\n");
  Matcher m(g);
  ASSERT_TRUE(m.AcceptBytes("a"));
  EXPECT_EQ(m.state().num_stacks(), 1u);
  // An ambiguous repetition does not multiply stacks as it goes.
  auto amb = Compile("root ::= (\"a\" | \"a\" \"a\")*\n");
  Matcher n(amb);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(n.AcceptBytes("a"));
  EXPECT_LE(n.state().num_stacks(), 6u);
  EXPECT_TRUE(n.IsAccepting());
}

}  // namespace matcher_test
}  // namespace gemlet::grammar

namespace gemlet::grammar {
namespace matcher_test {

std::string NestedNullable(int depth) {
  // a_k ::= a_{k-1} a_{k-1}, a_1 ::= "x" | "": 2^depth ways to match nothing.
  std::string g = "root ::= a" + std::to_string(depth) + " \"z\"\n";
  for (int k = depth; k > 1; --k) {
    g += "a" + std::to_string(k) + " ::= a" + std::to_string(k - 1) + " a" + std::to_string(k - 1) + "\n";
  }
  return g + "a1 ::= \"x\" | \"\"\n";
}

TEST(Matcher, ExponentialExpansionsAreBounded) {
  auto small = Compile(NestedNullable(6).c_str());
  EXPECT_TRUE(FullMatch(small, "z"));
  EXPECT_TRUE(FullMatch(small, "xxxz"));
  EXPECT_FALSE(FullMatch(small, std::string(65, 'x') + "z"));
  // 2^40 paths: the step stops at its budget instead of running for hours.
  auto big = Compile(NestedNullable(40).c_str());
  Matcher m(big);
  EXPECT_TRUE(m.CanAcceptBytes("x"));
}

// Token symbols (token_symbols.h): `.` and negated classes never match the symbol plane; a
// literal or a positive class that names a symbol does — whole or byte by byte.
TEST(Matcher, OnlyPositiveSetsMatchTokenSymbols) {
  const std::string sym = TokenSymbolUtf8(48);
  auto any = Compile("root ::= .");
  auto neg = Compile("root ::= [^a]");
  auto lit = Compile(("root ::= \"" + TokenSymbolGbnf(48) + "\"").c_str());
  auto cls = Compile(("root ::= [" + TokenSymbolRange() + "]").c_str());
  auto wide = Compile("root ::= [\\x20-\\U0010FFFF]");  // starts below the plane
  EXPECT_FALSE(FullMatch(any, sym));
  EXPECT_FALSE(FullMatch(neg, sym));
  EXPECT_FALSE(FullMatch(wide, sym));
  EXPECT_TRUE(FullMatch(wide, "\xF3\xA0\x80\x80"));
  EXPECT_TRUE(FullMatch(any, "\xF3\xA0\x80\x80"));  // U+E0000, just below the plane
  EXPECT_TRUE(FullMatch(lit, sym));
  EXPECT_TRUE(FullMatch(cls, sym));
  for (auto g : {any, neg, wide}) {
    Matcher m(g);
    EXPECT_FALSE(m.AcceptBytes("\xF4")) << "a partial symbol";
  }
  Matcher m(cls);
  EXPECT_TRUE(m.AcceptBytes("\xF4\x80"));
  EXPECT_TRUE(m.AcceptBytes("\x80\xB0"));
  EXPECT_TRUE(m.IsAccepting());
}

}  // namespace matcher_test
}  // namespace gemlet::grammar
