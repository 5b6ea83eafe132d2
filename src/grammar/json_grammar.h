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

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <set>
#include <string>
#include <string_view>

namespace gemlet::grammar {

inline constexpr int kMaxIndent = 8;

// The concrete syntax JSON values are written in: JSON itself (the default), or another
// spelling of the same values, such as a model's tool-call argument syntax (e.g. objects as
// {key:value,...} with bare keys, strings between a quote symbol, no whitespace).
struct JsonSyntax {
  // The text written before and after every string (JSON: a double quote). It may be a
  // symbol code point standing for a control token.
  std::string quote = "\"";
  // Strings hold raw characters (any code point but those of `raw_exclude`), no escapes; false:
  // JSON's string characters and escapes.
  bool raw_strings = false;
  // With raw_strings: a GBNF class body of the code points a string may not hold (the quote
  // among them), e.g. "\\U00100000-\\U0010FFFF".
  std::string raw_exclude;
  // Object keys are bare names ([A-Za-z_][A-Za-z0-9_]*) instead of strings.
  bool bare_keys = false;
  // Whitespace (bounded, as above) between tokens; false: none anywhere.
  bool whitespace = true;
  // How a constant value (enum, const) is spelled; empty: its JSON text.
  std::function<std::string(const nlohmann::ordered_json&)> write;

  bool is_json() const { return quote == "\"" && !raw_strings && !bare_keys && whitespace && !write; }
};

// The JSON rules of `names` and everything they depend on, written in `syntax`, every rule
// name (definitions and references) prefixed with `prefix`. A syntax without whitespace has
// no "ws" rule: refer to rules through JsonRuleRef, which gives "" for it.
std::string JsonRules(const std::set<std::string>& names, const JsonSyntax& syntax,
                      const std::string& prefix);
// How an expression refers to JSON rule `name` in `syntax` with `prefix`: the prefixed name,
// or "" for "ws" when the syntax has no whitespace.
std::string JsonRuleRef(std::string_view name, const JsonSyntax& syntax, const std::string& prefix);

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
