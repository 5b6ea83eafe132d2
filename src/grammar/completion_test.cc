#include "grammar/completion.h"

#include <gtest/gtest.h>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"

namespace gemlet::grammar {
namespace completion_test {

std::shared_ptr<const Grammar> Compile(const std::string& text) {
  auto g = ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return std::make_shared<const Grammar>(std::move(g).value());
}

int64_t MinAfter(const std::string& text, const std::string& input) {
  auto g = Compile(text);
  CompletionCost cost(*g);
  Matcher m(g);
  EXPECT_TRUE(m.AcceptBytes(input)) << input;
  return cost.Min(m.state());
}

TEST(CompletionCostTest, ShortestWayToTheEnd) {
  const std::string g = "root ::= \"ab\" x\nx ::= \"c\" | \"de\"\n";
  EXPECT_EQ(MinAfter(g, ""), 3);
  EXPECT_EQ(MinAfter(g, "a"), 2);
  EXPECT_EQ(MinAfter(g, "ab"), 1);
  EXPECT_EQ(MinAfter(g, "abd"), 1);  // the longer alternative, once taken
  EXPECT_EQ(MinAfter(g, "abc"), 0);
}

TEST(CompletionCostTest, RecursionAndRepetition) {
  const std::string nest = "root ::= \"(\" root \")\" | \"x\"\n";
  EXPECT_EQ(MinAfter(nest, ""), 1);
  EXPECT_EQ(MinAfter(nest, "(("), 3);  // x ) )
  EXPECT_EQ(MinAfter(nest, "((x)"), 1);
  const std::string rep = "root ::= \"{\" [a-z]{3,5} (\",\" [0-9])* \"}\"\n";
  EXPECT_EQ(MinAfter(rep, "{"), 4);
  EXPECT_EQ(MinAfter(rep, "{abcd"), 1);
  EXPECT_EQ(MinAfter(rep, "{abc,"), 2);
}

TEST(CompletionCostTest, JsonObjectFromInsideAString) {
  const std::string json =
      "root ::= \"{\" ws \"\\\"k\\\"\" ws \":\" ws str ws \"}\"\n"
      "str ::= \"\\\"\" [a-z]* \"\\\"\"\nws ::= \" \"?\n";
  EXPECT_EQ(MinAfter(json, "{\"k\": \"abc"), 2);  // " }
  EXPECT_EQ(MinAfter(json, "{ \"k\""), 4);        // : " " }
}

// A code point costs its UTF-8 bytes (byte-fallback tokens at worst), a control-token symbol
// one token; a set costs its cheapest member, a negated set its smallest unlisted code point.
TEST(CompletionCostTest, CountsBytesOfCodePointsAndOneTokenPerSymbol) {
  EXPECT_EQ(MinAfter("root ::= \"\u00e9\"", ""), 2);
  EXPECT_EQ(MinAfter("root ::= \"\u65e5\U0001F600\"", ""), 3 + 4);
  EXPECT_EQ(MinAfter("root ::= \"a\U0001F600b\"", "a"), 4 + 1);
  EXPECT_EQ(MinAfter("root ::= \"\\U00100030\"", ""), 1);  // a symbol: one token
  EXPECT_EQ(MinAfter("root ::= [\u00e9\u65e5-\u65ff]", ""), 2);
  EXPECT_EQ(MinAfter("root ::= [\u65e5-\u65ff\U0001F600]", ""), 3);
  EXPECT_EQ(MinAfter("root ::= [^\\x00-\\x7F]", ""), 2);
  EXPECT_EQ(MinAfter("root ::= [^\\x00-\\x7F\\u0080-\\u07FF]", ""), 3);
  EXPECT_EQ(MinAfter("root ::= [^\"\\\\]", ""), 1);
  EXPECT_EQ(MinAfter("root ::= .", ""), 1);
  // Half-way through a code point: its missing bytes, then the rest.
  const std::string str = "root ::= \"\\\"\" [^\"]* \"\\\"\"";
  EXPECT_EQ(MinAfter(str, "\"\xE6"), 2 + 1);
  EXPECT_EQ(MinAfter(str, "\"\xE6\x97"), 1 + 1);
  EXPECT_EQ(MinAfter(str, "\"\xE6\x97\xA5"), 1);
}

}  // namespace completion_test
}  // namespace gemlet::grammar
