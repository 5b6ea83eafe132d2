#include "text/chat_parser.h"

#include <utility>

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
constexpr std::string_view kThought = kThoughtHeader.substr(0, kThoughtHeader.size() - 1);

// m stands in full at s[pos..].
bool FullAt(std::string_view s, size_t pos, std::string_view m) { return s.substr(pos).starts_with(m); }
// s[pos..] is a proper prefix of m (the rest of m may still arrive).
bool PartialAt(std::string_view s, size_t pos, std::string_view m) {
  const size_t left = s.size() - pos;
  return left < m.size() && m.compare(0, left, s.substr(pos)) == 0;
}
bool IsEnd(std::string_view s, size_t pos) {
  for (std::string_view e : kEnds) {
    if (FullAt(s, pos, e)) return true;
  }
  return false;
}

// The markers read in content and reasoning, with what each one is.
struct TextMarker {
  std::string_view text;
  TokenKind kind;
};
constexpr TextMarker kTextMarkers[] = {
    {kOpenChannel, TokenKind::kChannelOpen}, {kCloseChannel, TokenKind::kChannelClose},
    {kCallOpen, TokenKind::kToolCallOpen},   {kEnds[0], TokenKind::kEndOfTurn},
    {kEnds[1], TokenKind::kEndOfTurn},       {kEnds[2], TokenKind::kEndOfTurn},
};

void AddEvent(ChatParser::Event::Kind kind, std::string_view text, ChatParser::Delta* d) {
  if (!d->events.empty() && d->events.back().kind == kind) {
    d->events.back().text.append(text);
  } else {
    d->events.push_back(ChatParser::Event{kind, std::string(text), {}});
  }
}

}  // namespace

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
    : ChatParser(ChatParserOptions{.in_reasoning = in_reasoning}, nullptr) {}

ChatParser::ChatParser(ChatParserOptions options, const OutputVocab* vocab)
    : options_(std::move(options)),
      vocab_(vocab),
      decoder_(vocab ? vocab->NewDecoder() : nullptr),
      stop_(options_.stop),
      state_(options_.in_reasoning ? State::kReasoning : State::kContent) {}

void ChatParser::Emit(std::string_view text, Delta* d) {
  if (text.empty() || stopped_) return;
  if (state_ == State::kReasoning) {
    result_.reasoning.append(text);
    d->reasoning.append(text);
    AddEvent(Event::kReasoning, text, d);
    return;
  }
  bool matched = false;
  const std::string visible = stop_.Push(text, &matched);
  if (!visible.empty()) {
    result_.content.append(visible);
    d->content.append(visible);
    AddEvent(Event::kContent, visible, d);
  }
  if (matched) {
    stopped_ = true;
    state_ = State::kEnded;
    buf_.clear();
  }
}

// The decoder holds a run of byte tokens back until the run ends (text/tokenizer.h), which
// may be never: a reply in characters the vocabulary spells in bytes is one run. A stop string
// complete in what it holds ends the output on this token; the held text is final then, as the
// reply ends here.
void ChatParser::StopInHeldText(Delta* d) {
  if (options_.stop.empty() || stopped_ || state_ != State::kContent || !decoder_) return;
  const std::string held = decoder_->Peek();
  if (held.empty() || !stop_.Matches(buf_ + held)) return;
  buf_.append(decoder_->Flush());
  Emit(buf_, d);
  buf_.clear();
}

void ChatParser::AddCall(std::string_view raw, bool closed, Delta* d) {
  ParsedToolCall call = ParseToolCallBody(raw, closed);
  state_ = State::kContent;
  if (options_.bad_calls_as_content && call.name.empty()) {
    Emit(raw, d);  // not a well-formed call: show it rather than lose it
    return;
  }
  result_.tool_calls.push_back(call);
  d->tool_calls.push_back(call);
  d->events.push_back(Event{Event::kToolCall, {}, std::move(call)});
}

void ChatParser::OnMarker(TokenKind marker, Delta* d) {
  switch (marker) {
    case TokenKind::kChannelOpen:
      if (state_ == State::kContent) state_ = State::kChannelName;
      break;
    case TokenKind::kChannelClose:  // a stray close in content is dropped
      if (state_ != State::kToolCall) state_ = State::kContent;
      break;
    case TokenKind::kToolCallOpen:
      if (state_ == State::kToolCall) AddCall(buf_, false, d);  // a new call cuts this one off
      if (state_ == State::kEnded) break;
      buf_.clear();
      call_scan_ = 0;
      call_in_string_ = false;
      state_ = State::kToolCall;
      break;
    case TokenKind::kToolCallClose:
      if (state_ == State::kToolCall) {
        AddCall(buf_, true, d);
        buf_.clear();
      }
      break;
    case TokenKind::kEndOfTurn:
      if (state_ == State::kToolCall) AddCall(buf_, false, d);
      buf_.clear();
      result_.ended = true;
      state_ = State::kEnded;
      break;
    case TokenKind::kText:
    case TokenKind::kHidden:
      break;
  }
}

void ChatParser::ScanToolCall(Until until, Delta* d) {
  // The closing marker (or an end marker) outside <|"|> strings.
  bool& in_string = call_in_string_;
  size_t& i = call_scan_;
  for (; i < buf_.size(); ++i) {
    if (FullAt(buf_, i, kQuote)) {
      in_string = !in_string;
      i += kQuote.size() - 1;
      continue;
    }
    if (PartialAt(buf_, i, kQuote)) break;
    if (in_string) continue;
    bool partial = PartialAt(buf_, i, kCallClose);
    for (std::string_view e : kEnds) partial = partial || PartialAt(buf_, i, e);
    if (partial || FullAt(buf_, i, kCallClose) || IsEnd(buf_, i)) break;
  }
  if (FullAt(buf_, i, kCallClose)) {
    const size_t end = i;
    i = 0;
    in_string = false;
    AddCall(std::string_view(buf_).substr(0, end), true, d);
    buf_.erase(0, end + kCallClose.size());
    return;
  }
  const bool end = IsEnd(buf_, i);
  if (!end && until != Until::kFinal) return;  // the call is still arriving
  const size_t stop = end ? i : buf_.size();
  i = 0;
  in_string = false;
  AddCall(std::string_view(buf_).substr(0, stop), false, d);
  buf_.clear();
  if (end) {
    result_.ended = true;
    state_ = State::kEnded;
  }
}

void ChatParser::Run(Until until, Delta* d) {
  const bool scan = options_.text_markers;
  while (true) {
    switch (state_) {
      case State::kEnded:
        buf_.clear();
        return;
      case State::kChannelName: {
        // Gemma 4 names the channel: drop "thought\n" (or a bare "thought"). Cut short, what
        // came is reasoning.
        if (PartialAt(buf_, 0, kThoughtHeader) && until == Until::kMore) return;  // wait for more
        if (FullAt(buf_, 0, kThoughtHeader)) {
          buf_.erase(0, kThoughtHeader.size());
        } else if (FullAt(buf_, 0, kThought) && buf_.size() > kThought.size()) {
          buf_.erase(0, kThought.size());
        }
        state_ = State::kReasoning;
        continue;
      }
      case State::kToolCall:
        if (scan) {
          const State before = state_;
          const size_t size = buf_.size();
          ScanToolCall(until, d);
          if (state_ == before && buf_.size() == size) return;  // waiting for more
          continue;
        }
        if (until == Until::kFinal) {
          AddCall(buf_, false, d);
          buf_.clear();
        }
        return;
      case State::kContent:
      case State::kReasoning: {
        if (!scan) {
          Emit(buf_, d);
          buf_.clear();
          return;
        }
        size_t hold = buf_.size();
        size_t pos = buf_.find('<');
        const TextMarker* marker = nullptr;
        for (; pos != std::string::npos; pos = buf_.find('<', pos + 1)) {
          for (const TextMarker& m : kTextMarkers) {
            if (FullAt(buf_, pos, m.text)) marker = &m;
          }
          if (marker) break;
          if (until == Until::kMore && hold == buf_.size()) {
            for (const TextMarker& m : kTextMarkers) {
              if (PartialAt(buf_, pos, m.text)) hold = pos;
            }
          }
        }
        if (!marker) {  // emit all but a possible marker start at the end
          Emit(std::string_view(buf_).substr(0, hold), d);
          buf_.erase(0, hold);
          return;
        }
        Emit(std::string_view(buf_).substr(0, pos), d);
        if (state_ == State::kEnded) continue;  // a stop string
        buf_.erase(0, pos + marker->text.size());
        const std::string rest = std::exchange(buf_, {});
        OnMarker(marker->kind, d);
        buf_ = rest;
        continue;
      }
    }
  }
}

ChatParser::Delta ChatParser::Push(std::string_view text) {
  Delta d;
  if (state_ == State::kEnded) return d;
  buf_.append(text);
  Run(Until::kMore, &d);
  return d;
}

ChatParser::Delta ChatParser::PushToken(int32_t token) {
  Delta d;
  if (state_ == State::kEnded || vocab_ == nullptr) return d;
  TokenKind kind = vocab_->KindOf(token);
  if (kind == TokenKind::kEndOfTurn && !options_.end_of_turn_ends) kind = TokenKind::kHidden;
  if (kind == TokenKind::kHidden) return d;
  if (!options_.chat) {  // raw completion: text only
    if (kind == TokenKind::kText) {
      buf_.append(decoder_->Push(token));
      Emit(buf_, &d);
      buf_.clear();
      StopInHeldText(&d);
    }
    return d;
  }
  if (kind == TokenKind::kText || options_.text_markers) {  // markers by their text
    buf_.append(decoder_->Push(token));
    Run(Until::kMore, &d);
    StopInHeldText(&d);
    return d;
  }
  // A marker token: the text before it is complete.
  buf_.append(decoder_->Flush());
  Run(Until::kSettle, &d);
  if (state_ != State::kEnded) OnMarker(kind, &d);
  return d;
}

void ChatParser::Prime(std::span<const int32_t> tokens) {
  for (int32_t t : tokens) PushToken(t);
}

ChatParser::Delta ChatParser::Finish() {
  Delta d;
  if (decoder_ && state_ != State::kEnded) buf_.append(decoder_->Flush());
  Run(Until::kFinal, &d);
  if (!stopped_) {
    const std::string held = stop_.Flush();
    if (!held.empty()) {
      result_.content.append(held);
      d.content.append(held);
      AddEvent(Event::kContent, held, &d);
    }
  }
  return d;
}

ParsedOutput ParseChatOutput(std::string_view text, bool in_reasoning) {
  ChatParser p(in_reasoning);
  p.Push(text);
  p.Finish();
  return p.result();
}

}  // namespace gemlet
