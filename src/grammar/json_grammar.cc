#include "grammar/json_grammar.h"

#include <map>
#include <vector>

namespace gemlet::grammar {
namespace {

struct JsonRule {
  const char* name;
  const char* body;
  std::vector<const char*> deps;
};

// The rules, in the order they are written out. Every rule that stands for a whole value ends
// with `ws` (whitespace belongs to the token before it), so no two `ws` are ever adjacent.
const std::vector<JsonRule>& Rules() {
  static const std::vector<JsonRule> kRules = {
      {"value", "object | array | string | number | boolean | null",
       {"object", "array", "string", "number", "boolean", "null"}},
      {"object",
       R"("{" ws ( string ":" ws value ( "," ws string ":" ws value )* )? "}" ws)",
       {"ws", "string", "value"}},
      {"array", R"("[" ws ( value ( "," ws value )* )? "]" ws)", {"ws", "value"}},
      {"string", R"("\"" char* "\"" ws)", {"char", "ws"}},
      // Any code point but '"', '\', the controls and the surrogates; or an escape.
      {"char", R"([^"\\\x00-\x1F\uD800-\uDFFF] | "\\" ( ["\\/bfnrt] | "u" hex4 ))", {"hex4"}},
      // Four hex digits that do not name a surrogate (D800..DFFF).
      {"hex4", R"(( [0-9a-cA-Ce-fE-F] [0-9a-fA-F] | [dD] [0-7] ) [0-9a-fA-F]{2})", {}},
      {"number",
       R"("-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )? ws)",
       {"ws"}},
      {"integer", R"("-"? ( "0" | [1-9] [0-9]{0,15} ) ws)", {"ws"}},
      {"boolean", R"(( "true" | "false" ) ws)", {"ws"}},
      {"null", R"("null" ws)", {"ws"}},
      // Formats (string contents). Days per month: February has 28 (29 Feb is never written).
      {"date",
       R"([0-9]{4} "-" ( ( "0" [13578] | "1" [02] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | ( "0" [469] | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | "02-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) ))",
       {}},
      {"time",
       R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,6} )? ( "Z" | [-+] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))",
       {}},
      {"date-time", R"(date "T" time)", {"date", "time"}},
      {"uuid",
       R"([0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12})", {}},
      {"email",
       R"([a-zA-Z0-9_+-]{1,32} ( "." [a-zA-Z0-9_+-]{1,32} ){0,4} "@" ( [a-zA-Z0-9] ( [a-zA-Z0-9-]{0,30} [a-zA-Z0-9] )? "." ){1,4} [a-zA-Z] [a-zA-Z0-9]{0,15})",
       {}},
      {"ipv4", R"(octet "." octet "." octet "." octet)", {"octet"}},
      {"octet", R"("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9]? [0-9])", {}},
      // At most 5 labels of at most 32 characters: within the 253 characters of a host name.
      {"hostname", R"(label ( "." label ){0,4})", {"label"}},
      {"label", R"([a-zA-Z0-9] ( [a-zA-Z0-9-]{0,30} [a-zA-Z0-9] )?)", {}},
      {"uri",
       R"([a-zA-Z] [a-zA-Z0-9+.-]{0,15} "://" hostname ( ":" [0-9]{1,5} )? ( "/" [a-zA-Z0-9._~-]{0,32} ){0,8} ( "?" [a-zA-Z0-9._~=&-]{0,64} )?)",
       {"hostname"}},
      {"ws", R"(( " " | "\n" " "{0,8} )?)", {}},
  };
  return kRules;
}

const JsonRule* Find(std::string_view name) {
  for (const JsonRule& r : Rules())
    if (name == r.name) return &r;
  return nullptr;
}

}  // namespace

std::string JsonRuleDefinition(std::string_view name) {
  const JsonRule* r = Find(name);
  return r ? std::string(r->name) + " ::= " + r->body : std::string();
}

std::set<std::string> JsonRuleDependencies(std::string_view name) {
  const JsonRule* r = Find(name);
  if (!r) return {};
  return {r->deps.begin(), r->deps.end()};
}

const std::set<std::string>& JsonRuleNames() {
  static const std::set<std::string> kNames = [] {
    std::set<std::string> s;
    for (const JsonRule& r : Rules()) s.insert(r.name);
    return s;
  }();
  return kNames;
}

std::string JsonRules(const std::set<std::string>& names) {
  std::set<std::string> all;
  std::vector<std::string> todo(names.begin(), names.end());
  while (!todo.empty()) {
    std::string n = todo.back();
    todo.pop_back();
    if (!all.insert(n).second) continue;
    for (const std::string& d : JsonRuleDependencies(n)) todo.push_back(d);
  }
  std::string out;
  for (const JsonRule& r : Rules())
    if (all.count(r.name)) out += std::string(r.name) + " ::= " + r.body + "\n";
  return out;
}

std::string JsonObjectGrammar() { return "root ::= object\n" + JsonRules({"object"}); }
std::string JsonValueGrammar() { return "root ::= value\n" + JsonRules({"value"}); }

}  // namespace gemlet::grammar
