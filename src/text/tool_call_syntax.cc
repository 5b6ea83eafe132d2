#include "text/tool_call_syntax.h"

#include <cerrno>
#include <cstdlib>

#include "format/gemma4_tokens.h"

namespace gemlet {

namespace {

using json = nlohmann::json;

constexpr std::string_view kQuote = gemma4::kQuote;
constexpr int kMaxDepth = 64;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view TrimAscii(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// A bare word: true/false/null, a JSON number, or else the text itself.
json BareValue(std::string_view w) {
  if (w == "true") return true;
  if (w == "false") return false;
  if (w == "null") return nullptr;
  size_t i = 0;
  bool is_float = false;
  if (i < w.size() && w[i] == '-') ++i;
  const size_t int_start = i;
  while (i < w.size() && w[i] >= '0' && w[i] <= '9') ++i;
  bool ok = i > int_start && !(w[int_start] == '0' && i - int_start > 1);
  if (ok && i < w.size() && w[i] == '.') {
    is_float = true;
    const size_t f = ++i;
    while (i < w.size() && w[i] >= '0' && w[i] <= '9') ++i;
    ok = i > f;
  }
  if (ok && i < w.size() && (w[i] == 'e' || w[i] == 'E')) {
    is_float = true;
    ++i;
    if (i < w.size() && (w[i] == '+' || w[i] == '-')) ++i;
    const size_t e = i;
    while (i < w.size() && w[i] >= '0' && w[i] <= '9') ++i;
    ok = i > e;
  }
  if (!ok || i != w.size()) return std::string(w);
  const std::string s(w);
  errno = 0;
  if (!is_float) {
    const long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == 0) return static_cast<int64_t>(v);
  }
  return std::strtod(s.c_str(), nullptr);
}

class ArgParser {
 public:
  explicit ArgParser(std::string_view s) : s_(s) {}
  bool complete() const { return complete_; }
  size_t pos() const { return i_; }

  json Value(int depth) {
    SkipSpace();
    if (i_ >= s_.size()) {
      complete_ = false;
      return nullptr;
    }
    if (s_.substr(i_).starts_with(kQuote)) return GemmaString();
    if (s_[i_] == '"') return JsonString();
    if (depth >= kMaxDepth) {  // hostile nesting: keep the rest as text
      json rest = std::string(s_.substr(i_));
      i_ = s_.size();
      complete_ = false;
      return rest;
    }
    if (s_[i_] == '{') return Object(depth + 1);
    if (s_[i_] == '[') return Array(depth + 1);
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != ']') ++i_;
    return BareValue(TrimAscii(s_.substr(start, i_ - start)));
  }

  json Object(int depth) {
    ++i_;  // '{'
    json obj = json::object();
    while (true) {
      SkipSpace();
      if (i_ >= s_.size()) {
        complete_ = false;
        return obj;
      }
      if (s_[i_] == '}') {
        ++i_;
        return obj;
      }
      if (s_[i_] == ',') {
        ++i_;
        continue;
      }
      const std::string key = Key();
      SkipSpace();
      if (i_ < s_.size() && s_[i_] == ':') {
        ++i_;
        obj[key] = Value(depth);
      } else if (i_ >= s_.size()) {
        complete_ = false;
        if (!key.empty()) obj[key] = nullptr;
        return obj;
      } else if (s_[i_] != '}' && s_[i_] != ',') {
        ++i_;  // junk after a key: skip it
      } else {
        obj[key] = nullptr;
      }
    }
  }

  json Array(int depth) {
    ++i_;  // '['
    json arr = json::array();
    while (true) {
      SkipSpace();
      if (i_ >= s_.size()) {
        complete_ = false;
        return arr;
      }
      if (s_[i_] == ']') {
        ++i_;
        return arr;
      }
      if (s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (s_[i_] == '}') {  // mismatched bracket: stop the array here
        return arr;
      }
      arr.push_back(Value(depth));
    }
  }

 private:
  void SkipSpace() {
    while (i_ < s_.size() && IsSpace(s_[i_])) ++i_;
  }
  json GemmaString() {
    i_ += kQuote.size();
    const size_t end = s_.find(kQuote, i_);
    if (end == std::string_view::npos) {
      complete_ = false;
      json v = std::string(s_.substr(i_));
      i_ = s_.size();
      return v;
    }
    json v = std::string(s_.substr(i_, end - i_));
    i_ = end + kQuote.size();
    return v;
  }
  json JsonString() {
    std::string out;
    ++i_;
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '"') return out;
      if (c == '\\' && i_ < s_.size()) {
        const char e = s_[i_++];
        switch (e) {
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case 'r':
            out += '\r';
            break;
          default:
            out += e;
            break;  // \" \\ \/ and anything else literally
        }
        continue;
      }
      out += c;
    }
    complete_ = false;
    return out;
  }
  std::string Key() {
    if (s_.substr(i_).starts_with(kQuote)) return GemmaString().get<std::string>();
    if (s_[i_] == '"') return JsonString().get<std::string>();
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] != ':' && s_[i_] != ',' && s_[i_] != '}') ++i_;
    return std::string(TrimAscii(s_.substr(start, i_ - start)));
  }

  std::string_view s_;
  size_t i_ = 0;
  bool complete_ = true;
};

// "call:NAME{...}" (the text between the call markers).

}  // namespace

json ParseGemmaArguments(std::string_view text, bool* complete, size_t* consumed) {
  ArgParser p(text);
  json v = json::object();
  if (!text.empty() && text[0] == '{') {
    v = p.Object(1);
  } else {
    v = p.Value(0);
  }
  if (complete) *complete = p.complete();
  if (consumed) *consumed = p.pos();
  return v;
}

ParsedToolCall ParseToolCallBody(std::string_view raw, bool closed) {
  ParsedToolCall call;
  call.raw = std::string(raw);
  std::string_view s = TrimAscii(raw);
  if (s.substr(0, gemma4::kCallPrefix.size()) == gemma4::kCallPrefix) {
    s.remove_prefix(gemma4::kCallPrefix.size());
  }
  const size_t brace = s.find('{');
  call.name = std::string(TrimAscii(s.substr(0, brace)));
  bool args_complete = brace != std::string_view::npos;
  if (brace != std::string_view::npos) {
    size_t consumed = 0;
    call.arguments = ParseGemmaArguments(s.substr(brace), &args_complete, &consumed);
  }
  call.complete = closed && args_complete;
  return call;
}


}  // namespace gemlet
