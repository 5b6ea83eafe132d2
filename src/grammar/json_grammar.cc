#include "grammar/json_grammar.h"

#include <map>
#include <vector>

namespace gemlet::grammar {
namespace {

struct JsonRule {
  std::string name;
  std::string body;
  std::vector<std::string> deps;
};

// A GBNF literal of plain text (quotes and backslashes escaped; other bytes as they are).
std::string Lit(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The rules in `syntax`, in the order they are written out, names and references prefixed.
// Every rule that stands for a whole value ends with `ws` (whitespace belongs to the token
// before it), so no two `ws` are ever adjacent.
std::vector<JsonRule> Rules(const JsonSyntax& syntax, const std::string& p) {
  const std::string ws = syntax.whitespace ? " " + p + "ws" : "";
  const std::string q = Lit(syntax.quote);
  auto deps = [&](std::vector<std::string> names) {
    std::vector<std::string> out;
    for (auto& n : names)
      if (n != "ws" || syntax.whitespace) out.push_back(n);
    return out;
  };
  const std::string key = syntax.bare_keys ? p + "key" : p + "string";
  std::vector<JsonRule> rules = {
      {"value", p + "object | " + p + "array | " + p + "string | " + p + "number | " + p +
                    "boolean | " + p + "null",
       {"object", "array", "string", "number", "boolean", "null"}},
      {"object",
       "\"{\"" + ws + " ( " + key + " \":\"" + ws + " " + p + "value ( \",\"" + ws + " " + key +
           " \":\"" + ws + " " + p + "value )* )? \"}\"" + ws,
       deps({"ws", syntax.bare_keys ? "key" : "string", "value"})},
      {"array",
       "\"[\"" + ws + " ( " + p + "value ( \",\"" + ws + " " + p + "value )* )? \"]\"" + ws,
       deps({"ws", "value"})},
      {"string", q + " " + p + "char* " + q + ws, deps({"char", "ws"})},
  };
  if (syntax.raw_strings) {
    rules.push_back({"char", "[^" + syntax.raw_exclude + "]", {}});
  } else {
    // Any code point but '"', '\', the controls and the surrogates; or an escape.
    rules.push_back({"char", R"([^"\\\x00-\x1F\uD800-\uDFFF] | "\\" ( ["\\/bfnrt] | "u" )" + p +
                                 "hex4 )",
                     {"hex4"}});
    // Four hex digits that do not name a surrogate (D800..DFFF).
    rules.push_back({"hex4", R"(( [0-9a-cA-Ce-fE-F] [0-9a-fA-F] | [dD] [0-7] ) [0-9a-fA-F]{2})", {}});
  }
  if (syntax.bare_keys) rules.push_back({"key", "[A-Za-z_] [A-Za-z0-9_]{0,63}" + ws, deps({"ws"})});
  rules.push_back(
      {"number",
       R"("-"? ( "0" | [1-9] [0-9]{0,15} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?)" + ws,
       deps({"ws"})});
  rules.push_back({"integer", R"("-"? ( "0" | [1-9] [0-9]{0,15} ))" + ws, deps({"ws"})});
  rules.push_back({"boolean", R"(( "true" | "false" ))" + ws, deps({"ws"})});
  rules.push_back({"null", R"("null")" + ws, deps({"ws"})});
  // Formats (string contents). Days per month: February has 28 (29 Feb is never written).
  rules.push_back(
      {"date",
       R"([0-9]{4} "-" ( ( "0" [13578] | "1" [02] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | ( "0" [469] | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | "02-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) ))",
       {}});
  rules.push_back(
      {"time",
       R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,6} )? ( "Z" | [-+] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))",
       {}});
  rules.push_back({"date-time", p + "date \"T\" " + p + "time", {"date", "time"}});
  rules.push_back(
      {"uuid", R"([0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12})", {}});
  rules.push_back(
      {"email",
       R"([a-zA-Z0-9_+-]{1,32} ( "." [a-zA-Z0-9_+-]{1,32} ){0,4} "@" ( [a-zA-Z0-9] ( [a-zA-Z0-9-]{0,30} [a-zA-Z0-9] )? "." ){1,4} [a-zA-Z] [a-zA-Z0-9]{0,15})",
       {}});
  rules.push_back({"ipv4", p + "octet \".\" " + p + "octet \".\" " + p + "octet \".\" " + p + "octet", {"octet"}});
  rules.push_back({"octet", R"("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9]? [0-9])", {}});
  // At most 5 labels of at most 32 characters: within the 253 characters of a host name.
  rules.push_back({"hostname", p + "label ( \".\" " + p + "label ){0,4}", {"label"}});
  rules.push_back({"label", R"([a-zA-Z0-9] ( [a-zA-Z0-9-]{0,30} [a-zA-Z0-9] )?)", {}});
  rules.push_back(
      {"uri",
       R"([a-zA-Z] [a-zA-Z0-9+.-]{0,15} "://" )" + p +
           R"(hostname ( ":" [0-9]{1,5} )? ( "/" [a-zA-Z0-9._~-]{0,32} ){0,8} ( "?" [a-zA-Z0-9._~=&-]{0,64} )?)",
       {"hostname"}});
  if (syntax.whitespace) rules.push_back({"ws", R"(( " " | "\n" " "{0,8} )?)", {}});
  return rules;
}

const std::vector<JsonRule>& JsonDefault() {
  static const std::vector<JsonRule> kRules = Rules(JsonSyntax{}, "");
  return kRules;
}

const JsonRule* Find(const std::vector<JsonRule>& rules, std::string_view name) {
  for (const JsonRule& r : rules)
    if (name == r.name) return &r;
  return nullptr;
}

}  // namespace

std::string JsonRuleDefinition(std::string_view name) {
  const JsonRule* r = Find(JsonDefault(), name);
  return r ? r->name + " ::= " + r->body : std::string();
}

std::set<std::string> JsonRuleDependencies(std::string_view name) {
  const JsonRule* r = Find(JsonDefault(), name);
  if (!r) return {};
  return {r->deps.begin(), r->deps.end()};
}

const std::set<std::string>& JsonRuleNames() {
  static const std::set<std::string> kNames = [] {
    std::set<std::string> s;
    for (const JsonRule& r : JsonDefault()) s.insert(r.name);
    s.insert("key");  // the bare-key syntax's
    return s;
  }();
  return kNames;
}

std::string JsonRules(const std::set<std::string>& names, const JsonSyntax& syntax,
                      const std::string& prefix) {
  const std::vector<JsonRule> rules = Rules(syntax, prefix);
  std::set<std::string> all;
  std::vector<std::string> todo(names.begin(), names.end());
  while (!todo.empty()) {
    std::string n = todo.back();
    todo.pop_back();
    if (!all.insert(n).second) continue;
    if (const JsonRule* r = Find(rules, n))
      for (const std::string& d : r->deps) todo.push_back(d);
  }
  std::string out;
  for (const JsonRule& r : rules)
    if (all.count(r.name)) out += prefix + r.name + " ::= " + r.body + "\n";
  return out;
}

std::string JsonRules(const std::set<std::string>& names) { return JsonRules(names, JsonSyntax{}, ""); }

std::string JsonRuleRef(std::string_view name, const JsonSyntax& syntax, const std::string& prefix) {
  if (name == "ws" && !syntax.whitespace) return "";
  return prefix + std::string(name);
}

std::string JsonObjectGrammar() { return "root ::= object\n" + JsonRules({"object"}); }
std::string JsonValueGrammar() { return "root ::= value\n" + JsonRules({"value"}); }

}  // namespace gemlet::grammar
