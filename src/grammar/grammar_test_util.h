// Grammars shared by the grammar layer's tests and benchmarks.
#pragma once

namespace gemlet::grammar::testing {

inline constexpr const char* kArithmeticGbnf =
    "root   ::= expr\n"
    "expr   ::= term ((\"+\" | \"-\") term)*\n"
    "term   ::= factor ((\"*\" | \"/\") factor)*\n"
    "factor ::= number | \"(\" expr \")\" | \"-\" factor\n"
    "number ::= [0-9]+\n";

inline constexpr const char* kJsonGbnf =
    "root   ::= ws value ws\n"
    "value  ::= object | array | string | number | \"true\" | \"false\" | \"null\"\n"
    "object ::= \"{\" ws ( member (\",\" ws member)* )? \"}\"\n"
    "member ::= string ws \":\" ws value ws\n"
    "array  ::= \"[\" ws ( value ws (\",\" ws value ws)* )? \"]\"\n"
    "string ::= \"\\\"\" ( [^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} ) )* \"\\\"\"\n"
    "number ::= \"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)?\n"
    "ws     ::= [ \\t\\n]*\n";

inline constexpr const char* kLanguageGbnf =
    "root  ::= ws stmt+\n"
    "stmt  ::= ident ws \"=\" ws expr ws \";\" ws\n"
    "        | \"print\" ws \"(\" ws expr ws \")\" ws \";\" ws\n"
    "        | \"while\" ws \"(\" ws expr ws \")\" ws \"{\" ws stmt* \"}\" ws\n"
    "expr  ::= atom (ws [-+*<] ws atom)*\n"
    "atom  ::= ident | [0-9]+ | \"(\" ws expr ws \")\"\n"
    "ident ::= [a-z] [a-z0-9_]*\n"
    "ws    ::= [ \\n]*\n";

}  // namespace gemlet::grammar::testing
