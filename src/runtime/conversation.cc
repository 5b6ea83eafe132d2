#include "runtime/conversation.h"

#include <algorithm>

#include "base/clock.h"
#include "format/gemma4_tokens.h"
#include "runtime/audio_encoder.h"
#include "runtime/generate.h"
#include "runtime/grammar_constraint.h"
#include "runtime/image_encoder.h"
#include "runtime/prefix_cache.h"
#include "runtime/session_file.h"
#include "text/utf8.h"

namespace gemlet::runtime {

namespace {

ChatMessage Message(std::string role, std::string content, std::string reasoning = "") {
  ChatMessage m;
  m.role = std::move(role);
  m.content = std::move(content);
  m.reasoning = std::move(reasoning);
  return m;
}

constexpr char kFormat[] = "gemlet-conversation";

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
    auto msg = ChatMessageFromJson(m);
    if (!msg.ok()) return bad(msg.status().message());
    if (msg->role != "user" && msg->role != "assistant") return bad("message role '" + msg->role + "'");
  }
  return Status::Ok();
}

}  // namespace

Result<ContextPolicy> ParseContextPolicy(std::string_view name) {
  if (name == "stop") return ContextPolicy::kStop;
  if (name == "drop-oldest") return ContextPolicy::kDropOldest;
  if (name == "shift") return ContextPolicy::kShift;
  return InvalidArgument("--context-policy must be stop, drop-oldest or shift, got '" + std::string(name) + "'");
}

AnswerStream::AnswerStream(const Tokenizer& tok, TextFn on_text)
    : vocab_(tok), parser_(ChatParserOptions{}, &vocab_), on_text_(std::move(on_text)) {}

void AnswerStream::Push(int32_t id) {
  if (vocab_.KindOf(id) == TokenKind::kHidden) return;
  if (parser_.ended()) {  // generating past the end of the turn: a new segment
    Show(parser_.Finish());
    parser_ = ChatParser(ChatParserOptions{}, &vocab_);
  }
  Show(parser_.PushToken(id));
}

void AnswerStream::Flush() { Show(parser_.Finish()); }

void AnswerStream::Show(const ChatParser::Delta& d) {
  if (!d.reasoning.empty()) {
    thinking_ += d.reasoning;
    if (on_text_) on_text_(d.reasoning, true);
  }
  if (!d.content.empty()) {
    content_ += d.content;
    if (on_text_) on_text_(d.content, false);
  }
  for (const auto& call : d.tool_calls) {
    calls_.push_back(call);
    const std::string shown = "[tool call " + call.name + " " + call.arguments.dump() + "]";
    if (on_text_) on_text_(shown, false);
  }
}

Conversation::Conversation(const Engine& engine, const Tokenizer& tokenizer, const ConversationOptions& options)
    : engine_(engine), tok_(tokenizer), options_(options), session_(engine, options.session) {
  session_.set_sampler(options.sampler);
  media_kinds_ = MediaKindTokens(engine);  // indexed by MediaKind
}

Result<MediaPrompt> Conversation::Expand(std::vector<int32_t> tokens, bool full,
                                         const std::vector<std::vector<MediaRef>>& kept,
                                         std::span<const MediaRef> user_media) const {
  std::vector<MediaRef> media;
  if (full) {
    for (const auto& m : kept) media.insert(media.end(), m.begin(), m.end());
  }
  media.insert(media.end(), user_media.begin(), user_media.end());
  if (media.empty()) {
    MediaPrompt p;
    p.tokens = std::move(tokens);
    return p;
  }
  return ExpandMedia(tokens, media, media_kinds_);
}

Result<std::string> Conversation::Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  std::vector<ChatMessage> all;
  if (!options_.system.empty()) all.push_back(Message("system", options_.system));
  all.insert(all.end(), messages.begin(), messages.end());
  ChatOptions co;
  co.add_generation_prompt = add_generation_prompt;
  co.enable_thinking = options_.thinking;
  return RenderChat(all, co);
}

Result<std::vector<int32_t>> Conversation::TurnTokens(const ChatMessage& user, bool* full) const {
  std::vector<ChatMessage> all = messages_;
  all.push_back(user);
  ASSIGN_OR_RETURN(const std::string prompt, Render(all, true));
  *full = stale_ || session_.position() == 0;
  if (!*full) {
    // This turn's own text: what the template adds after the conversation so far (whose
    // thoughts it no longer renders once a user message follows).
    std::vector<ChatMessage> history = messages_;
    for (auto& m : history) m.reasoning.clear();
    ASSIGN_OR_RETURN(const std::string before, Render(history, false));
    *full = prompt.compare(0, before.size(), before) != 0;
    if (!*full) {
      // The cache holds the previous answer as generated, without its end: close it.
      std::string rest(gemma4::kTurnClose);
      rest += "\n";
      rest += prompt.substr(before.size());
      ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok_.Encode(rest));
      ids.insert(ids.begin(), tail_.begin(), tail_.end());
      return ids;
    }
  }
  return tok_.Encode(prompt);
}

Result<TurnStats> Conversation::Send(std::string_view user_text, const TurnCallbacks& cb) {
  return Send(user_text, {}, cb);
}

Result<TurnStats> Conversation::Send(std::string_view user_text, std::span<const MediaRef> user_media,
                                     const TurnCallbacks& cb) {
  const auto t_start = SteadyClock::now();
  std::string text(utf8::TrimAsciiSpace(user_text));
  int64_t images = 0, clips = 0;
  for (const MediaRef& m : user_media) (m->kind == MediaKind::kImage ? images : clips) += 1;
  if (images > 0) {
    ASSIGN_OR_RETURN(text, PlaceMedia(text, images, gemma4::kImage, "{image}"));
  }
  if (clips > 0) {
    ASSIGN_OR_RETURN(text, PlaceMedia(text, clips, gemma4::kAudio, "{audio}"));
  }
  const ChatMessage user = Message("user", std::move(text));
  if (user.content.empty()) return InvalidArgument("the message is empty");
  const int64_t limit = session_.context_limit();

  TurnStats st;
  st.context_limit = limit;
  bool full = false;
  ASSIGN_OR_RETURN(std::vector<int32_t> ids, TurnTokens(user, &full));
  std::vector<ChatMessage> kept = messages_;
  std::vector<std::vector<MediaRef>> kept_media = media_;
  ASSIGN_OR_RETURN(MediaPrompt toks, Expand(std::move(ids), full, kept_media, user_media));
  auto fits = [&](int64_t base, int64_t n) { return base + n + 1 <= limit; };  // + 1: room to answer
  if (!fits(full ? 0 : session_.position(), toks.size())) {
    if (options_.policy == ContextPolicy::kStop) {
      return OutOfRange("the context is full: " + std::to_string(session_.position()) + " of " +
                        std::to_string(limit) + " tokens used and this message needs " + std::to_string(toks.size()) +
                        " more; /reset starts a new conversation (or run with --context-policy drop-oldest)");
    }
    // Drop whole turns from the front (kShift: after the first turn) until the rest, the
    // message and room for an answer fit. The kept start (<bos>, the system turn, with kShift
    // the first turn) stays in the cache: only what follows it is prefilled again (below).
    const int64_t room = std::max<int64_t>(1, std::min(options_.max_tokens, limit / 2));
    size_t first = options_.policy == ContextPolicy::kShift && kept.size() >= 2 && kept[0].role == "user" &&
                           kept[1].role == "assistant"
                       ? 2
                       : 0;
    for (;;) {
      std::vector<ChatMessage> all = kept;
      all.push_back(user);
      ASSIGN_OR_RETURN(const std::string prompt, Render(all, true));
      ASSIGN_OR_RETURN(ids, tok_.Encode(prompt));
      ASSIGN_OR_RETURN(toks, Expand(std::move(ids), true, kept_media, user_media));
      if (toks.size() + room <= limit) break;
      if (kept.size() <= first) first = 0;  // only the first turn is left: it goes too
      if (kept.empty()) {
        return OutOfRange("this message needs " + std::to_string(toks.size()) + " tokens with the system prompt, " +
                          "too many for the context limit of " + std::to_string(limit) +
                          " with room to answer (raise --ctx or shorten the message)");
      }
      const size_t n =
          kept.size() > first + 1 && kept[first].role == "user" && kept[first + 1].role == "assistant" ? 2 : 1;
      kept.erase(kept.begin() + first, kept.begin() + first + n);
      kept_media.erase(kept_media.begin() + first, kept_media.begin() + first + n);
      st.dropped_messages += static_cast<int64_t>(n);
    }
    full = true;
    if (cb.on_notice) {
      cb.on_notice("context full: dropped the " + std::to_string(st.dropped_messages) + " oldest messages" +
                   (first > 0 ? std::string(" after the first turn") : std::string()) + " (" +
                   std::to_string(toks.size()) + " tokens remain)");
    }
  }

  // A conversation rendered afresh keeps what the cache already holds of it (the shared
  // start: <bos>, the system turn, the turns before a dropped or interrupted one), as the
  // server's prefix cache does: the session rolls back to the common start.
  if (full) {
    const int64_t keep = std::min<int64_t>(
        CommonPrefixLength(session_.history(), session_.media(), toks.tokens, toks.media), toks.size() - 1);
    RETURN_IF_ERROR(session_.Truncate(keep));
    toks = toks.Slice(keep, toks.size());
  }
  // Prefill all but the last token in chunks (Ctrl+C is checked between them); Generate
  // feeds the last one and samples the answer.
  st.full_prefill = full;
  st.cached_tokens = session_.position();
  st.prefill_tokens = toks.size();
  tail_.clear();
  stale_ = true;  // until the turn completes
  const auto t_prefill = SteadyClock::now();
  const int64_t chunk = std::max<int64_t>(1, options_.session.prefill_chunk);
  const int64_t head = toks.size() - 1;
  const int64_t total = toks.size();
  // The last token is text (a media run ends with its close id): Generate feeds it.
  GEMLET_CHECK(toks.media.empty() || toks.media.back().start + toks.media.back().rows <= head);
  for (int64_t b = 0; b < head; b += chunk) {
    if (cb.on_prefill) cb.on_prefill(b, total);
    if (cb.should_stop && cb.should_stop()) {
      st.interrupted = true;
      st.position = session_.position();
      messages_ = kept;
      media_ = kept_media;
      turns_.push_back(st);
      return st;
    }
    RETURN_IF_ERROR(session_.Prefill(toks.Slice(b, std::min(b + chunk, head)), nullptr));
  }
  if (cb.on_prefill) cb.on_prefill(head, total);
  const double head_ms = MsSince(t_prefill);

  AnswerStream answer(tok_, cb.on_text);
  GenerateOptions go;
  go.max_tokens = std::min(options_.max_tokens, limit - session_.position() - 1);
  go.stop_at_eog = options_.stop_at_eog;
  go.speculative = options_.speculative;
  std::unique_ptr<GrammarConstraint> constraint;
  if (!options_.grammar.empty()) {
    ASSIGN_OR_RETURN(constraint, AnswerConstraint());
    go.constraint = constraint.get();
  }
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
                   Generate(session_, std::span<const int32_t>(toks.tokens).subspan(head), go, on_token));
  answer.Flush();

  st.prefill_ms = head_ms + res.timings.prefill_ms;
  st.decode_ms = res.timings.decode_ms;
  st.stopped_at_eog = res.stopped_at_eog;
  st.generated_tokens = static_cast<int64_t>(res.ids.size()) - (st.interrupted ? 1 : 0);
  if (!st.interrupted && !res.stopped_at_eog && !res.ids.empty()) {
    st.token_limit = go.max_tokens == options_.max_tokens;
    st.context_full = !st.token_limit;
  }
  // The last sampled token is not in the cache yet. One cut off by the token limit was shown
  // and opens the next turn's tokens; an interrupted one was never shown; an end-of-generation
  // id is written again as the <turn|> that closes the turn (the same tokens for <turn|>).
  if (!st.interrupted && !res.ids.empty() && !engine_.IsEog(res.ids.back())) tail_.push_back(res.ids.back());
  messages_ = std::move(kept);
  messages_.push_back(user);
  messages_.push_back(Message("assistant", answer.content(), answer.thinking()));
  media_ = std::move(kept_media);
  media_.emplace_back(user_media.begin(), user_media.end());
  media_.emplace_back();
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
  media_.clear();
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
  for (const auto& m : messages_) msgs.push_back(gemlet::ToJson(m));
  return {{"format", kFormat}, {"system", options_.system}, {"thinking", options_.thinking},
          {"stale", stale_},   {"tail", tail_},             {"messages", msgs}};
}

Status Conversation::Save(const std::string& path) const {
  for (const auto& m : media_) {
    if (!m.empty()) return Unsupported("a conversation with images cannot be saved yet (/reset first)");
  }
  return SaveSessionFile(path, session_, ToJson());
}

Status Conversation::Load(const std::string& path) {
  auto check = [&](const nlohmann::json& extra) -> Status {
    RETURN_IF_ERROR(CheckConversationJson(extra).WithContext(path));
    for (const auto& t : extra["tail"]) {
      const int64_t id = t.get<int64_t>();
      if (id < 0 || id >= tok_.size()) return Corrupt(path + ": the saved conversation's pending token is invalid");
    }
    return Status::Ok();
  };
  auto loaded = LoadSessionFile(path, &session_, check);
  if (!loaded.ok()) {
    // Only a failure while restoring (after every check) touches the session: it is left
    // empty, and the next turn prefills the messages again.
    if (session_.position() == 0 && !messages_.empty()) stale_ = true;
    return loaded.status();
  }
  const nlohmann::json& j = *loaded;
  messages_.clear();
  for (const auto& m : j["messages"]) messages_.push_back(*ChatMessageFromJson(m));  // checked above
  media_.assign(messages_.size(), {});
  options_.system = j["system"];
  options_.thinking = j["thinking"];
  stale_ = j["stale"];
  tail_ = j["tail"].get<std::vector<int32_t>>();
  turns_.clear();
  return Status::Ok();
}

Result<std::unique_ptr<GrammarConstraint>> Conversation::AnswerConstraint() {
  if (!grammar_vocab_) {
    ASSIGN_OR_RETURN(grammar_vocab_, GrammarVocabulary(tok_));
  }
  std::unique_ptr<GrammarConstraint>& proto = grammar_[thinking() ? 1 : 0];
  if (!proto) {
    ASSIGN_OR_RETURN(proto, GrammarConstraint::Create(options_.grammar, grammar_vocab_,
                                                      ChatAnswerSchedule(thinking())));
  }
  std::unique_ptr<TokenConstraint> copy = proto->Clone();
  return std::unique_ptr<GrammarConstraint>(static_cast<GrammarConstraint*>(copy.release()));
}

}  // namespace gemlet::runtime
