// The server's model: the ChatModel of a gemlet runtime Engine (Gemma 4). Its sequences and
// steps are the runtime's (runtime::EngineModel: sessions advanced in batched forward passes);
// all model work happens on the scheduler thread.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/audio_encoder.h"
#include "runtime/engine.h"
#include "runtime/engine_model.h"
#include "runtime/image_encoder.h"
#include "runtime/grammar_constraint.h"
#include "text/chat_format.h"
#include "text/output_vocab.h"
#include "text/tokenizer.h"
#include "tools/server/chat_model.h"

namespace gemlet::server {

class GemmaChatModel : public ChatModel {
 public:
  // The engine must have a tokenizer (checked by Create).
  // `images`: how image parts are encoded (the soft-token budget, the pixel budget); audio
  // parts and transcriptions use an AudioEncoder with its defaults.
  static Result<std::unique_ptr<GemmaChatModel>> Create(const runtime::Engine& engine, std::string id,
                                                        int64_t context,
                                                        const runtime::ImageEncoderOptions& images = {});
  // The image encoder (its cache and counts), null if the options were refused.
  const runtime::ImageEncoder* image_encoder() const { return images_.get(); }
  runtime::AudioEncoder* audio_encoder() override { return audio_.get(); }
  ApiOr<RenderedPrompt> RenderWindow(const runtime::WindowTurn& turn) override;
  runtime::WindowAnswer WindowAnswer(std::vector<int32_t> ids) override {
    return runtime::WindowAnswerOf(tok_, std::move(ids));
  }

  const std::string& id() const override { return id_; }
  runtime::SequenceModel& backend() override { return backend_; }
  // Speculative decoding for requests that decode alone (runtime::EngineModel::EnableDrafting).
  Status EnableDrafting(const runtime::SpeculativeOptions& options) { return backend_.EnableDrafting(options); }
  ApiOr<RenderedPrompt> RenderChat(const ChatRequest& req) override;
  ApiOr<std::vector<int32_t>> Tokenize(const std::string& text) override;
  const OutputVocab& output_vocab() const override { return vocab_; }
  std::vector<int32_t> StopTokens() const override { return engine_.eog_ids(); }
  int32_t BosToken() const override { return tok_.bos_id(); }
  int64_t ImageEncodes() const override { return images_ ? images_->encodes() : 0; }
  int64_t AudioEncodes() const override { return audio_ ? audio_->encodes() : 0; }
  ApiOr<std::unique_ptr<runtime::TokenConstraint>> ChatConstraint(const ChatRequest& req) override;
  ApiOr<std::unique_ptr<runtime::TokenConstraint>> TextConstraint(const OutputFormat& format) override;
  std::unique_ptr<TokenSampler> NewSampler(const SamplingOptions& options, uint64_t seed,
                                           std::unique_ptr<runtime::TokenConstraint> constraint) override;

 private:
  GemmaChatModel(const runtime::Engine& engine, std::string id, int64_t context);
  // The images and audio clips of `msgs` (placeholders placed in their content) encoded, in
  // prompt order per kind.
  ApiOr<std::vector<runtime::MediaRef>> EncodeMedia(const ChatRequest& req, std::vector<gemlet::ChatMessage>* msgs);
  // The tokenizer's grammar vocabulary, built on first use (any thread).
  ApiOr<std::shared_ptr<const grammar::Vocabulary>> GrammarVocab();
  // `gbnf` (start rule `start`) as a constraint; a grammar error is a 400 on `param`.
  ApiOr<std::unique_ptr<runtime::TokenConstraint>> Compile(const std::string& gbnf,
                                                          const std::string& start,
                                                          const runtime::GrammarSchedule& schedule,
                                                          const std::string& param);

  const runtime::Engine& engine_;
  const Tokenizer& tok_;
  std::string id_;
  runtime::EngineModel backend_;
  std::unique_ptr<runtime::ImageEncoder> images_;  // thread-safe: requests encode on their threads
  std::unique_ptr<runtime::AudioEncoder> audio_;   // likewise
  Gemma4OutputVocab vocab_;
  std::mutex grammar_mu_;
  std::shared_ptr<const grammar::Vocabulary> grammar_vocab_;
  // Compiled grammars by (start rule, schedule, text), most recent first: a request clones
  // one, so that requests with the same schema share its token-mask cache (a grammar's first
  // masks are its costly part).
  struct CompiledGrammar {
    std::string key;
    std::unique_ptr<runtime::GrammarConstraint> prototype;
  };
  std::list<CompiledGrammar> compiled_;
};

}  // namespace gemlet::server
