// The server's model: Backend and ChatModel over a gemlet runtime Engine (Gemma 4). Sequences
// are runtime KV caches; prefill runs model::Forward and a decode step for N sequences runs
// model::ForwardBatch (one pass over the weights). All model work happens on the scheduler
// thread, so one forward scratch is shared by every sequence.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/gemma4_forward.h"
#include "runtime/engine.h"
#include "runtime/output_vocab.h"
#include "runtime/tokenizer.h"
#include "tools/server/chat_model.h"

namespace gemlet::server {

class GemmaBackend : public Backend {
 public:
  // `context` = tokens per sequence (capped at the model's max_position_embeddings).
  GemmaBackend(const runtime::Engine& engine, int64_t context);

  int64_t context_length() const override { return context_; }
  int32_t vocab_size() const override;
  Result<std::unique_ptr<SequenceState>> NewSequence() override;
  Result<std::unique_ptr<SequenceState>> Fork(const SequenceState& seq) override;
  Status Prefill(SequenceState& seq, std::span<const int32_t> tokens, std::span<float> logits) override;
  Status DecodeBatch(std::span<SequenceState* const> seqs, std::span<const int32_t> tokens,
                     std::span<float> logits) override;

 private:
  const runtime::Engine& engine_;
  int64_t context_;
  model::ForwardScratch scratch_;
};

class GemmaChatModel : public ChatModel {
 public:
  // The engine must have a tokenizer (checked by Create).
  static Result<std::unique_ptr<GemmaChatModel>> Create(const runtime::Engine& engine, std::string id,
                                                        int64_t context);

  const std::string& id() const override { return id_; }
  Backend& backend() override { return backend_; }
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
  GemmaBackend backend_;
  Gemma4OutputVocab vocab_;
};

}  // namespace gemlet::server
