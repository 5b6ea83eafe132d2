// GBNF grammars (the text format of llama.cpp's grammars/README.md) compiled into a flat array
// of elements, the shape of llama.cpp's llama_grammar_element arrays: each rule is a run of
// alternatives separated by kAlt and closed by kEnd. Repetitions (* + ? {m} {m,} {m,n}) and
// groups are rewritten into helper rules, so the matcher sees only sequences, alternatives,
// rule references and character sets.
//
// The text format:
//   # a comment, to the end of the line
//   root   ::= item ("," ws item)* | "none"     # `root` is the start rule
//   item   ::= [a-z] [a-z0-9_-]{0,15}           # classes, ranges; {m} {m,} {m,n} repetition
//   ws     ::= [ \t\n]*                          # escapes \n \t \r \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH
//   other  ::= [^"\\] | . | "lit\u00e9ral"?     # negation [^...], any code point ., * + ?
// A rule ends at the end of its line; inside ( ), after | and on a next line that starts with |
// it goes on.
// Rule names are [A-Za-z0-9_-]+. Literals are UTF-8; the grammar matches Unicode code points.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gemlet::grammar {

enum class ElementKind : uint8_t {
  kEnd,             // end of a rule's last alternative
  kAlt,             // end of an alternative, another follows
  kRuleRef,         // value: the rule id
  kChar,            // value: a code point; starts a character set (CharAlt/CharRangeUpper follow)
  kCharNot,         // like kChar, for a negated set [^...]
  kCharRangeUpper,  // value: the inclusive upper end of a range whose lower end precedes it
  kCharAlt,         // value: one more code point (or range start) of the set being built
  kCharAny,         // `.`: any code point
};

struct Element {
  ElementKind kind;
  uint32_t value;
  bool operator==(const Element&) const = default;
};

struct Grammar {
  // All rules back to back. Rule r's first element is elements[rule_start[r]].
  std::vector<Element> elements;
  std::vector<uint32_t> rule_start;
  std::vector<std::string> rule_names;  // helper rules are named "<rule>_<n>"
  uint32_t root = 0;                    // the start rule's id

  size_t num_rules() const { return rule_start.size(); }
  // The grammar as GBNF text (one rule per line, helper rules included): for messages and tests.
  std::string ToString() const;
};

// Limits on what a grammar may compile into (outside input: a request's grammar).
struct GbnfLimits {
  size_t max_elements = 1 << 20;   // elements after expanding repetitions
  uint32_t max_repetition = 10000; // m and n of {m,n}
  int max_nesting = 256;           // depth of ( ) groups
};

// Parses and compiles `text`. `start` names the start rule. Errors (kInvalidArgument) say where,
// as "gbnf L:C: " (1-based line and column of the offending character) and what was expected,
// e.g. "gbnf 2:9: expected '::=' after the rule name 'item'". After parsing, the grammar is
// checked: every referenced rule is defined (exactly once), the start rule exists, and no rule
// is left-recursive (a rule that can reach itself without consuming a character, which would
// loop the matcher), e.g. "gbnf 1:1: rule 'expr' is left-recursive: expr -> term -> expr".
Result<Grammar> ParseGbnf(std::string_view text, std::string_view start = "root",
                          const GbnfLimits& limits = {});

}  // namespace gemlet::grammar
