// JSON Schema "pattern" (an ECMAScript regular expression, as JSON Schema specifies) to GBNF.
// The result matches the JSON-encoded contents of the strings the pattern matches (no quotes):
// a matched '"' is written \", a '\' as \\, a control character as \n, \t, ... or \u00XX.
//
// Supported subset (everything else is an error naming it and its offset):
//  * literal characters (UTF-8), `.` (any character but \n \r U+2028 U+2029);
//  * classes [abc] [a-z] [^...] with the escapes below inside;
//  * escapes \d \D \w \W \s \S, \t \n \r \f \v \0, \xHH, \uHHHH, \u{H...}, and an escaped
//    syntax character (one of ^ $ \ . * + ? ( ) [ ] { } | / and - inside a class);
//  * groups ( ) and (?: ) (capturing means nothing here), alternation |;
//  * quantifiers * + ? {n} {n,} {n,m}, each also lazy (a trailing ?: the same set of strings);
//  * anchors: ^ at the start and $ at the end of a top-level alternative. An alternative
//    without ^ may be preceded by any characters, one without $ followed by any (JSON Schema
//    patterns are not anchored).
// Not supported: backreferences, lookahead/lookbehind, \b \B, named groups, \p{...}, \c.
// Sizes: a {n,m} count above 1000 is refused.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace gemlet::grammar {

// `any_char_rule`: the name of a GBNF rule matching one JSON-encoded character (any), used for
// the unanchored ends. Errors (kInvalidArgument): "pattern offset N: what".
Result<std::string> RegexToGbnf(std::string_view pattern, std::string_view any_char_rule);

}  // namespace gemlet::grammar
