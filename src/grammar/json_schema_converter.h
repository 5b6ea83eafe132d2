// The JSON Schema converter's internals (json_schema.h is the interface), shared by
// json_schema.cc (the walk, scalar types, references, anyOf/allOf) and json_schema_containers.cc
// (objects and arrays). Not for other users.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "grammar/json_grammar.h"

namespace gemlet::grammar::json_schema_internal {

using Json = nlohmann::ordered_json;

inline constexpr int64_t kMaxCount = 10000;  // lengths and item counts (the GBNF repetition limit)

// Not a keyword that only annotates or holds sub-schemas ($defs).
bool IsConstraining(const std::string& keyword);
// A JSON pointer token: ~ as ~0, / as ~1.
std::string PointerToken(const std::string& key);
// "json schema #PTR: what" (kInvalidArgument).
Status Error(const std::string& ptr, const std::string& what);
// A GBNF string literal of `bytes` (UTF-8 passes through).
std::string Literal(std::string_view bytes);
std::string Join(const std::vector<std::string>& parts, const char* sep);
// A character of a bare object key.
inline bool BareKeyChar(uint32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
// One alternative as is, several in a group.
std::string Alternatives(const std::vector<std::string>& alts);
// s[key] as a count in [0, kMaxCount]: a larger maxLength / maxItems is taken as kMaxCount (a
// subset), a larger minimum is an error.
Result<int64_t> Count(const Json& s, const std::string& key, const std::string& ptr);
// `item` repeated lo..hi times (hi < 0: unbounded), in GBNF.
std::string Repeat(const std::string& item, int64_t lo, int64_t hi);

// One conversion: a walk over the schema that writes one rule per sub-schema. Visit returns a
// GBNF expression (a rule name) for the schema at JSON pointer `ptr`; `hint` names its rules.
class Converter {
 public:
  Converter(const Json& root, const JsonSyntax& syntax, const std::string& prefix)
      : root_(root), syn_(syntax), p_(prefix), q_(Literal(syntax.quote)) {
    for (const std::string& n : JsonRuleNames()) taken_.insert(p_ + n);
    taken_.insert(p_ + "root");
  }

  Result<std::string> Run() {
    rules_.push_back({p_ + "root", ""});
    ref_rules_[""] = p_ + "root";
    unconsumed_ = {""};
    ASSIGN_OR_RETURN(std::string expr, Visit(root_, "", "root"));
    rules_[0].second = expr;
    // A rule made for the root schema alone (not a $ref target) becomes the root rule itself.
    for (size_t i = 1; i < rules_.size(); ++i)
      if (rules_[i].first == expr && own_rules_.count(expr)) {
        rules_[0].second = rules_[i].second;
        rules_.erase(rules_.begin() + i);
        break;
      }
    std::string out;
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out + JsonRules(used_, syn_, p_);
  }

 private:
  // A reference to JSON rule `json_rule` ("" for whitespace in a syntax without any).
  std::string Use(const std::string& json_rule) {
    used_.insert(json_rule);
    return JsonRuleRef(json_rule, syn_, p_);
  }

  std::string NewName(const std::string& hint) {
    std::string base;
    for (char c : hint) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      if (ok) base += c;
      else if (!base.empty() && base.back() != '-') base += '-';
    }
    while (!base.empty() && base.back() == '-') base.pop_back();
    if (base.empty()) base = "r";
    if (base.size() > 48) base.resize(48);
    base = p_ + base;
    std::string name = base;
    for (int i = 2; taken_.count(name); ++i) name = base + "-" + std::to_string(i);
    taken_.insert(name);
    return name;
  }

  std::string AddRule(const std::string& hint, const std::string& body) {
    std::string name = NewName(hint);
    rules_.push_back({name, body});
    own_rules_.insert(name);
    return name;
  }

  Result<std::string> Visit(const Json& s, const std::string& ptr, const std::string& hint);

  Result<std::string> OfType(const Json& s, const std::string& type, const std::string& ptr,
                             const std::string& hint);

  Result<std::string> Values(const Json& s, const std::vector<std::string>& types,
                             const std::string& ptr, const std::string& hint);

  Result<std::string> Number(const Json& s, bool integer, const std::string& ptr,
                             const std::string& hint);

  Result<std::string> String(const Json& s, const std::string& ptr, const std::string& hint);

  Result<std::string> Array(const Json& s, const std::string& ptr, const std::string& hint);
  Result<std::string> Object(const Json& s, const std::string& ptr, const std::string& hint);
  Result<std::string> Ref(const Json& ref, const std::string& ptr);
  Result<std::string> AnyOf(const Json& list, const std::string& ptr, const std::string& hint);
  Result<std::string> AllOf(const Json& s, const std::string& ptr, const std::string& hint);
  Result<std::string> ExtraKey(const std::vector<std::string>& declared, const std::string& hint);

  const Json& root_;
  const JsonSyntax& syn_;
  const std::string p_;  // every rule name's prefix
  const std::string q_;  // the GBNF literal of the string quote
  std::vector<std::pair<std::string, std::string>> rules_;  // name, body; in creation order
  std::set<std::string> taken_;                             // rule names in use
  std::set<std::string> own_rules_;  // AddRule's rules: each referred to by one place only
  std::set<std::string> used_;                              // JSON rules referred to
  std::map<std::string, std::string> ref_rules_;            // JSON pointer -> rule name
  std::vector<std::string> unconsumed_;  // refs entered since the last consumed character
};

}  // namespace gemlet::grammar::json_schema_internal
