#include "grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "grammar/json_grammar.h"
#include "grammar/json_schema_converter.h"
#include "grammar/number_range.h"
#include "grammar/regex_to_gbnf.h"

namespace gemlet::grammar {
namespace json_schema_internal {
namespace {
const std::set<std::string> kAnnotations = {"title",      "description", "examples", "default",
                                            "deprecated", "readOnly",    "writeOnly", "$schema",
                                            "$id",        "$comment"};
const std::set<std::string> kObjectKeywords = {"properties", "required", "additionalProperties"};
const std::set<std::string> kArrayKeywords = {"items", "prefixItems", "minItems", "maxItems",
                                              "uniqueItems"};
const std::set<std::string> kStringKeywords = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string> kNumberKeywords = {"minimum", "maximum", "exclusiveMinimum",
                                               "exclusiveMaximum"};
const std::set<std::string> kOtherKeywords = {"type",  "enum",  "const", "anyOf",
                                              "oneOf", "allOf", "$ref"};
const std::set<std::string> kContainers = {"$defs", "definitions"};
const std::set<std::string> kTypes = {"null",   "boolean", "object", "array",
                                      "number", "integer", "string"};

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

}  // namespace

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

std::string Join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

std::string Alternatives(const std::vector<std::string>& alts) {
  return alts.size() == 1 ? alts[0] : "( " + Join(alts, " | ") + " )";
}

Result<int64_t> Count(const Json& s, const std::string& key, const std::string& ptr) {
  const Json& v = s[key];
  const std::string where = ptr + "/" + key;
  const bool maximum = key.rfind("max", 0) == 0;
  double d = v.is_number() ? v.get<double>() : -1;
  if (!v.is_number() || d < 0 || d != std::floor(d))
    return Error(where, "\"" + key + "\" must be a non-negative integer");
  if (d > static_cast<double>(kMaxCount)) {
    if (maximum) return kMaxCount;  // at most kMaxCount: a subset of what is allowed
    return Error(where, "\"" + key + "\" above " + std::to_string(kMaxCount) + " is not supported");
  }
  return static_cast<int64_t>(d);
}

std::string Repeat(const std::string& item, int64_t lo, int64_t hi) {  // hi < 0: unbounded
  if (lo == 0 && hi < 0) return item + "*";
  if (lo == 1 && hi < 0) return item + "+";
  if (lo == 0 && hi == 1) return item + "?";
  if (lo == hi) return item + "{" + std::to_string(lo) + "}";
  return item + "{" + std::to_string(lo) + "," + (hi < 0 ? "" : std::to_string(hi)) + "}";
}

Result<std::string> Converter::Visit(const Json& s, const std::string& ptr, const std::string& hint) {
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

Result<std::string> Converter::OfType(const Json& s, const std::string& type, const std::string& ptr,
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

Result<std::string> Converter::Values(const Json& s, const std::vector<std::string>& types,
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
    if (std::find(alts.begin(), alts.end(), Literal(text) + " ws") == alts.end())
      alts.push_back(Literal(text) + " " + Use("ws"));
  }
  const char* kw = s.contains("const") ? "const" : "enum";
  if (alts.empty()) return Error(ptr + "/" + kw, std::string("no value of \"") + kw + "\" has the type");
  return AddRule(hint, Join(alts, " | "));
}

Result<std::string> Converter::Number(const Json& s, bool integer, const std::string& ptr,
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

Result<std::string> Converter::String(const Json& s, const std::string& ptr, const std::string& hint) {
  const bool lengths = s.contains("minLength") || s.contains("maxLength");
  if (s.contains("format")) {
    const Json& f = s["format"];
    if (!f.is_string()) return Error(ptr + "/format", "\"format\" must be a string");
    for (const char* k : {"minLength", "maxLength", "pattern"})
      if (s.contains(k))
        return Error(ptr + "/" + k, std::string("\"") + k + "\" beside \"format\" is not supported");
    const std::string name = f.get<std::string>();
    static const std::set<std::string> kFormats = {"date",  "time", "date-time", "uuid",
                                                   "email", "ipv4", "hostname",  "uri"};
    if (!kFormats.count(name))
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

// A key other than `declared`, written without escapes: "\"" (a trie walk) "\"" ws.

}  // namespace json_schema_internal

Result<std::string> JsonSchemaToGbnf(const nlohmann::ordered_json& schema,
                                     const JsonSchemaOptions& options) {
  json_schema_internal::Converter c(schema, options.syntax, options.prefix);
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
