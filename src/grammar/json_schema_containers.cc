// Objects and arrays of the JSON Schema converter (json_schema_converter.h).
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "grammar/json_schema_converter.h"

namespace gemlet::grammar::json_schema_internal {

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
  }  // else (no items, or the draft-7 tuple form): the items after the prefix are free
  if (s.contains("uniqueItems") && !(s["uniqueItems"].is_boolean() && !s["uniqueItems"].get<bool>()))
    return Error(ptr + "/uniqueItems", "\"uniqueItems\" other than false is not supported");
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
    if (syn_.bare_keys) {  // the name characters no declared key continues with here
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
  if (!s.contains("additionalProperties") && !s.contains("properties")) {
    additional = Use("value");  // {"type": "object"}: any object
  } else if (s.contains("additionalProperties")) {
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
      kvs.push_back(Literal(m.key) + " " + ws + " \":\" " + ws + " " + m.expr);
      continue;
    }
    try {
      key = Json(m.key).dump();
    } catch (const nlohmann::json::exception&) {
      return Error(ptr + "/properties", "a property name that is not valid UTF-8");
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

}  // namespace gemlet::grammar::json_schema_internal
