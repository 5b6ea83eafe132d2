#include "text/chat_template_macros.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string_view>

#include "format/gemma4_tokens.h"
#include "text/utf8.h"

namespace gemlet::chat_internal {

namespace {

// <|"|>text<|"|>: a string in Gemma's tool syntax.
std::string Quoted(std::string_view text) {
  std::string s(gemma4::kQuote);
  s += text;
  s += gemma4::kQuote;
  return s;
}

std::string PyRepr(const json& v);

}  // namespace

const json* Get(const json* obj, const char* key) {
  if (obj == nullptr || !obj->is_object()) return nullptr;
  auto it = obj->find(key);
  return it == obj->end() ? nullptr : &*it;
}

// Python truthiness; Undefined is false.
bool Truthy(const json* v) {
  if (v == nullptr || v->is_null()) return false;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_number_integer()) return v->get<int64_t>() != 0;
  if (v->is_number_float()) return v->get<double>() != 0.0;
  if (v->is_string()) return !v->get_ref<const std::string&>().empty();
  return !v->empty();  // array, object
}

// Python str() of a JSON value, as {{ value }} prints it.
std::string PyStr(const json& v) {
  switch (v.type()) {
    case json::value_t::string:
      return v.get<std::string>();
    case json::value_t::null:
      return "None";
    case json::value_t::boolean:
      return v.get<bool>() ? "True" : "False";
    case json::value_t::array: {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + PyRepr(v[i]);
      return s + "]";
    }
    case json::value_t::object: {
      std::string s = "{";
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        s += (first ? "'" : ", '") + it.key() + "': " + PyRepr(it.value());
        first = false;
      }
      return s + "}";
    }
    default:
      return v.dump();  // numbers
  }
}

namespace {

std::string PyRepr(const json& v) {
  if (!v.is_string()) return PyStr(v);
  const std::string& s = v.get_ref<const std::string&>();
  const char q =
      (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    const auto u = static_cast<uint8_t>(c);
    if (c == '\\' || c == q) {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + q;
}

}  // namespace

// {{ x }} of a possibly undefined value: Undefined prints nothing.
std::string Print(const json* v) { return v ? PyStr(*v) : std::string(); }

std::string Upper(std::string s) {
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return s;
}

namespace {

std::string Lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

// Python str.isspace() code points.
bool IsPyWhitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

}  // namespace

// Jinja `trim` = Python str.strip().
std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e) {
    uint32_t cp;
    const int len = utf8::DecodeChar(s, b, &cp);
    if (len == 0 || !IsPyWhitespace(cp)) break;
    b += len;
  }
  while (e > b) {
    size_t start = e - 1;
    while (start > b && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
    uint32_t cp;
    const int len = utf8::DecodeChar(s, start, &cp);
    if (len == 0 || start + len != e || !IsPyWhitespace(cp)) break;
    e = start;
  }
  return std::string(s.substr(b, e - b));
}

// `| dictsort`: items by key, case-insensitively (stable).
std::vector<std::pair<std::string, const json*>> DictSort(const json& obj) {
  std::vector<std::pair<std::string, const json*>> items;
  for (auto it = obj.begin(); it != obj.end(); ++it) items.emplace_back(it.key(), &it.value());
  std::stable_sort(items.begin(), items.end(),
                   [](const auto& a, const auto& b) { return Lower(a.first) < Lower(b.first); });
  return items;
}

namespace {

// `for x in value`: list items, mapping keys, or the characters of a string.
Result<std::vector<json>> Iterate(const json& v, const std::string& where) {
  std::vector<json> out;
  if (v.is_array()) {
    for (const json& x : v) out.push_back(x);
  } else if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) out.push_back(it.key());
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    for (size_t i = 0; i < s.size();) {
      uint32_t cp;
      const int len = std::max(1, utf8::DecodeChar(s, i, &cp));
      out.push_back(s.substr(i, len));
      i += len;
    }
  } else {
    return InvalidArgument(where + " is not a list");
  }
  return out;
}

}  // namespace

// macro format_argument
std::string FormatArgument(const json* arg, bool escape_keys) {
  if (arg == nullptr) return "";  // Undefined prints nothing
  if (arg->is_null()) return "null";
  if (arg->is_string()) return Quoted(arg->get_ref<const std::string&>());
  if (arg->is_boolean()) return arg->get<bool>() ? "true" : "false";
  if (arg->is_object()) {
    std::string s = "{";
    bool first = true;
    for (const auto& [key, value] : DictSort(*arg)) {
      if (!first) s += ",";
      first = false;
      s += escape_keys ? Quoted(key) : key;
      s += ":" + FormatArgument(value, escape_keys);
    }
    return s + "}";
  }
  if (arg->is_array()) {
    std::string s = "[";
    for (size_t i = 0; i < arg->size(); ++i) {
      if (i) s += ",";
      s += FormatArgument(&(*arg)[i], escape_keys);
    }
    return s + "]";
  }
  return PyStr(*arg);  // numbers
}

namespace {

// `required:[<|"|>a<|"|>,<|"|>b<|"|>]` from any iterable.
Result<std::string> QuotedList(const json& v, const std::string& where) {
  ASSIGN_OR_RETURN(std::vector<json> items, Iterate(v, where));
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += ",";
    s += Quoted(PyStr(items[i]));
  }
  return s + "]";
}

// macro format_parameters (its `required` argument is unused by the template)
Result<std::string> FormatParameters(const json& properties, bool filter_keys, int depth) {
  if (depth > 64) return InvalidArgument("tool parameters nest too deeply");
  static const char* const kStandard[] = {"description", "type", "properties", "required",
                                          "nullable"};
  std::string out;
  bool found_first = false;
  for (const auto& [key, value] : DictSort(properties)) {
    bool standard = false;
    for (const char* k : kStandard) standard = standard || key == k;
    if (filter_keys && standard) continue;
    if (found_first) out += ",";
    found_first = true;
    out += key + ":{";
    bool add_comma = false;
    auto comma = [&] {
      if (add_comma) {
        out += ",";
      } else {
        add_comma = true;
      }
    };
    const json* desc = Get(value, "description");
    if (Truthy(desc)) {
      out += "description:" + Quoted(PyStr(*desc));
      add_comma = true;
    }
    const std::string type = Upper(Print(Get(value, "type")));
    if (type == "STRING") {
      const json* e = Get(value, "enum");
      if (Truthy(e)) {
        comma();
        out += "enum:" + FormatArgument(e, true);
      }
    } else if (type == "ARRAY") {
      const json* items = Get(value, "items");
      if (items && items->is_object() && !items->empty()) {
        comma();
        out += "items:{";
        bool items_first = false;
        for (const auto& [ik, iv] : DictSort(*items)) {
          if (iv->is_null()) continue;
          if (items_first) out += ",";
          items_first = true;
          if (ik == "properties") {
            out += "properties:{";
            if (iv->is_object()) {
              ASSIGN_OR_RETURN(std::string inner, FormatParameters(*iv, false, depth + 1));
              out += inner;
            }
            out += "}";
          } else if (ik == "required") {
            ASSIGN_OR_RETURN(std::string list, QuotedList(*iv, key + ".items.required"));
            out += "required:" + list;
          } else if (ik == "type") {
            if (iv->is_string()) {
              const json up = Upper(iv->get<std::string>());
              out += "type:" + FormatArgument(&up, true);
            } else {
              ASSIGN_OR_RETURN(std::vector<json> types, Iterate(*iv, key + ".items.type"));
              json up = json::array();
              for (const json& t : types) up.push_back(Upper(PyStr(t)));
              out += "type:" + FormatArgument(&up, true);
            }
          } else {
            out += ik + ":" + FormatArgument(iv, true);
          }
        }
        out += "}";
      }
    }
    if (Truthy(Get(value, "nullable"))) {
      comma();
      out += "nullable:true";
    }
    if (type == "OBJECT") {
      const json* props = Get(value, "properties");
      if (props && props->is_object()) {
        comma();
        ASSIGN_OR_RETURN(std::string inner, FormatParameters(*props, false, depth + 1));
        out += "properties:{" + inner + "}";
      } else if (value->is_object()) {
        comma();
        ASSIGN_OR_RETURN(std::string inner, FormatParameters(*value, true, depth + 1));
        out += "properties:{" + inner + "}";
      }
      const json* req = Get(value, "required");
      if (Truthy(req)) {
        comma();
        ASSIGN_OR_RETURN(std::string list, QuotedList(*req, key + ".required"));
        out += "required:" + list;
      }
    }
    comma();
    out += "type:" + Quoted(type) + "}";
  }
  return out;
}

}  // namespace

// macro format_function_declaration
Result<std::string> FormatDeclaration(const json& tool, const std::string& where) {
  const json* fn = Get(&tool, "function");
  if (fn == nullptr || !fn->is_object())
    return InvalidArgument(where + " has no \"function\" object");
  std::string out = std::string(gemma4::kDeclarationPrefix) + Print(Get(fn, "name")) +
                    "{description:" + Quoted(Print(Get(fn, "description")));
  const json* params = Get(fn, "parameters");
  if (Truthy(params)) {
    out += ",parameters:{";
    const json* props = Get(params, "properties");
    if (Truthy(props)) {
      if (!props->is_object())
        return InvalidArgument(where + ": parameters.properties is not an object");
      ASSIGN_OR_RETURN(std::string inner, FormatParameters(*props, false, 0));
      out += "properties:{" + inner + "},";
    }
    const json* req = Get(params, "required");
    if (Truthy(req)) {
      ASSIGN_OR_RETURN(std::string list, QuotedList(*req, where + ": parameters.required"));
      out += "required:" + list + ",";
    }
    const json* type = Get(params, "type");
    if (Truthy(type)) out += "type:" + Quoted(Upper(PyStr(*type))) + "}";
  }
  if (fn->contains("response")) {
    const json* resp = Get(fn, "response");
    out += ",response:{";
    const json* desc = Get(resp, "description");
    if (Truthy(desc)) out += "description:" + Quoted(PyStr(*desc)) + ",";
    const std::string type = Upper(Print(Get(resp, "type")));
    if (type == "OBJECT") out += "type:" + Quoted(type) + "}";
  }
  return out + "}";
}

// macro strip_thinking: drops every "<|channel>...<channel|>" block, then trims.
std::string StripThinking(const std::string& text) {
  constexpr std::string_view kOpen = gemma4::kChannelOpen, kClose = gemma4::kChannelClose;
  std::string result;
  size_t pos = 0;
  while (true) {
    const size_t end = text.find(kClose, pos);
    const std::string part =
        text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    const size_t open = part.find(kOpen);
    result += open == std::string::npos ? part : part.substr(0, open);
    if (end == std::string::npos) break;
    pos = end + kClose.size();
  }
  return Trim(result);
}

// macro format_tool_response_block
std::string ToolResponseBlock(const std::string& name, const json* response) {
  std::string out(gemma4::kToolResponseOpen);
  if (response && response->is_object()) {
    out += gemma4::kResponsePrefix;
    out += name + "{";
    bool first = true;
    for (const auto& [key, value] : DictSort(*response)) {
      if (!first) out += ",";
      first = false;
      out += key + ":" + FormatArgument(value, false);
    }
    out += "}";
  } else {
    out += gemma4::kResponsePrefix;
    out += name + "{value:" + FormatArgument(response, false) + "}";
  }
  out += gemma4::kToolResponseClose;
  return out;
}

// The arguments of one tool call, `key:value,...` sorted.
Result<std::string> FormatCallArguments(const json* args, const std::string& where) {
  json parsed;
  if (args && args->is_string()) {  // the OpenAI wire form: a JSON-encoded object
    parsed = json::parse(args->get<std::string>(), nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) {
      return InvalidArgument(where + ": arguments must be a JSON object (mapping), not a string");
    }
    args = &parsed;
  }
  if (args && args->is_null()) return std::string();
  if (args == nullptr || !args->is_object()) {
    return InvalidArgument(where + ": arguments must be a JSON object (mapping)");
  }
  std::string out;
  bool first = true;
  for (const auto& [key, value] : DictSort(*args)) {
    if (!first) out += ",";
    first = false;
    out += key + ":" + FormatArgument(value, false);
  }
  return out;
}

// Message content as the template's `captured_content` block renders it.
Result<std::string> RenderContent(const json* content, bool model, const std::string& where) {
  std::string out;
  if (content == nullptr || content->is_null()) return out;
  if (content->is_string()) {
    return model ? StripThinking(content->get<std::string>()) : Trim(content->get<std::string>());
  }
  if (!content->is_array())
    return InvalidArgument(where + ": content must be a string or a list of parts");
  for (const json& item : *content) {
    const std::string type = Print(Get(&item, "type"));
    if (type == "text") {
      const json* text = Get(&item, "text");
      const std::string t = text ? PyStr(*text) : std::string();
      out += model ? StripThinking(t) : Trim(t);
    } else if (type == "image" || type == "image_url") {
      out += gemma4::kImage;
    } else if (type == "audio" || type == "input_audio") {
      out += gemma4::kAudio;
    } else if (type == "video") {
      out += gemma4::kVideo;
    }
  }
  return out;
}

bool SameValue(const json* a, const json* b) {
  const bool na = a == nullptr || a->is_null(), nb = b == nullptr || b->is_null();
  if (na || nb) return na && nb;
  return *a == *b;
}

}  // namespace gemlet::chat_internal
