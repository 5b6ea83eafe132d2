#include "runtime/chat_parser.h"

#include <cerrno>
#include <cstdlib>

#include "format/gemma4_tokens.h"

namespace gemlet {

namespace {

using json = nlohmann::json;

constexpr std::string_view kOpenChannel = gemma4::kChannelOpen;
constexpr std::string_view kCloseChannel = gemma4::kChannelClose;
constexpr std::string_view kCallOpen = gemma4::kToolCallOpen;
constexpr std::string_view kCallClose = gemma4::kToolCallClose;
constexpr std::string_view kQuote = gemma4::kQuote;
constexpr std::string_view kEnds[] = {gemma4::kTurnClose, gemma4::kToolResponseOpen, gemma4::kEos};
constexpr std::string_view kThoughtHeader = gemma4::kThoughtHeader;
constexpr int kMaxDepth = 64;

bool StartsWith(std::string_view s, size_t pos, std::string_view m) {
  return s.size() - pos >= m.size() && s.compare(pos, m.size(), m) == 0;
}
// s[pos..] is a proper prefix of m (the rest of m may still arrive).
bool PartialAt(std::string_view s, size_t pos, std::string_view m) {
  const size_t left = s.size() - pos;
  return left < m.size() && m.compare(0, left, s.substr(pos)) == 0;
}

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
    if (StartsWith(s_, i_, kQuote)) return GemmaString();
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
    if (StartsWith(s_, i_, kQuote)) return GemmaString().get<std::string>();
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
ParsedToolCall ParseCall(std::string_view raw, bool closed) {
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

json ToJson(const ParsedOutput& out) {
  json j = {{"content", out.content}};
  if (!out.reasoning.empty()) j["reasoning"] = out.reasoning;
  if (!out.tool_calls.empty()) {
    json calls = json::array();
    for (const ParsedToolCall& c : out.tool_calls) {
      calls.push_back({{"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", c.arguments}}},
                       {"complete", c.complete}});
    }
    j["tool_calls"] = std::move(calls);
  }
  return j;
}

ChatParser::ChatParser(bool in_reasoning)
    : state_(in_reasoning ? State::kReasoning : State::kContent) {}

void ChatParser::Emit(std::string_view text, Delta* d) {
  if (text.empty()) return;
  if (state_ == State::kReasoning) {
    result_.reasoning.append(text);
    d->reasoning.append(text);
  } else {
    result_.content.append(text);
    d->content.append(text);
  }
}

void ChatParser::Run(bool final, Delta* d) {
  while (true) {
    switch (state_) {
      case State::kEnded:
        buf_.clear();
        return;
      case State::kChannelName: {
        if (PartialAt(buf_, 0, kThoughtHeader) && !final) return;  // wait for more
        if (StartsWith(buf_, 0, kThoughtHeader)) {
          buf_.erase(0, kThoughtHeader.size());
        } else if (StartsWith(buf_, 0, "thought") ||
                   (final && PartialAt(buf_, 0, kThoughtHeader))) {
          buf_.erase(0, std::min(buf_.size(), std::string_view("thought").size()));
        }
        state_ = State::kReasoning;
        continue;
      }
      case State::kToolCall: {
        // The closing marker (or an end marker) outside <|"|> strings.
        bool& in_string = call_in_string_;
        size_t& i = call_scan_;
        for (; i < buf_.size(); ++i) {
          if (StartsWith(buf_, i, kQuote)) {
            in_string = !in_string;
            i += kQuote.size() - 1;
            continue;
          }
          if (PartialAt(buf_, i, kQuote)) break;
          if (in_string) continue;
          bool partial = PartialAt(buf_, i, kCallClose);
          for (std::string_view e : kEnds) partial = partial || PartialAt(buf_, i, e);
          if (partial || StartsWith(buf_, i, kCallClose)) break;
          bool end = false;
          for (std::string_view e : kEnds) end = end || StartsWith(buf_, i, e);
          if (end) break;
        }
        if (StartsWith(buf_, i, kCallClose)) {
          ParsedToolCall call = ParseCall(std::string_view(buf_).substr(0, i), true);
          result_.tool_calls.push_back(call);
          d->tool_calls.push_back(std::move(call));
          buf_.erase(0, i + kCallClose.size());
          i = 0;
          in_string = false;
          state_ = State::kContent;
          continue;
        }
        bool end = false;
        for (std::string_view e : kEnds) end = end || StartsWith(buf_, i, e);
        if (!end && !final) return;  // the call is still arriving
        ParsedToolCall call =
            ParseCall(std::string_view(buf_).substr(0, end ? i : buf_.size()), false);
        result_.tool_calls.push_back(call);
        d->tool_calls.push_back(std::move(call));
        if (end) result_.ended = true;
        state_ = end ? State::kEnded : State::kContent;
        buf_.clear();
        i = 0;
        in_string = false;
        return;
      }
      case State::kContent:
      case State::kReasoning: {
        size_t hold = buf_.size();
        size_t pos = buf_.find('<');
        std::string_view marker;
        for (; pos != std::string::npos; pos = buf_.find('<', pos + 1)) {
          for (std::string_view m :
               {kOpenChannel, kCloseChannel, kCallOpen, kEnds[0], kEnds[1], kEnds[2]}) {
            if (StartsWith(buf_, pos, m)) marker = m;
          }
          if (!marker.empty()) break;
          if (!final && hold == buf_.size()) {
            for (std::string_view m :
                 {kOpenChannel, kCloseChannel, kCallOpen, kEnds[0], kEnds[1], kEnds[2]}) {
              if (PartialAt(buf_, pos, m)) hold = pos;
            }
          }
        }
        if (marker.empty()) {  // emit all but a possible marker start at the end
          Emit(std::string_view(buf_).substr(0, hold), d);
          buf_.erase(0, hold);
          return;
        }
        Emit(std::string_view(buf_).substr(0, pos), d);
        buf_.erase(0, pos + marker.size());
        if (marker == kOpenChannel) {
          if (state_ == State::kContent) state_ = State::kChannelName;
        } else if (marker == kCloseChannel) {
          state_ = State::kContent;  // a stray close in content is dropped
        } else if (marker == kCallOpen) {
          state_ = State::kToolCall;
        } else {
          result_.ended = true;
          state_ = State::kEnded;
        }
        continue;
      }
    }
  }
}

ChatParser::Delta ChatParser::Push(std::string_view text) {
  Delta d;
  if (state_ == State::kEnded) return d;
  buf_.append(text);
  Run(false, &d);
  return d;
}

ChatParser::Delta ChatParser::Finish() {
  Delta d;
  Run(true, &d);
  return d;
}

ParsedOutput ParseChatOutput(std::string_view text, bool in_reasoning) {
  ChatParser p(in_reasoning);
  p.Push(text);
  p.Finish();
  return p.result();
}

}  // namespace gemlet
