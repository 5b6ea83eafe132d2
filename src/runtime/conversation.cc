#include "runtime/conversation.h"

#include <algorithm>
#include <chrono>

#include "runtime/generate.h"
#include "runtime/session_file.h"

namespace gemlet::runtime {

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Jinja's `| trim` on ASCII whitespace.
std::string Trim(std::string_view s) {
  const char* ws = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(ws);
  return std::string(s.substr(b, e - b + 1));
}

// The template's strip_thinking macro: drops every "<|channel>…<channel|>" span, then trims.
std::string StripThinking(std::string_view text) {
  constexpr std::string_view kOpen = "<|channel>", kClose = "<channel|>";
  std::string out;
  for (;;) {
    const size_t close = text.find(kClose);
    const std::string_view part = text.substr(0, close);
    const size_t open = part.find(kOpen);
    out += part.substr(0, open);
    if (close == std::string_view::npos) break;
    text.remove_prefix(close + kClose.size());
  }
  return Trim(out);
}

constexpr char kFormat[] = "gemlet-conversation";
constexpr std::string_view kThoughtHeader = "thought\n";

Status CheckConversationJson(const nlohmann::json& j) {
  auto bad = [](const std::string& what) { return Corrupt("the saved conversation is malformed: " + what); };
  if (!j.is_object() || j.value("format", "") != kFormat) return bad("not a gemlet conversation");
  if (!j.contains("system") || !j["system"].is_string()) return bad("system");
  if (!j.contains("thinking") || !j["thinking"].is_boolean()) return bad("thinking");
  if (!j.contains("stale") || !j["stale"].is_boolean()) return bad("stale");
  if (!j.contains("tail") || !j["tail"].is_array() || j["tail"].size() > 1) return bad("tail");
  for (const auto& t : j["tail"]) {
    if (!t.is_number_integer()) return bad("tail");
  }
  if (!j.contains("messages") || !j["messages"].is_array()) return bad("messages");
  for (const auto& m : j["messages"]) {
    if (!m.is_object()) return bad("message");
    for (const char* k : {"role", "content", "thinking"}) {
      if (!m.contains(k) || !m[k].is_string()) return bad(std::string("message ") + k);
    }
    const std::string role = m["role"];
    if (role != "user" && role != "assistant") return bad("message role '" + role + "'");
  }
  return Status::Ok();
}

}  // namespace

Result<ContextPolicy> ParseContextPolicy(std::string_view name) {
  if (name == "stop") return ContextPolicy::kStop;
  if (name == "drop-oldest") return ContextPolicy::kDropOldest;
  return InvalidArgument("--context-policy must be stop or drop-oldest, got '" + std::string(name) + "'");
}

AnswerStream::AnswerStream(const Tokenizer& tok, TextFn on_text)
    : dec_(tok, /*skip_special=*/true),
      on_text_(std::move(on_text)),
      open_(tok.PieceToId("<|channel>")),
      close_(tok.PieceToId("<channel|>")) {}

void AnswerStream::Push(int32_t id) {
  if (id == open_ || id == close_) {
    Flush();
    if (in_thought_ && header_ > 0) Out(kThoughtHeader.substr(0, header_));  // a channel shorter than its header
    in_thought_ = id == open_;
    header_ = in_thought_ ? 0 : -1;
    return;
  }
  std::string text;
  if (!dec_.Push(id, &text).ok()) return;  // an id outside the vocabulary shows nothing
  Emit(text);
}

void AnswerStream::Flush() {
  std::string text;
  dec_.Flush(&text);
  Emit(text);
}

void AnswerStream::Emit(std::string_view text) {
  if (in_thought_ && header_ >= 0) {  // still matching "thought\n"
    size_t i = 0;
    while (i < text.size() && header_ < static_cast<int>(kThoughtHeader.size()) && text[i] == kThoughtHeader[header_]) {
      ++i, ++header_;
    }
    if (header_ == static_cast<int>(kThoughtHeader.size())) {
      header_ = -1;
    } else if (i < text.size()) {  // not the header after all: show what was held back
      const std::string held(kThoughtHeader.substr(0, header_));
      header_ = -1;
      Out(held);
    }
    text.remove_prefix(i);
  }
  Out(text);
}

void AnswerStream::Out(std::string_view text) {
  if (text.empty()) return;
  (in_thought_ ? thinking_ : content_).append(text);
  if (on_text_) on_text_(text, in_thought_);
}

Conversation::Conversation(const Engine& engine, const Tokenizer& tokenizer, const ConversationOptions& options)
    : engine_(engine), tok_(tokenizer), options_(options), session_(engine, options.session) {
  session_.set_sampler(options.sampler);
  turn_end_ = tok_.PieceToId("<turn|>");
}

std::string RenderChatPrompt(const std::string& system, bool thinking, const std::vector<ConversationMessage>& messages,
                             bool add_generation_prompt) {
  std::string s = "<bos>";
  if (thinking || !system.empty()) {
    s += "<|turn>system\n";
    if (thinking) s += "<|think|>\n";
    s += Trim(system) + "<turn|>\n";
  }
  for (const auto& m : messages) {
    const bool model = m.role == "assistant";
    s += "<|turn>" + std::string(model ? "model" : m.role) + "\n" + (model ? StripThinking(m.content) : Trim(m.content)) +
         "<turn|>\n";
  }
  if (add_generation_prompt) s += "<|turn>model\n";
  return s;
}

std::string Conversation::Render(const std::vector<ConversationMessage>& messages, bool add_generation_prompt) const {
  return RenderChatPrompt(options_.system, options_.thinking, messages, add_generation_prompt);
}

Result<std::vector<int32_t>> Conversation::TurnTokens(const ConversationMessage& user, bool* full) const {
  *full = stale_ || session_.position() == 0;
  if (*full) {
    std::vector<ConversationMessage> all = messages_;
    all.push_back(user);
    return tok_.Encode(Render(all, true));
  }
  // Continue the cache: close the previous answer unless it closed itself with <turn|>.
  const bool closed = !tail_.empty() && tail_.back() == turn_end_;
  ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                   tok_.Encode(std::string(closed ? "\n" : "<turn|>\n") + "<|turn>user\n" + user.content +
                               "<turn|>\n<|turn>model\n"));
  ids.insert(ids.begin(), tail_.begin(), tail_.end());
  return ids;
}

Result<TurnStats> Conversation::Send(std::string_view user_text, const TurnCallbacks& cb) {
  const auto t_start = Clock::now();
  ConversationMessage user{"user", Trim(user_text), ""};
  if (user.content.empty()) return InvalidArgument("the message is empty");
  const int64_t limit = session_.context_limit();

  TurnStats st;
  st.context_limit = limit;
  bool full = false;
  ASSIGN_OR_RETURN(std::vector<int32_t> toks, TurnTokens(user, &full));
  std::vector<ConversationMessage> kept = messages_;
  auto fits = [&](int64_t base, int64_t n) { return base + n + 1 <= limit; };  // + 1: room to answer
  if (!fits(full ? 0 : session_.position(), static_cast<int64_t>(toks.size()))) {
    if (options_.policy == ContextPolicy::kStop) {
      return OutOfRange("the context is full: " + std::to_string(session_.position()) + " of " +
                        std::to_string(limit) + " tokens used and this message needs " + std::to_string(toks.size()) +
                        " more; /reset starts a new conversation (or run with --context-policy drop-oldest)");
    }
    // Drop whole turns from the front until the rest, the message and room for an answer fit.
    const int64_t room = std::max<int64_t>(1, std::min(options_.max_tokens, limit / 2));
    for (;;) {
      std::vector<ConversationMessage> all = kept;
      all.push_back(user);
      ASSIGN_OR_RETURN(toks, tok_.Encode(Render(all, true)));
      if (static_cast<int64_t>(toks.size()) + room <= limit) break;
      if (kept.empty()) {
        return OutOfRange("this message needs " + std::to_string(toks.size()) + " tokens with the system prompt, " +
                          "too many for the context limit of " + std::to_string(limit) +
                          " with room to answer (raise --ctx or shorten the message)");
      }
      const size_t n = kept.size() > 1 && kept[0].role == "user" && kept[1].role == "assistant" ? 2 : 1;
      kept.erase(kept.begin(), kept.begin() + n);
      st.dropped_messages += static_cast<int64_t>(n);
    }
    full = true;
    if (cb.on_notice) {
      cb.on_notice("context full: dropped the " + std::to_string(st.dropped_messages) +
                   " oldest messages and prefilled the remaining " + std::to_string(toks.size()) + " tokens again");
    }
  }

  // Prefill all but the last token in chunks (Ctrl+C is checked between them); Generate
  // feeds the last one and samples the answer.
  if (full) session_.Reset();
  st.full_prefill = full;
  st.cached_tokens = session_.position();
  st.prefill_tokens = static_cast<int64_t>(toks.size());
  tail_.clear();
  stale_ = true;  // until the turn completes
  const auto t_prefill = Clock::now();
  const int64_t chunk = std::max<int64_t>(1, options_.session.prefill_chunk);
  const int64_t head = static_cast<int64_t>(toks.size()) - 1;
  for (int64_t b = 0; b < head; b += chunk) {
    if (cb.should_stop && cb.should_stop()) {
      st.interrupted = true;
      st.position = session_.position();
      messages_ = kept;
      turns_.push_back(st);
      return st;
    }
    const auto part = std::span<const int32_t>(toks).subspan(b, std::min(chunk, head - b));
    RETURN_IF_ERROR(session_.Prefill(part, nullptr));
  }
  const double head_ms = MsSince(t_prefill);

  AnswerStream answer(tok_, cb.on_text);
  GenerateOptions go;
  go.max_tokens = std::min(options_.max_tokens, limit - session_.position() - 1);
  go.stop_at_eog = options_.stop_at_eog;
  bool first = true;
  auto on_token = [&](int32_t id) {
    if (cb.should_stop && cb.should_stop()) {
      st.interrupted = true;
      return false;
    }
    if (first) {
      st.ttft_ms = MsSince(t_start);
      first = false;
    }
    if (!(options_.stop_at_eog && engine_.IsEog(id))) answer.Push(id);
    return true;
  };
  ASSIGN_OR_RETURN(GenerateResult res,
                   Generate(session_, std::span<const int32_t>(toks).subspan(head), go, on_token));
  answer.Flush();

  st.prefill_ms = head_ms + res.timings.prefill_ms;
  st.decode_ms = res.timings.decode_ms;
  st.stopped_at_eog = res.stopped_at_eog;
  st.generated_tokens = static_cast<int64_t>(res.ids.size()) - (st.interrupted ? 1 : 0);
  if (!st.interrupted && !res.stopped_at_eog && !res.ids.empty()) {
    st.token_limit = go.max_tokens == options_.max_tokens;
    st.context_full = !st.token_limit;
  }
  // The last sampled token is not in the cache yet: an interrupted one is dropped (it was
  // never shown), <turn|> starts the next turn, other end-of-generation ids are replaced by
  // the <turn|> the next turn writes.
  if (!st.interrupted && !res.ids.empty()) {
    const int32_t last = res.ids.back();
    if (last == turn_end_ || !engine_.IsEog(last)) tail_.push_back(last);
  }
  messages_ = std::move(kept);
  messages_.push_back(std::move(user));
  messages_.push_back(ConversationMessage{"assistant", answer.content(), answer.thinking()});
  stale_ = false;
  st.position = session_.position() + static_cast<int64_t>(tail_.size());
  if (st.context_full && cb.on_notice) {
    cb.on_notice("context full: " + std::to_string(st.position) + " of " + std::to_string(limit) +
                 " tokens used; " +
                 (options_.policy == ContextPolicy::kStop
                      ? std::string("/reset starts a new conversation (or run with --context-policy drop-oldest)")
                      : std::string("the next message drops the oldest turns")));
  }
  turns_.push_back(st);
  return st;
}

void Conversation::Reset() {
  session_.Reset();
  messages_.clear();
  turns_.clear();
  tail_.clear();
  stale_ = false;
}

void Conversation::SetSystem(std::string system) {
  if (system == options_.system) return;
  options_.system = std::move(system);
  if (session_.position() > 0) stale_ = true;
}

void Conversation::SetThinking(bool on) {
  if (on == options_.thinking) return;
  options_.thinking = on;
  if (session_.position() > 0) stale_ = true;
}

nlohmann::json Conversation::ToJson() const {
  nlohmann::json msgs = nlohmann::json::array();
  for (const auto& m : messages_) {
    msgs.push_back({{"role", m.role}, {"content", m.content}, {"thinking", m.thinking}});
  }
  return {{"format", kFormat}, {"system", options_.system}, {"thinking", options_.thinking},
          {"stale", stale_},   {"tail", tail_},             {"messages", msgs}};
}

Status Conversation::Save(const std::string& path) const { return SaveSessionFile(path, session_, ToJson()); }

Status Conversation::Load(const std::string& path) {
  ASSIGN_OR_RETURN(nlohmann::json j, LoadSessionFile(path, &session_, [&](const nlohmann::json& extra) -> Status {
                     Status st = CheckConversationJson(extra);
                     if (st.ok()) {
                       for (const auto& t : extra["tail"]) {
                         const int64_t id = t.get<int64_t>();
                         if (id < 0 || id >= tok_.size()) st = Corrupt("the saved conversation's tail token is invalid");
                       }
                     }
                     return st.WithContext(path);
                   }));
  messages_.clear();
  for (const auto& m : j["messages"]) {
    messages_.push_back(ConversationMessage{m["role"], m["content"], m["thinking"]});
  }
  options_.system = j["system"];
  options_.thinking = j["thinking"];
  stale_ = j["stale"];
  tail_ = j["tail"].get<std::vector<int32_t>>();
  turns_.clear();
  return Status::Ok();
}

}  // namespace gemlet::runtime
