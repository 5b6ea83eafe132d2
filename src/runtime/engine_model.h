// EngineModel: the SequenceModel (runtime/sequence_model.h) of a gemlet Engine. Its sequences
// are Sessions; a step is one model::Forward over a batch whose rows are every part's tokens
// (decode steps, prefill chunks and verify rows side by side), so the weights are read once
// for all of them; a part's media rows (StepPart::media, image soft tokens) enter as input
// embeddings with the pad id's per-layer embedding, as Session::Prefill feeds them. Not thread-safe: one thread steps it (the server's scheduler thread).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "model/forward_types.h"
#include "model/gemma4_forward.h"
#include "runtime/engine.h"
#include "runtime/sequence_model.h"
#include "runtime/session.h"

namespace gemlet::runtime {

struct DraftState;  // runtime/speculative.h

class EngineModel : public SequenceModel {
 public:
  // New sequences are Sessions with `options` (their context limit is context_length()).
  EngineModel(const Engine& engine, const SessionOptions& options);

  const Engine& engine() const { return engine_; }
  int64_t context_length() const override { return context_; }
  int32_t vocab_size() const override { return static_cast<int32_t>(engine_.config().vocab_size); }
  Result<std::unique_ptr<Sequence>> NewSequence() override;
  Result<std::unique_ptr<Sequence>> Fork(const Sequence& seq, int64_t n) override;
  Status Truncate(Sequence& seq, int64_t n) override;
  // Resets the session's draft policy and counters (its drafter input stays: it still follows
  // the session's tokens).
  void BeginRequest(Sequence& seq) override;
  Status Step(std::span<const StepPart> parts, std::span<float> logits) override;

  // Speculative decoding with `options` (mode ≠ kOff; CheckSpeculative) for sequences that
  // decode alone: DraftRound runs SpeculativeRound with the session's DraftState. With the
  // MTP drafter, every Step also keeps the final hidden state of each logits row in its
  // session's DraftState (h, h_pos), so the first round after a prefill or batched steps
  // drafts with the drafter too; Truncate below h_pos forgets it.
  Status EnableDrafting(const SpeculativeOptions& options);
  bool drafts() const override { return speculative_.mode != DraftMode::kOff; }
  Status DraftRound(Sequence& seq, int32_t last, int64_t room, const RowDraw& draw, bool* more,
                    SpeculativeStats* stats) override;

 private:
  // The session's DraftState (made on first use).
  DraftState& StateOf(Session& s);

  const Engine& engine_;
  SessionOptions options_;
  int64_t context_;
  model::ForwardScratch scratch_;
  std::vector<int32_t> tokens_;
  std::vector<model::BatchSequence> seqs_;
  std::vector<int64_t> out_rows_;
  std::vector<int64_t> embed_rows_, part_rows_;
  std::vector<float> embeddings_, part_embeddings_;
  SpeculativeOptions speculative_;
  bool feeds_drafter_ = false;  // UsesDrafter(engine_, speculative_)
  std::vector<float> hidden_;   // [out_rows_.size(), D] of a step, for the drafter
};

}  // namespace gemlet::runtime
