// Conversation: a multi-turn Gemma 4 chat over one Session, with incremental prefill. The KV
// cache carries across turns: a new turn prefills only its own tokens (the end of the previous
// answer, the user turn and the model-turn opening), because the Gemma 4 format is append-only
// when earlier thoughts are not re-rendered; the model's generated tokens stay in the cache as
// generated. The whole conversation is prefilled again only after a change to its beginning
// (system prompt, thinking switch), after old turns were dropped to make room, or after an
// interrupted prefill. Used by `gemlet chat` and `gemlet run --chat`; the server may reuse it.
//
// Prompts are rendered by text/chat_format.h (the Gemma 4 template; spec §4.4):
//   <bos>[<|turn>system\n[<|think|>\n]SYSTEM<turn|>\n]
//   (<|turn>user\nTEXT<turn|>\n<|turn>model\nANSWER<turn|>\n)* <|turn>user\nTEXT<turn|>\n<|turn>model\n
// and answers parsed by text/chat_parser.h: the model's thoughts (<|channel>thought\n…
// <channel|>) are shown apart from the answer and are not rendered again when the
// conversation is re-prefilled.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "text/chat_format.h"
#include "text/chat_parser.h"
#include "runtime/engine.h"
#include "runtime/grammar_constraint.h"
#include "runtime/media.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/speculative_options.h"
#include "text/tokenizer.h"

namespace gemlet::runtime {

// What happens when a turn does not fit the context limit.
enum class ContextPolicy {
  kStop,        // refuse the turn with a notice (the user may /reset)
  kDropOldest,  // drop whole old turns (the system prompt stays) and re-prefill the rest
  kShift,       // keep the system prompt and the first turn, drop the oldest turns after them,
                // and re-prefill only what follows that kept prefix (it stays in the cache)
};
// "stop" / "drop-oldest" / "shift".
Result<ContextPolicy> ParseContextPolicy(std::string_view name);

struct ConversationOptions {
  SessionOptions session;  // context limit, prefill chunk
  SamplerOptions sampler;
  int64_t max_tokens = 1024;  // per answer
  bool stop_at_eog = true;    // false: keep generating past end-of-turn (tests, benchmarks)
  ContextPolicy policy = ContextPolicy::kStop;
  std::string system;         // system prompt ("" = none)
  bool thinking = false;      // <|think|> in the system turn
  // GBNF every answer must match (grammar/; "" = free). With thinking on, the thought block
  // that may open an answer is free and the grammar starts after it.
  std::string grammar;
  // Speculative decoding of the answers (runtime/speculative.h; GenerateOptions::speculative).
  SpeculativeOptions speculative;
};

// How one turn went.
struct TurnStats {
  int64_t prefill_tokens = 0;    // tokens this turn prefilled
  int64_t cached_tokens = 0;     // tokens already in the cache that it reused
  bool full_prefill = false;     // the whole conversation was (re)prefilled
  int64_t dropped_messages = 0;  // old messages dropped to make room (kDropOldest, kShift)
  int64_t generated_tokens = 0;
  double prefill_ms = 0;
  double ttft_ms = 0;            // from the start of the turn to the first generated token
  double decode_ms = 0;          // after the first token
  bool stopped_at_eog = false;   // the answer ended itself (end of turn)
  bool interrupted = false;      // should_stop() said so
  bool context_full = false;     // the answer stopped at the context limit
  bool token_limit = false;      // the answer stopped at max_tokens
  int64_t position = 0;          // tokens in the context after the turn
  int64_t context_limit = 0;
  double prefill_tok_s() const { return prefill_ms > 0 ? prefill_tokens * 1000.0 / prefill_ms : 0; }
  double decode_tok_s() const {
    return decode_ms > 0 && generated_tokens > 1 ? (generated_tokens - 1) * 1000.0 / decode_ms : 0;
  }
};

struct TurnCallbacks {
  // Text as it is generated; `thinking` is true inside the thought channel.
  std::function<void(std::string_view text, bool thinking)> on_text;
  // Polled between forward steps; true stops the turn (Ctrl+C).
  std::function<bool()> should_stop;
  // One-line notices (old turns dropped, context full).
  std::function<void(const std::string& notice)> on_notice;
  // Prefill progress: the turn's tokens prefilled so far of its total, before the first chunk
  // (0) and after each (Ctrl+C, through should_stop, stops between chunks and keeps what was
  // prefilled); the last token goes with the answer's first step.
  std::function<void(int64_t done, int64_t total)> on_prefill;
};

// An answer as it streams: ids → ChatParser (text/chat_parser.h, markers read in text too),
// which splits the thought channel (<|channel>thought\n…<channel|>) from the visible text and
// reads tool calls. Special tokens other than the parser's markers are not shown. After an
// end-of-turn marker (generation past it, --ignore-eos) the text that follows is a new answer
// segment, shown the same way.
class AnswerStream {
 public:
  using TextFn = std::function<void(std::string_view text, bool thinking)>;
  AnswerStream(const Tokenizer& tokenizer, TextFn on_text);
  void Push(int32_t id);
  // Emits what the decoder and the parser still hold back.
  void Flush();
  const std::string& content() const { return content_; }
  const std::string& thinking() const { return thinking_; }
  const std::vector<ParsedToolCall>& tool_calls() const { return calls_; }

 private:
  void Show(const ChatParser::Delta& d);
  Gemma4OutputVocab vocab_;
  ChatParser parser_;  // reads vocab_; a new one for each segment
  TextFn on_text_;
  std::string content_, thinking_;
  std::vector<ParsedToolCall> calls_;
};

class Conversation {
 public:
  // `engine` and `tokenizer` must outlive the conversation.
  Conversation(const Engine& engine, const Tokenizer& tokenizer, const ConversationOptions& options);

  // Adds a user message and generates the answer. Errors leave the conversation as it was,
  // except that an interrupted or failed prefill makes the next turn prefill everything again.
  // An empty message is an InvalidArgument; a turn that does not fit under kStop is OutOfRange
  // with the numbers and what to do.
  Result<TurnStats> Send(std::string_view user_text, const TurnCallbacks& callbacks = {});
  // The same with media (images encoded by runtime/image_encoder.h, audio clips by
  // runtime/audio_encoder.h): `{image}` or `<|image|>` (`{audio}` or `<|audio|>`) in the text
  // places each image (clip) in order, else they come before the text (PlaceMedia).
  // The conversation keeps them with the message, so a turn that prefills the conversation
  // again feeds their rows without encoding them again.
  Result<TurnStats> Send(std::string_view user_text, std::span<const MediaRef> media,
                         const TurnCallbacks& callbacks = {});

  // Forgets every message (the system prompt and the thinking switch stay).
  void Reset();
  // Both take effect at the next turn; with messages already in the cache that turn prefills
  // the whole conversation again.
  void SetSystem(std::string system);
  void SetThinking(bool on);

  // /save and /load: the messages and the session's KV state (runtime/session_file.h).
  Status Save(const std::string& path) const;
  // On error the conversation is left as it was (if restoring the cache itself fails, after
  // every check passed, the cache is empty and the next turn prefills the messages again).
  Status Load(const std::string& path);

  const std::vector<ChatMessage>& messages() const { return messages_; }
  // The media of each message (aligned with messages()).
  const std::vector<std::vector<MediaRef>>& message_media() const { return media_; }
  const std::string& system() const { return options_.system; }
  bool thinking() const { return options_.thinking; }
  const ConversationOptions& options() const { return options_; }
  const Session& session() const { return session_; }
  Session& session() { return session_; }
  int64_t position() const { return session_.position(); }
  int64_t context_limit() const { return session_.context_limit(); }
  // Every turn's stats since the start (or the last Reset/Load).
  const std::vector<TurnStats>& turns() const { return turns_; }

  // The prompt text a fresh prefill of `messages` (user and assistant turns) feeds: the system
  // turn first, the model-turn opening last when add_generation_prompt.
  Result<std::string> Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

 private:
  // Tokens to feed for a turn adding `user`: incremental (continuing the cache) or, if
  // `*full`, the whole conversation (after a reset of the session).
  Result<std::vector<int32_t>> TurnTokens(const ChatMessage& user, bool* full) const;
  // `tokens` with their media placeholders expanded: the media of `user_media` alone, or with
  // `full` those of `kept` (the messages rendered before the user's) first.
  Result<MediaPrompt> Expand(std::vector<int32_t> tokens, bool full, const std::vector<std::vector<MediaRef>>& kept,
                             std::span<const MediaRef> user_media) const;
  nlohmann::json ToJson() const;
  // options_.grammar as the constraint of one answer (the vocabulary is built once).
  Result<std::unique_ptr<GrammarConstraint>> AnswerConstraint();

  const Engine& engine_;
  const Tokenizer& tok_;
  ConversationOptions options_;
  Session session_;
  std::vector<ChatMessage> messages_;
  std::vector<std::vector<MediaRef>> media_;  // per message
  std::vector<MediaTokens> media_kinds_;      // placeholder ids, indexed by MediaKind
  std::vector<TurnStats> turns_;
  // The answer's last token when the token limit cut it off: Generate samples it but does not
  // feed it, so it starts the next turn's tokens.
  std::vector<int32_t> tail_;
  bool stale_ = false;  // the cache no longer matches messages_: re-prefill everything
  std::shared_ptr<const grammar::Vocabulary> grammar_vocab_;
  // options_.grammar compiled, per thinking mode (answers clone it: they share its mask cache).
  std::unique_ptr<GrammarConstraint> grammar_[2];
};

}  // namespace gemlet::runtime
