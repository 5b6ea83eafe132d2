#include "grammar/gbnf.h"

#include <gtest/gtest.h>

#include <string>

namespace gemlet::grammar {
namespace gbnf_test {

std::string ErrorOf(std::string_view text) {
  auto g = ParseGbnf(text);
  EXPECT_FALSE(g.ok()) << text;
  return g.ok() ? std::string("(parsed)") : g.status().message();
}

TEST(Gbnf, CompilesToFlatElements) {
  auto g = ParseGbnf("root ::= \"ab\" | [x-z^] other\nother ::= [^\\n]\n");
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->num_rules(), 2u);
  EXPECT_EQ(g->rule_names[g->root], "root");
  using K = ElementKind;
  const std::vector<Element> want = {
      {K::kChar, 'a'}, {K::kChar, 'b'}, {K::kAlt, 0}, {K::kChar, 'x'}, {K::kCharRangeUpper, 'z'},
      {K::kCharAlt, '^'}, {K::kRuleRef, 1}, {K::kEnd, 0},
      {K::kCharNot, '\n'}, {K::kEnd, 0}};
  EXPECT_EQ(g->elements, want);
  EXPECT_EQ(g->rule_start, (std::vector<uint32_t>{0, 8}));
}

TEST(Gbnf, RepetitionsBecomeHelperRules) {
  auto g = ParseGbnf("root ::= \"a\"* \"b\"+ \"c\"? \"d\"{2,3} \"e\"{2,}\n");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->ToString(),
            "root ::= root_1 \"b\" root_2 root_3 \"dd\" root_4 \"ee\" root_5\n"
            "root_1 ::= \"a\" root_1 | \"\"\n"
            "root_2 ::= \"b\" root_2 | \"\"\n"
            "root_3 ::= \"c\" | \"\"\n"
            "root_4 ::= \"d\" | \"\"\n"
            "root_5 ::= \"e\" root_5 | \"\"\n");
}

TEST(Gbnf, GroupsCommentsEscapesAndLines) {
  auto g = ParseGbnf(
      "# a comment line\n"
      "root ::= ( \"x\" # inside a group\n"
      "  | \"\\x41\\u00e9\\U0001F600\\t\\\"\" ) |\n"
      "  . [\\]\\[\\-] \"é\"\n"
      "\n");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->ToString(),
            "root ::= root_1 | . [\\]\\[\\-] \"\\xE9\"\n"
            "root_1 ::= \"x\" | \"A\\xE9\\U0001F600\\t\\\"\"\n");
}

TEST(Gbnf, AnEmptyLastAlternativeBeforeTheNextRule) {
  // Found by gbnf_fuzz: ToString writes "x ::= a |", and the next line is a rule, not an item.
  auto g = ParseGbnf("root ::= item |\nitem ::= \"a\" |  # empty\n\nother ::= item\n");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->ToString(), "root ::= item | \"\"\nitem ::= \"a\" | \"\"\nother ::= item\n");
  // And an empty rule (found by gbnf_fuzz too): "y ::=" alone would run on into the next line.
  auto e = ParseGbnf("root ::= x | y\nx ::= \"2\"\ny ::=\n");
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->ToString(), "root ::= x | y\nx ::= \"2\"\ny ::= \"\"\n");
  auto e2 = ParseGbnf(e->ToString());
  ASSERT_TRUE(e2.ok()) << e2.status().message();
  EXPECT_EQ(e2->elements, e->elements);
  auto again = ParseGbnf(g->ToString());
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->elements, g->elements);
}

TEST(Gbnf, StartRuleCanBeChosen) {
  auto g = ParseGbnf("a ::= \"x\"\nb ::= a a\n", "b");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->rule_names[g->root], "b");
  EXPECT_EQ(ErrorOf("a ::= \"x\"\n"), "gbnf: no start rule 'root'");
}

TEST(Gbnf, ErrorsSayWhereAndWhat) {
  EXPECT_EQ(ErrorOf("root ::= \"a\"\nitem = \"b\"\n"), "gbnf 2:6: expected '::=' after the rule name 'item', found '='");
  EXPECT_EQ(ErrorOf("root ::= \"abc\n"), "gbnf 1:10: unterminated string literal (expected a closing '\"')");
  EXPECT_EQ(ErrorOf("root ::= [a-z\n"), "gbnf 1:10: unterminated character class (expected a closing ']')");
  EXPECT_EQ(ErrorOf("root ::= []\n"), "gbnf 1:10: empty character class");
  EXPECT_EQ(ErrorOf("root ::= [z-a]\n"), "gbnf 1:11: character range with its end below its start");
  EXPECT_EQ(ErrorOf("root ::= ( \"a\" | \"b\"\n"),
            "gbnf 2:1: expected ')' to close the '(' at 1:10, found the end of the input");
  EXPECT_EQ(ErrorOf("root ::= \"a\" )\n"), "gbnf 1:14: expected an item, '|' or the end of the line, found ')'");
  EXPECT_EQ(ErrorOf("root ::= * \"a\"\n"), "gbnf 1:10: '*' has no item before it to repeat");
  EXPECT_EQ(ErrorOf("root ::= \"a\"{x}\n"), "gbnf 1:14: expected a number after '{', found 'x'");
  EXPECT_EQ(ErrorOf("root ::= \"a\"{2,1}\n"), "gbnf 1:13: repetition {m,n} with n < m");
  EXPECT_EQ(ErrorOf("root ::= \"a\"{1,2\n"), "gbnf 1:17: expected '}' to close the '{' at 1:13, found the end of the line");
  EXPECT_EQ(ErrorOf("root ::= \"a\"{20000}\n"), "gbnf 1:13: repetition count over 10000");
  EXPECT_EQ(ErrorOf("root ::= \"\\q\"\n"),
            "gbnf 1:11: unknown escape '\\q' (expected one of \\n \\t \\r \\\\ \\\" \\[ \\] \\- \\^ \\xHH \\uHHHH \\UHHHHHHHH)");
  EXPECT_EQ(ErrorOf("root ::= \"\\x4\"\n"), "gbnf 1:14: expected 2 hex digits after '\\x', found '\"'");
  EXPECT_EQ(ErrorOf("root ::= \"\\U00110000\"\n"), "gbnf 1:11: code point out of range (over U+10FFFF)");
  EXPECT_EQ(ErrorOf("root ::= \"\xff\"\n"), "gbnf 1:11: invalid UTF-8");
  EXPECT_EQ(ErrorOf("root ::= item\n"), "gbnf 1:10: undefined rule 'item'");
  EXPECT_EQ(ErrorOf("root ::= \"a\"\nroot ::= \"b\"\n"), "gbnf 2:1: rule 'root' is defined twice (first at 1:1)");
  EXPECT_EQ(ErrorOf("::= \"a\"\n"), "gbnf 1:1: expected a rule name, found ':'");
  EXPECT_EQ(ErrorOf("root ::= \"a\" b ::= \"c\"\n"),
            "gbnf 1:16: expected an item, '|' or the end of the line, found '::=' (a rule definition must start a new line)");
  // Columns count code points.
  EXPECT_EQ(ErrorOf("root ::= \"é\" ]\n"), "gbnf 1:14: expected an item, '|' or the end of the line, found ']'");
}

TEST(Gbnf, LeftRecursionIsAnError) {
  EXPECT_EQ(ErrorOf("root ::= expr\nexpr ::= term | expr \"+\" term\nterm ::= [0-9]\n"),
            "gbnf 2:1: rule 'expr' is left-recursive: expr -> expr");
  EXPECT_EQ(ErrorOf("root ::= a\na ::= b \"x\"\nb ::= opt a\nopt ::= \"y\" |\n"),
            "gbnf 2:1: rule 'a' is left-recursive: a -> b -> a");
  // Through a nullable repetition: ("x"?)* loops without consuming.
  EXPECT_EQ(ErrorOf("root ::= (\"x\"?)*\n"), "gbnf 1:16: rule 'root_3' is left-recursive: root_3 -> root_3");
  // Right recursion and recursion after a character are fine.
  EXPECT_TRUE(ParseGbnf("root ::= \"(\" root \")\" | \"\"\n").ok());
  EXPECT_TRUE(ParseGbnf("root ::= [a-z] root | [a-z]\n").ok());
}

TEST(Gbnf, LimitsBoundTheExpansion) {
  GbnfLimits limits;
  limits.max_elements = 100;
  auto g = ParseGbnf("root ::= \"ab\"{60}\n", "root", limits);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().message(), "gbnf 1:14: the grammar is too large (over 100 elements after expanding repetitions)");
  limits.max_nesting = 2;
  EXPECT_EQ(ParseGbnf("root ::= (((\"a\")))\n", "root", limits).status().message(),
            "gbnf 1:12: groups nested deeper than 2");
}

}  // namespace gbnf_test
}  // namespace gemlet::grammar
