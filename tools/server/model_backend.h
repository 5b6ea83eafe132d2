// The server's model: the ChatModel of a gemlet runtime Engine (Gemma 4). Its sequences and
// steps are the runtime's (runtime::EngineModel: sessions advanced in batched forward passes);
// all model work happens on the scheduler thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "runtime/engine_model.h"
#include "text/output_vocab.h"
#include "text/tokenizer.h"
#include "tools/server/chat_model.h"

namespace gemlet::server {

class GemmaChatModel : public ChatModel {
 public:
  // The engine must have a tokenizer (checked by Create).
  static Result<std::unique_ptr<GemmaChatModel>> Create(const runtime::Engine& engine, std::string id,
                                                        int64_t context);

  const std::string& id() const override { return id_; }
  runtime::SequenceModel& backend() override { return backend_; }
  ApiOr<RenderedPrompt> RenderChat(const ChatRequest& req) override;
  ApiOr<std::vector<int32_t>> Tokenize(const std::string& text) override;
  const OutputVocab& output_vocab() const override { return vocab_; }
  std::vector<int32_t> StopTokens() const override { return engine_.eog_ids(); }
  std::unique_ptr<TokenSampler> NewSampler(const SamplingOptions& options, uint64_t seed) override;

 private:
  GemmaChatModel(const runtime::Engine& engine, std::string id, int64_t context);

  const runtime::Engine& engine_;
  const Tokenizer& tok_;
  std::string id_;
  runtime::EngineModel backend_;
  Gemma4OutputVocab vocab_;
};

}  // namespace gemlet::server
