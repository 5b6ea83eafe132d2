#include "grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "grammar/json_grammar.h"
#include "grammar/number_range.h"
#include "grammar/regex_to_gbnf.h"

namespace gemlet::grammar {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kMaxCount = 10000;  // lengths and item counts (the GBNF repetition limit)

const std::set<std::string> kAnnotations = {"title",      "description", "examples", "default",
                                            "deprecated", "readOnly",    "writeOnly", "$schema",
                                            "$id",        "$comment"};
const std::set<std::string> kObjectKeywords = {"properties", "required", "additionalProperties"};
const std::set<std::string> kArrayKeywords = {"items", "prefixItems", "minItems", "maxItems"};
const std::set<std::string> kStringKeywords = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string> kNumberKeywords = {"minimum", "maximum", "exclusiveMinimum",
                                               "exclusiveMaximum"};
const std::set<std::string> kOtherKeywords = {"type",  "enum",  "const", "anyOf",
                                              "oneOf", "allOf", "$ref"};
const std::set<std::string> kContainers = {"$defs", "definitions"};
const std::set<std::string> kTypes = {"null",   "boolean", "object", "array",
                                      "number", "integer", "string"};

bool IsConstraining(const std::string& k) {
  return !kAnnotations.count(k) && !kContainers.count(k);
}

std::string PointerToken(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

Status Error(const std::string& ptr, const std::string& what) {
  return InvalidArgument("json schema #" + ptr + ": " + what);
}

// A GBNF string literal of `bytes` (UTF-8 passes through).
std::string Literal(std::string_view bytes) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out = "\"";
  for (char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// A character of a bare object key.
bool BareKeyChar(uint32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string Join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::string Alternatives(const std::vector<std::string>& alts) {
  return alts.size() == 1 ? alts[0] : "( " + Join(alts, " | ") + " )";
}

bool HasType(const Json& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer") {
    if (v.is_number_integer()) return true;
    if (!v.is_number_float()) return false;
    const double d = v.get<double>();
    return std::isfinite(d) && d == std::floor(d);
  }
  return false;
}

Result<int64_t> Count(const Json& s, const std::string& key, const std::string& ptr) {
  const Json& v = s[key];
  const std::string where = ptr + "/" + key;
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    return Error(where, "\"" + key + "\" must be a non-negative integer");
  if (v.get<int64_t>() > kMaxCount)
    return Error(where, "\"" + key + "\" above " + std::to_string(kMaxCount) + " is not supported");
  return v.get<int64_t>();
}

std::string Repeat(const std::string& item, int64_t lo, int64_t hi) {  // hi < 0: unbounded
  if (lo == 0 && hi < 0) return item + "*";
  if (lo == 1 && hi < 0) return item + "+";
  if (lo == 0 && hi == 1) return item + "?";
  if (lo == hi) return item + "{" + std::to_string(lo) + "}";
  return item + "{" + std::to_string(lo) + "," + (hi < 0 ? "" : std::to_string(hi)) + "}";
}

class Converter {
 public:
  Converter(const Json& root, const JsonSchemaOptions& options)
      : root_(root), syn_(options.syntax), p_(options.prefix), q_(Literal(options.syntax.quote)) {
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

  Result<std::string> Visit(const Json& s, const std::string& ptr, const std::string& hint) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return Use("value");
      return Error(ptr, "the schema false matches nothing");
    }
    if (!s.is_object()) return Error(ptr, "a schema must be an object or a boolean");
    std::vector<std::string> constraining;
    for (const auto& [k, v] : s.items()) {
      const bool known = kAnnotations.count(k) || kContainers.count(k) || kOtherKeywords.count(k) ||
                         kObjectKeywords.count(k) || kArrayKeywords.count(k) ||
                         kStringKeywords.count(k) || kNumberKeywords.count(k);
      if (!known) return Error(ptr + "/" + PointerToken(k), "unsupported keyword \"" + k + "\"");
      if (kContainers.count(k) && !v.is_object())
        return Error(ptr + "/" + k, "\"" + k + "\" must be an object");
      if (IsConstraining(k)) constraining.push_back(k);
    }
    // Keywords that stand alone.
    for (const char* alone : {"$ref", "anyOf", "oneOf", "allOf"}) {
      if (!s.contains(alone)) continue;
      for (const std::string& k : constraining)
        if (k != alone)
          return Error(ptr + "/" + PointerToken(k),
                       "\"" + k + "\" beside \"" + alone + "\" is not supported");
      const std::string where = ptr + "/" + alone;
      if (std::string(alone) == "$ref") return Ref(s[alone], where);
      if (std::string(alone) == "allOf") return AllOf(s, ptr, hint);
      return AnyOf(s[alone], where, hint);
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      const Json& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array() && !t.empty()) {
        for (const Json& e : t) {
          if (!e.is_string()) break;
          types.push_back(e.get<std::string>());
        }
        if (types.size() != t.size()) types.clear();
      }
      if (types.empty()) return Error(ptr + "/type", "\"type\" must be a type name or a list of them");
      for (const std::string& ty : types)
        if (!kTypes.count(ty)) return Error(ptr + "/type", "unknown type \"" + ty + "\"");
    }
    if (s.contains("const") || s.contains("enum")) return Values(s, types, ptr, hint);
    if (types.empty()) {  // the kinds the keywords constrain; none: any value
      auto has_any = [&](const std::set<std::string>& kws) {
        for (const std::string& k : constraining)
          if (kws.count(k)) return true;
        return false;
      };
      if (has_any(kObjectKeywords)) types.push_back("object");
      if (has_any(kArrayKeywords)) types.push_back("array");
      if (has_any(kStringKeywords)) types.push_back("string");
      if (has_any(kNumberKeywords)) types.push_back("number");
      if (types.empty()) return Use("value");
    }
    std::vector<std::string> alts;
    for (const std::string& ty : types) {
      const std::string sub_hint = types.size() == 1 ? hint : hint + "-" + ty;
      ASSIGN_OR_RETURN(std::string alt, OfType(s, ty, ptr, sub_hint));
      alts.push_back(alt);
    }
    if (alts.size() == 1) return alts[0];
    return AddRule(hint, Join(alts, " | "));
  }

  Result<std::string> OfType(const Json& s, const std::string& type, const std::string& ptr,
                             const std::string& hint) {
    if (type == "null") return Use("null");
    if (type == "boolean") return Use("boolean");
    if (type == "integer" || type == "number") return Number(s, type == "integer", ptr, hint);
    if (type == "string") return String(s, ptr, hint);
    // Objects and arrays consume a character before their members: a $ref cycle through them
    // is a real recursion.
    std::vector<std::string> saved;
    saved.swap(unconsumed_);
    Result<std::string> r = type == "array" ? Array(s, ptr, hint) : Object(s, ptr, hint);
    unconsumed_.swap(saved);
    return r;
  }

  Result<std::string> Values(const Json& s, const std::vector<std::string>& types,
                             const std::string& ptr, const std::string& hint) {
    for (const auto& [k, v] : s.items())
      if (IsConstraining(k) && k != "type" && k != "const" && k != "enum")
        return Error(ptr + "/" + PointerToken(k), "\"" + k + "\" beside \"" +
                                                      (s.contains("const") ? "const" : "enum") +
                                                      "\" is not supported");
    if (s.contains("const") && s.contains("enum"))
      return Error(ptr + "/enum", "\"enum\" beside \"const\" is not supported");
    std::vector<Json> values;
    if (s.contains("const")) {
      values.push_back(s["const"]);
    } else {
      const Json& e = s["enum"];
      if (!e.is_array() || e.empty()) return Error(ptr + "/enum", "\"enum\" must be a non-empty list");
      values.assign(e.begin(), e.end());
    }
    std::vector<std::string> alts;
    for (const Json& v : values) {
      bool ok = types.empty();
      for (const std::string& t : types) ok = ok || HasType(v, t);
      if (!ok) continue;
      std::string text;
      try {
        text = syn_.write ? syn_.write(v) : v.dump();
      } catch (const nlohmann::json::exception&) {
        return Error(ptr, "a value that is not valid UTF-8");
      }
      const std::string alt = Literal(text) + " " + Use("ws");
      if (std::find(alts.begin(), alts.end(), alt) == alts.end()) alts.push_back(alt);
    }
    const char* kw = s.contains("const") ? "const" : "enum";
    if (alts.empty()) return Error(ptr + "/" + kw, std::string("no value of \"") + kw + "\" has the type");
    return AddRule(hint, Join(alts, " | "));
  }

  Result<std::string> Number(const Json& s, bool integer, const std::string& ptr,
                             const std::string& hint) {
    NumberBounds b;
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (!s.contains(k)) continue;
      if (!s[k].is_number())
        return Error(ptr + "/" + k, std::string("\"") + k + "\" must be a number");
      const double v = s[k].get<double>();
      std::string key = k;
      if (key == "minimum") b.minimum = v;
      if (key == "maximum") b.maximum = v;
      if (key == "exclusiveMinimum") b.exclusive_minimum = v;
      if (key == "exclusiveMaximum") b.exclusive_maximum = v;
    }
    if (!b.any()) return Use(integer ? "integer" : "number");
    Result<std::string> r = integer ? BoundedIntegerGbnf(b) : BoundedNumberGbnf(b);
    if (!r.ok()) return Error(ptr, r.status().message());
    return AddRule(hint, *r + " " + Use("ws"));
  }

  Result<std::string> String(const Json& s, const std::string& ptr, const std::string& hint) {
    const bool lengths = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("format")) {
      const Json& f = s["format"];
      if (!f.is_string()) return Error(ptr + "/format", "\"format\" must be a string");
      for (const char* k : {"minLength", "maxLength", "pattern"})
        if (s.contains(k))
          return Error(ptr + "/" + k, std::string("\"") + k + "\" beside \"format\" is not supported");
      const std::string name = f.get<std::string>();
      if (name != "date" && name != "time" && name != "date-time" && name != "uuid" &&
          name != "email")
        return Error(ptr + "/format", "unsupported format \"" + name + "\"");
      return AddRule(hint, q_ + " " + Use(name) + " " + q_ + " " + Use("ws"));
    }
    if (s.contains("pattern")) {
      const Json& p = s["pattern"];
      if (!p.is_string()) return Error(ptr + "/pattern", "\"pattern\" must be a string");
      if (lengths)
        return Error(ptr + "/" + (s.contains("minLength") ? "minLength" : "maxLength"),
                     "a length beside \"pattern\" is not supported");
      // RegexToGbnf writes JSON's escapes for what it matches.
      if (syn_.raw_strings)
        return Error(ptr + "/pattern", "\"pattern\" is not supported in this syntax (raw strings)");
      Result<std::string> re = RegexToGbnf(p.get<std::string>(), Use("char"));
      if (!re.ok()) return Error(ptr + "/pattern", re.status().message());
      return AddRule(hint, q_ + " " + *re + " " + q_ + " " + Use("ws"));
    }
    if (!lengths) return Use("string");
    int64_t lo = 0, hi = -1;
    if (s.contains("minLength")) {
      ASSIGN_OR_RETURN(lo, Count(s, "minLength", ptr));
    }
    if (s.contains("maxLength")) {
      ASSIGN_OR_RETURN(hi, Count(s, "maxLength", ptr));
      if (hi < lo) return Error(ptr + "/maxLength", "\"maxLength\" is below \"minLength\"");
    }
    return AddRule(hint, q_ + " " + Repeat(Use("char"), lo, hi) + " " + q_ + " " + Use("ws"));
  }

  Result<std::string> Array(const Json& s, const std::string& ptr, const std::string& hint);
  Result<std::string> Object(const Json& s, const std::string& ptr, const std::string& hint);
  Result<std::string> Ref(const Json& ref, const std::string& ptr);
  Result<std::string> AnyOf(const Json& list, const std::string& ptr, const std::string& hint);
  Result<std::string> AllOf(const Json& s, const std::string& ptr, const std::string& hint);
  Result<std::string> ExtraKey(const std::vector<std::string>& declared, const std::string& hint);

  const Json& root_;
  const JsonSyntax& syn_;
  const std::string p_;   // every rule name's prefix
  const std::string q_;   // the GBNF literal of the string quote
  std::vector<std::pair<std::string, std::string>> rules_;  // name, body; in creation order
  std::set<std::string> taken_;                             // rule names in use
  std::set<std::string> own_rules_;  // AddRule's rules: each referred to by one place only
  std::set<std::string> used_;                              // JSON rules referred to
  std::map<std::string, std::string> ref_rules_;            // JSON pointer -> rule name
  std::vector<std::string> unconsumed_;  // refs entered since the last consumed character
};


Result<std::string> Converter::Ref(const Json& ref, const std::string& ptr) {
  if (!ref.is_string()) return Error(ptr, "\"$ref\" must be a string");
  const std::string r = ref.get<std::string>();
  if (r.empty() || r[0] != '#')
    return Error(ptr, "\"$ref\" \"" + r + "\" is not local (only \"#...\" is supported)");
  const std::string target = r.substr(1);
  if (std::find(unconsumed_.begin(), unconsumed_.end(), target) != unconsumed_.end()) {
    std::string cycle;
    for (const std::string& u : unconsumed_) cycle += "#" + u + " -> ";
    return Error(ptr, "a \"$ref\" cycle that matches no character: " + cycle + "#" + target);
  }
  auto it = ref_rules_.find(target);
  if (it != ref_rules_.end()) return it->second;
  const Json* schema = nullptr;
  try {
    Json::json_pointer jp(target);
    if (root_.contains(jp)) schema = &root_.at(jp);
  } catch (const nlohmann::json::exception&) {
    return Error(ptr, "\"$ref\" \"" + r + "\" is not a JSON pointer");
  }
  if (!schema) return Error(ptr, "\"$ref\" \"" + r + "\": no such schema");
  const size_t slash = target.rfind('/');
  const std::string name = NewName(target.substr(slash + 1));
  ref_rules_[target] = name;
  const size_t index = rules_.size();
  rules_.push_back({name, ""});
  unconsumed_.push_back(target);
  Result<std::string> body = Visit(*schema, target, name);
  unconsumed_.pop_back();
  if (!body.ok()) return body.status();
  rules_[index].second = *body;
  return name;
}

Result<std::string> Converter::AnyOf(const Json& list, const std::string& ptr,
                                     const std::string& hint) {
  const std::string kw = ptr.substr(ptr.rfind('/') + 1);
  if (!list.is_array() || list.empty())
    return Error(ptr, "\"" + kw + "\" must be a non-empty list of schemas");
  std::vector<std::string> alts;
  for (size_t i = 0; i < list.size(); ++i) {
    ASSIGN_OR_RETURN(std::string alt,
                     Visit(list[i], ptr + "/" + std::to_string(i), hint + "-" + std::to_string(i)));
    if (std::find(alts.begin(), alts.end(), alt) == alts.end()) alts.push_back(alt);
  }
  if (alts.size() == 1) return alts[0];
  return AddRule(hint, Join(alts, " | "));
}

// allOf: one schema whose keywords are the parts' keywords (see json_schema.h for when).
Result<std::string> Converter::AllOf(const Json& s, const std::string& ptr,
                                     const std::string& hint) {
  const std::string where = ptr + "/allOf";
  const Json& list = s["allOf"];
  if (!list.is_array() || list.empty())
    return Error(where, "\"allOf\" must be a non-empty list of schemas");
  Json merged = Json::object();
  int with_properties = 0;
  bool with_additional = false;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = where + "/" + std::to_string(i);
    const Json* part = &list[i];
    if (part->is_boolean()) {
      if (part->get<bool>()) continue;
      return Error(at, "the schema false matches nothing");
    }
    if (!part->is_object()) return Error(at, "a schema must be an object or a boolean");
    if (part->contains("$ref")) {  // a reference to a schema: merge its keywords
      for (const auto& [k, v] : part->items())
        if (IsConstraining(k) && k != "$ref")
          return Error(at + "/" + PointerToken(k), "\"" + k + "\" beside \"$ref\" is not supported");
      const Json& ref = (*part)["$ref"];
      const std::string r = ref.is_string() ? ref.get<std::string>() : "";
      const Json* target = nullptr;
      try {
        Json::json_pointer jp(r.empty() || r[0] != '#' ? std::string("!") : r.substr(1));
        if (root_.contains(jp)) target = &root_.at(jp);
      } catch (const nlohmann::json::exception&) {
      }
      if (!target) return Error(at + "/$ref", "\"$ref\" in \"allOf\" must name a schema of this document");
      if (target->is_object() && target->contains("$ref"))
        return Error(at + "/$ref", "\"allOf\" of a reference to a reference is not supported");
      part = target;
      if (part->is_boolean()) {
        if (part->get<bool>()) continue;
        return Error(at, "the schema false matches nothing");
      }
    }
    if (!part->is_object()) return Error(at, "a schema must be an object or a boolean");
    if (part->contains("properties")) ++with_properties;
    if (part->contains("additionalProperties")) with_additional = true;
    for (const auto& [k, v] : part->items()) {
      if (!IsConstraining(k)) continue;
      const std::string kat = at + "/" + PointerToken(k);
      if (k == "allOf" || k == "anyOf" || k == "oneOf")
        return Error(kat, "\"" + k + "\" inside \"allOf\" is not supported");
      if (k == "properties" && v.is_object() && merged.contains(k)) {
        for (const auto& [name, sub] : v.items()) {
          if (merged[k].contains(name) && merged[k][name] != sub)
            return Error(kat + "/" + PointerToken(name), "property \"" + name +
                                                             "\" differs between the schemas of \"allOf\"");
          merged[k][name] = sub;
        }
      } else if (k == "required" && v.is_array() && merged.contains(k)) {
        for (const Json& n : v)
          if (std::find(merged[k].begin(), merged[k].end(), n) == merged[k].end())
            merged[k].push_back(n);
      } else if (merged.contains(k) && merged[k] != v) {
        return Error(kat, "\"" + k + "\" differs between the schemas of \"allOf\"");
      } else {
        merged[k] = v;
      }
    }
  }
  if (with_additional && with_properties > 1)
    return Error(where, "\"allOf\" with \"additionalProperties\" and properties in several schemas is not supported");
  return Visit(merged, ptr, hint);
}

Result<std::string> Converter::Array(const Json& s, const std::string& ptr,
                                     const std::string& hint) {
  std::vector<std::string> prefix;
  const Json* tuple = nullptr;
  std::string tuple_at;
  if (s.contains("prefixItems")) {
    tuple = &s["prefixItems"];
    tuple_at = ptr + "/prefixItems";
    if (s.contains("items") && s["items"].is_array())
      return Error(ptr + "/items", "\"items\" as a list beside \"prefixItems\"");
  } else if (s.contains("items") && s["items"].is_array()) {
    tuple = &s["items"];  // the draft-7 tuple form
    tuple_at = ptr + "/items";
  }
  if (tuple) {
    if (!tuple->is_array()) return Error(tuple_at, "\"prefixItems\" must be a list of schemas");
    for (size_t i = 0; i < tuple->size(); ++i) {
      ASSIGN_OR_RETURN(std::string e, Visit((*tuple)[i], tuple_at + "/" + std::to_string(i),
                                            hint + "-" + std::to_string(i)));
      prefix.push_back(e);
    }
  }
  // The schema of the items after the prefix: "" when there may be none.
  std::string rest = Use("value");
  if (s.contains("items") && !s["items"].is_array()) {
    const Json& it = s["items"];
    if (it.is_boolean() && !it.get<bool>()) {
      rest = "";
    } else {
      ASSIGN_OR_RETURN(rest, Visit(it, ptr + "/items", hint + "-item"));
    }
  } else if (tuple == &s["items"] && !s.contains("additionalItems")) {
    // draft 7: items after the tuple are free; keep them free
  }
  int64_t lo = 0, hi = -1;  // -1: unbounded
  if (s.contains("minItems")) {
    ASSIGN_OR_RETURN(lo, Count(s, "minItems", ptr));
  }
  if (s.contains("maxItems")) {
    ASSIGN_OR_RETURN(hi, Count(s, "maxItems", ptr));
  }
  const int64_t k = static_cast<int64_t>(prefix.size());
  if (rest.empty()) hi = hi < 0 ? k : std::min(hi, k);
  if (hi >= 0 && lo > hi)
    return Error(ptr + (s.contains("minItems") ? "/minItems" : ""), "no array length satisfies the schema");
  auto item = [&](int64_t j) { return j < k ? prefix[j] : rest; };  // j: 0-based
  // The items from index j on, after item j - 1 (so each begins with a comma).
  std::string body;
  std::string tail;
  if (hi < 0 || hi > k) {  // the repeated part: items k.. (0-based), after item k - 1
    const int64_t min_rep = std::max<int64_t>(0, lo - std::max<int64_t>(k, 1));
    const int64_t max_rep = hi < 0 ? -1 : hi - std::max<int64_t>(k, 1);
    if (max_rep != 0) tail = Repeat("( \",\" " + Use("ws") + " " + rest + " )", min_rep, max_rep);
  }
  for (int64_t j = std::min<int64_t>(k, hi < 0 ? k : hi) - 1; j >= 1; --j) {
    std::string seg = "\",\" " + Use("ws") + " " + item(j) + (tail.empty() ? "" : " " + tail);
    tail = j < lo ? seg : "( " + seg + " )?";
  }
  if (hi != 0) {
    std::string first = item(0) + (tail.empty() ? "" : " " + tail);
    body = lo >= 1 ? first + " " : "( " + first + " )? ";
  }
  return AddRule(hint, "\"[\" " + Use("ws") + " " + body + "\"]\" " + Use("ws"));
}

// A key other than `declared`, written without escapes: "\"" (a trie walk) "\"" ws.
Result<std::string> Converter::ExtraKey(const std::vector<std::string>& declared,
                                        const std::string& hint) {
  if (declared.empty()) return Use(syn_.bare_keys ? "key" : "string");
  struct Node {
    std::map<uint32_t, int> next;
    bool end = false;
  };
  std::vector<Node> trie(1);
  for (const std::string& key : declared) {
    // Only keys of plain characters can be written without escapes.
    std::vector<uint32_t> cps;
    bool plain = true;
    for (size_t i = 0; i < key.size();) {
      const auto b = static_cast<uint8_t>(key[i]);
      int len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : 4;
      uint32_t c = len == 1 ? b : b & (0x7F >> len);
      for (int j = 1; j < len && i + j < key.size(); ++j) c = (c << 6) | (key[i + j] & 0x3F);
      i += len;
      if (c < 0x20 || c == '"' || c == '\\') plain = false;
      if (syn_.bare_keys && !BareKeyChar(c)) plain = false;
      cps.push_back(c);
    }
    if (!plain) continue;
    int n = 0;
    for (uint32_t c : cps) {
      auto it = trie[n].next.find(c);
      if (it == trie[n].next.end()) {
        trie.push_back({});
        it = trie[n].next.emplace(c, static_cast<int>(trie.size()) - 1).first;
      }
      n = it->second;
    }
    trie[n].end = true;
  }
  const std::string key_char = AddRule(
      hint + "-keychar", syn_.bare_keys ? "[A-Za-z0-9_]" : R"([^"\\\x00-\x1F\uD800-\uDFFF])");
  // One rule per trie node: the rest of a key that differs from every key below the node.
  std::vector<std::string> names(trie.size());
  for (size_t i = 0; i < trie.size(); ++i) names[i] = NewName(hint + "-key");
  auto class_char = [](uint32_t c) {
    std::string s;
    if (c < 0x80 && c != ']' && c != '[' && c != '^' && c != '-' && c != '\\' && c != '"') {
      s = std::string(1, static_cast<char>(c));
    } else {
      char buf[16];
      std::snprintf(buf, sizeof buf, c < 0x10000 ? "\\u%04X" : "\\U%08X", c);
      s = buf;
    }
    return s;
  };
  auto literal_char = [](uint32_t c) {
    std::string s;
    if (c < 0x80) return Literal(std::string(1, static_cast<char>(c)));
    char buf[16];
    std::snprintf(buf, sizeof buf, c < 0x10000 ? "\"\\u%04X\"" : "\"\\U%08X\"", c);
    return std::string(buf);
  };
  for (size_t i = 0; i < trie.size(); ++i) {
    std::vector<std::string> alts;
    std::string other = "[^\"\\\\\\x00-\\x1F\\uD800-\\uDFFF";
    for (const auto& [c, child] : trie[i].next) {
      alts.push_back(literal_char(c) + " " + names[child]);
      other += class_char(c);
    }
    if (syn_.bare_keys) {  // the name characters that no declared key continues with here
      other = "[";
      for (uint32_t c = '0'; c <= 'z'; ++c)
        if (BareKeyChar(c) && !trie[i].next.count(c)) other += static_cast<char>(c);
      if (other == "[") other = "[\\x00";  // every name character continues a key: none
    }
    alts.push_back(other + "] " + key_char + "*");
    std::string body = Alternatives(alts);
    if (!trie[i].end) body = (alts.size() == 1 ? "( " + body + " )" : body) + "?";
    rules_.push_back({names[i], body});
  }
  if (syn_.bare_keys) return AddRule(hint + "-extra", names[0] + " " + Use("ws"));
  return AddRule(hint + "-extra", q_ + " " + names[0] + " " + q_ + " " + Use("ws"));
}

Result<std::string> Converter::Object(const Json& s, const std::string& ptr,
                                      const std::string& hint) {
  struct Member {
    std::string key, expr;
    bool required = false;
  };
  std::vector<Member> members;
  std::set<std::string> required;
  if (s.contains("required")) {
    const Json& r = s["required"];
    if (!r.is_array()) return Error(ptr + "/required", "\"required\" must be a list of names");
    for (size_t i = 0; i < r.size(); ++i) {
      if (!r[i].is_string())
        return Error(ptr + "/required/" + std::to_string(i), "a required name must be a string");
      required.insert(r[i].get<std::string>());
    }
  }
  std::vector<std::string> order;
  if (s.contains("properties")) {
    const Json& props = s["properties"];
    if (!props.is_object()) return Error(ptr + "/properties", "\"properties\" must be an object");
    for (const auto& [k, v] : props.items()) {
      ASSIGN_OR_RETURN(std::string e,
                       Visit(v, ptr + "/properties/" + PointerToken(k), hint + "-" + k));
      members.push_back({k, e, required.count(k) > 0});
      order.push_back(k);
    }
  }
  // Other properties: their value's grammar, "" when none is allowed.
  std::string additional;
  bool closed = false;
  if (s.contains("additionalProperties")) {
    const Json& a = s["additionalProperties"];
    closed = a.is_boolean() && !a.get<bool>();
    if (!closed) {
      ASSIGN_OR_RETURN(additional,
                       Visit(a, ptr + "/additionalProperties", hint + "-additional"));
    }
  }
  // A required name without a property schema is an additional property.
  if (s.contains("required"))
    for (size_t i = 0; i < s["required"].size(); ++i) {
      const std::string k = s["required"][i].get<std::string>();
      if (std::find(order.begin(), order.end(), k) != order.end()) continue;
      if (closed)
        return Error(ptr + "/required/" + std::to_string(i),
                     "required property \"" + k + "\" is not allowed by \"additionalProperties\": false");
      members.push_back({k, additional.empty() ? Use("value") : additional, true});
      order.push_back(k);
    }
  std::string extra;  // a whole extra "key": value, or "" when none may be written
  if (!additional.empty()) {
    ASSIGN_OR_RETURN(std::string key, ExtraKey(order, hint));
    extra = AddRule(hint + "-additional-kv", key + " \":\" " + Use("ws") + " " + additional);
  }
  const std::string ws = Use("ws");
  std::vector<std::string> kvs;
  for (const Member& m : members) {
    std::string key;
    if (syn_.bare_keys) {
      bool ok = !m.key.empty() && m.key.size() <= 64 && !(m.key[0] >= '0' && m.key[0] <= '9');
      for (char c : m.key) ok = ok && BareKeyChar(static_cast<unsigned char>(c));
      if (!ok)
        return Error(ptr + "/properties/" + PointerToken(m.key),
                     "the property name \"" + m.key + "\" cannot be written as a bare key");
      key = m.key;
    } else {
      try {
        key = Json(m.key).dump();
      } catch (const nlohmann::json::exception&) {
        return Error(ptr + "/properties", "a property name that is not valid UTF-8");
      }
    }
    kvs.push_back(Literal(key) + " " + ws + " \":\" " + ws + " " + m.expr);
  }
  // tail[j]: members j.. after something was written (each with its comma), then the extras.
  const size_t n = members.size();
  size_t first_required = n;
  for (size_t i = 0; i < n; ++i)
    if (members[i].required) {
      first_required = i;
      break;
    }
  const size_t firsts = std::min(first_required + 1, n);  // members that can come first
  const bool share = firsts > 1;  // several alternatives use the tails: make them rules
  std::vector<std::string> tail(n + 1);
  tail[n] = extra.empty() ? "" : "( \",\" " + ws + " " + extra + " )*";
  for (size_t j = n; j-- > 0;) {
    std::string seg = "\",\" " + ws + " " + kvs[j];
    std::string t = (members[j].required ? seg : "( " + seg + " )?") +
                    (tail[j + 1].empty() ? "" : " " + tail[j + 1]);
    tail[j] = share && j >= 1 && j + 1 < n + 1 ? AddRule(hint + "-tail", t) : t;
  }
  std::vector<std::string> alts;
  for (size_t i = 0; i < firsts; ++i)
    alts.push_back(kvs[i] + (tail[i + 1].empty() ? "" : " " + tail[i + 1]));
  const bool all_optional = first_required == n;
  if (all_optional && !extra.empty()) alts.push_back(extra + " " + tail[n]);
  std::string body;
  if (!alts.empty()) body = "( " + Join(alts, " | ") + " )" + (all_optional ? "?" : "") + " ";
  return AddRule(hint, "\"{\" " + ws + " " + body + "\"}\" " + ws);
}

}  // namespace

Result<std::string> JsonSchemaToGbnf(const nlohmann::ordered_json& schema,
                                     const JsonSchemaOptions& options) {
  Converter c(schema, options);
  return c.Run();
}

Result<std::string> JsonSchemaToGbnf(const nlohmann::json& schema, const JsonSchemaOptions& options) {
  return JsonSchemaToGbnf(nlohmann::ordered_json(schema), options);
}

Result<std::string> JsonSchemaTextToGbnf(std::string_view text) {
  nlohmann::ordered_json schema;
  try {
    schema = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(std::string("json schema: not JSON: ") + e.what());
  }
  return JsonSchemaToGbnf(schema);
}

}  // namespace gemlet::grammar
