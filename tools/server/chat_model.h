// What the HTTP layer needs from a loaded model besides its sequences and steps
// (runtime::SequenceModel): the chat template, tokenizer, stop tokens, sampler, and the
// vocabulary the output parser reads generated tokens with (text/chat_parser.h).
// model_backend.h implements it with the gemlet runtime (Gemma 4); tests use a fake.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "text/output_vocab.h"
#include "tools/server/api_error.h"
#include "tools/server/api_types.h"
#include "runtime/audio_encoder.h"
#include "runtime/media.h"
#include "runtime/sequence_model.h"
#include "runtime/token_constraint.h"
#include "runtime/transcriber.h"
#include "tools/server/backend.h"

namespace gemlet::server {

struct RenderedPrompt {
  std::vector<int32_t> tokens;
  // Tokens of the leading part many requests share (the system turn), 0 if none: the prefix
  // cache keeps a copy of the state there.
  int64_t shared_prefix = 0;
  // Tokens at the end of `tokens` that the reply already begins with (a forced tool call
  // opening, RenderedChat::reply_prefix): the output parser reads them first (Prime).
  std::vector<int32_t> reply_prefix;
  // Runs of `tokens` that take image or audio soft tokens (the messages' media, encoded;
  // starts are prompt positions, sorted).
  std::vector<runtime::MediaSpan> media;
};

class ChatModel {
 public:
  virtual ~ChatModel() = default;
  virtual const std::string& id() const = 0;
  virtual runtime::SequenceModel& backend() = 0;

  // The messages' images (ChatMessage::images, bytes by now) and audio clips are encoded here:
  // a bad image or clip is a 400 naming its part; a model without a vision (audio) tower
  // answers 400 to any image (clip).
  virtual ApiOr<RenderedPrompt> RenderChat(const ChatRequest& req) = 0;
  // A raw /v1/completions prompt; special tokens written as text are matched.
  virtual ApiOr<std::vector<int32_t>> Tokenize(const std::string& text) = 0;
  // Which generated tokens are markers, and the text of the others.
  virtual const OutputVocab& output_vocab() const = 0;
  virtual std::vector<int32_t> StopTokens() const = 0;
  // Images the vision tower has encoded so far (cache misses; /metrics'
  // gemlet_image_encodes_total), and clips the audio tower has.
  virtual int64_t ImageEncodes() const { return 0; }
  virtual int64_t AudioEncodes() const { return 0; }
  // The audio encoder (transcriptions decode and window audio with it), null if the model
  // has none; available() says whether it has an audio tower.
  virtual runtime::AudioEncoder* audio_encoder() { return nullptr; }
  // The prompt of one transcription window's turn (runtime::WindowPrompt), and its answer from
  // the generated ids (runtime::WindowAnswerOf).
  virtual ApiOr<RenderedPrompt> RenderWindow(const runtime::WindowTurn& turn) {
    (void)turn;
    return BadRequest("this model reads no audio", "file", "unsupported_content");
  }
  virtual runtime::WindowAnswer WindowAnswer(std::vector<int32_t> ids) { return {"", std::move(ids)}; }
  // The beginning-of-sequence token (/tokenize's add_special), -1 if none.
  virtual int32_t BosToken() const { return -1; }
  // What a request's output must be, enforced while sampling: response_format / grammar, and
  // for chats the tool calls (tool_choice "required" or a named function: a call to a declared
  // function with arguments valid against its parameters; "auto": a call, once opened).
  // Null when the output is free. A bad schema or grammar is a 400 naming where it is wrong.
  virtual ApiOr<std::unique_ptr<runtime::TokenConstraint>> ChatConstraint(const ChatRequest& req) = 0;
  virtual ApiOr<std::unique_ptr<runtime::TokenConstraint>> TextConstraint(
      const OutputFormat& format) = 0;
  // `constraint` (may be null) then belongs to the sampler, which advances it.
  virtual std::unique_ptr<TokenSampler> NewSampler(
      const SamplingOptions& options, uint64_t seed,
      std::unique_ptr<runtime::TokenConstraint> constraint) = 0;
};

}  // namespace gemlet::server
