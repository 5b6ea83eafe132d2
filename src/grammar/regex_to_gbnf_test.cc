#include "grammar/regex_to_gbnf.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/json_grammar.h"
#include "grammar/matcher.h"

namespace gemlet::grammar {
namespace regex_to_gbnf_test {

// The grammar of the JSON-encoded contents (no quotes) that `pattern` matches.
std::shared_ptr<const Grammar> Compile(const std::string& pattern) {
  auto expr = RegexToGbnf(pattern, "char");
  EXPECT_TRUE(expr.ok()) << pattern << ": " << expr.status().message();
  if (!expr.ok()) return nullptr;
  auto g = ParseGbnf("root ::= " + *expr + "\n" + JsonRules({"char"}));
  EXPECT_TRUE(g.ok()) << pattern << " -> " << *expr << ": " << g.status().message();
  return g.ok() ? std::make_shared<const Grammar>(std::move(g).value()) : nullptr;
}

bool FullMatch(const std::shared_ptr<const Grammar>& g, const std::string& s) {
  Matcher m(g);
  return m.AcceptBytes(s) && m.IsAccepting();
}

struct Case {
  const char* pattern;
  std::vector<std::string> match;     // JSON-encoded string contents
  std::vector<std::string> no_match;
};

TEST(RegexToGbnf, PatternsMatchTheirJsonEncodedStrings) {
  const std::vector<Case> cases = {
      {"^abc$", {"abc"}, {"ab", "abcd", "xabc"}},
      {"abc", {"abc", "xxabcyy", "\\\"abc\\n"}, {"ab", "acb"}},
      {"^a.c$", {"abc", "a\\\"c", "a\\\\c", "aéc", "a\\tc"}, {"a\\nc", "a\\rc", "ac"}},
      {"^[a-c]+[^a-c0-9]$", {"abX", "c!", "a\\\"", "a\\n"}, {"ab", "abc", "a1", "d!"}},
      {"^\\d{2,3}\\D?$", {"12", "123", "12x"}, {"1", "1234", "12xx"}},
      {"^\\w+\\s\\S$", {"a_1 x", "Z\\tx"}, {"a x y", "a  x", "a- x"}},
      {"^(ab|cd)*e?$", {"", "ab", "abcd", "cde", "e"}, {"abc", "ee", "ba"}},
      {"^(?:x|y){3}$", {"xyx", "yyy"}, {"xy", "xyxy"}},
      {"^a{2,}b+?c*?$", {"aab", "aaaabbcc"}, {"ab", "aa"}},
      {"^\\x41\\u00e9\\u{1F600}$", {"Aé\U0001F600"}, {"Ae\U0001F600"}},
      {"^[\\-\\]\\\\.]$", {"-", "]", "\\\\", "."}, {"a", "\\\\\\\\"}},
      {"^\\.\\*\\+\\?\\(\\)\\[\\{\\}\\|\\/\\^\\$$", {".*+?()[{}|/^$"}, {"a"}},
      {"^\"\\\\$", {"\\\"\\\\"}, {"\"\\", "\\\"\\"}},
      {"^\\t\\n\\r\\f\\v\\0$", {"\\t\\n\\r\\f\\u000B\\u0000"}, {"\\t\\n\\r\\f\\v\\0"}},
      {"^a$|^b", {"a", "b", "bcd"}, {"ab", "cb"}},
      {"^$", {""}, {"a"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pattern);
    auto g = Compile(c.pattern);
    if (!g) continue;
    for (const std::string& s : c.match) EXPECT_TRUE(FullMatch(g, s)) << "should match: " << s;
    for (const std::string& s : c.no_match) EXPECT_FALSE(FullMatch(g, s)) << "should not match: " << s;
  }
}

TEST(RegexToGbnf, UnsupportedConstructsAreErrorsWithOffsets) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"(a", "pattern offset 2: missing ')'"},
      {"a)", "pattern offset 1: unmatched ')'"},
      {"[ab", "pattern offset 3: missing ']'"},
      {"*a", "pattern offset 0: nothing to repeat"},
      {"a**", "pattern offset 2: nothing to repeat"},
      {"a{2,1}", "pattern offset 5: {m,n} with n < m"},
      {"a{1001}", "pattern offset 2: a count above 1000"},
      {"a{x}", "pattern offset 2: expected a number in '{}'"},
      {"a{2", "pattern offset 3: expected '}'"},
      {"(?=a)", "pattern offset 1: lookaround and named groups are not supported"},
      {"(?<n>a)", "pattern offset 1: lookaround and named groups are not supported"},
      {"\\bx", "pattern offset 0: word boundaries (\\b, \\B) are not supported"},
      {"(a)\\1", "pattern offset 3: backreferences are not supported"},
      {"\\p{L}", "pattern offset 0: unsupported escape '\\p'"},
      {"a^b", "pattern offset 1: '^' is supported only at the start of the pattern"},
      {"a$b", "pattern offset 1: '$' is supported only at the end of the pattern"},
      {"(a$)", "pattern offset 2: '$' is supported only at the end of the pattern"},
      {"[z-a]", "pattern offset 1: a range out of order"},
      {"[\\d-z]", "pattern offset 1: a class escape cannot bound a range"},
      {"\\x4", "pattern offset 0: expected 2 hex digits after \\x"},
      {"[\\u12]", "pattern offset 1: expected 4 hex digits after \\u"},
      {"\\uD800", "pattern offset 0: a surrogate code point, which JSON text cannot hold"},
      {"[^\\s\\S]", "pattern offset 7: a class that matches nothing"},
      {"\\", "pattern offset 1: a '\\' at the end"},
      {"\\01", "pattern offset 1: octal escapes are not supported"},
      {"\xff", "pattern offset 0: invalid UTF-8"},
  };
  for (const auto& [pattern, message] : cases) {
    auto r = RegexToGbnf(pattern, "char");
    ASSERT_FALSE(r.ok()) << pattern << " gave " << *r;
    EXPECT_EQ(r.status().message(), message) << pattern;
  }
}

}  // namespace regex_to_gbnf_test
}  // namespace gemlet::grammar
