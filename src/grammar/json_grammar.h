// The JSON grammar in GBNF: the rules for any JSON value (RFC 8259) that the schema converter
// (json_schema.h) builds on, and the grammar of response_format {"type": "json_object"}.
//
// Whitespace is bounded: after every token (a literal, a punctuation mark, a whole value) comes
// at most one `ws`, which is nothing, one space, or one newline followed by at most
// kMaxIndent spaces. A model can therefore never loop on whitespace.
//
// Limits that keep every accepted text parseable by common JSON parsers (nlohmann::json and
// JavaScript's JSON.parse both refuse or overflow otherwise):
//  * integers have at most 16 digits, fractions at most 16, exponents at most 2 digits;
//  * a \u escape never names a surrogate (U+D800..U+DFFF): characters beyond the Basic
//    Multilingual Plane are written as UTF-8, never as an escaped surrogate pair;
//  * raw string characters are any code point except '"', '\\', the controls U+0000..U+001F
//    and the surrogates.
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace gemlet::grammar {

inline constexpr int kMaxIndent = 8;

// The GBNF definition ("name ::= body") of the JSON rule `name`: "ws", "value", "object",
// "array", "string", "char" (one JSON-encoded character of a string), "number", "integer",
// "boolean", "null", "hex4" (four hex digits, no surrogate), and the string formats
// "date", "time", "date-time", "uuid", "email", "ipv4", "hostname", "uri" (their contents,
// without the quotes; see json_schema.h for what each enforces; "octet" and "label" are parts). Empty for an unknown name.
std::string JsonRuleDefinition(std::string_view name);

// The JSON rules `name` refers to directly (e.g. "object" -> ws, string, value).
std::set<std::string> JsonRuleDependencies(std::string_view name);

// Every JSON rule name above (reserved: the converter never gives its own rules these names).
const std::set<std::string>& JsonRuleNames();

// Collects the definitions of `names` and of everything they depend on, one per line, in a
// fixed order (the order of JsonRuleNames).
std::string JsonRules(const std::set<std::string>& names);

// The grammar of any JSON object (response_format json_object): "root ::= object" + rules.
std::string JsonObjectGrammar();
// The grammar of any JSON value.
std::string JsonValueGrammar();

}  // namespace gemlet::grammar
