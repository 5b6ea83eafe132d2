// The seam between batching and a language model: sequences (a model's per-sequence state)
// and one forward step that advances several of them at once. EngineModel
// (runtime/engine_model.h) implements it over a gemlet Engine, whose sequences are Sessions;
// the server's tests implement it with a fake model. Whoever drives it (the server's
// scheduler, the command line's generation loop) decides what goes into a step with PlanStep.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "runtime/media.h"
#include "runtime/speculative_options.h"

namespace gemlet::runtime {

// One sequence's model state. Only the model that made it may use it.
class Sequence {
 public:
  virtual ~Sequence() = default;
  // The tokens held, in position order (the next token goes to position length()).
  virtual std::span<const int32_t> tokens() const = 0;
  int64_t length() const { return static_cast<int64_t>(tokens().size()); }
  // The runs of tokens() that hold media rows (runtime/media.h), sorted; the prefix cache
  // matches them by content.
  virtual std::span<const MediaSpan> media() const { return {}; }
};

// One sequence's part of a step: `tokens` (at least one) appended after what it holds.
struct StepPart {
  Sequence* seq = nullptr;
  std::span<const int32_t> tokens;
  bool logits = true;  // the logits after its last token are wanted
  // Runs of `tokens` that take media rows instead of their ids' embeddings (runtime/media.h;
  // starts relative to `tokens`, sorted, inside them): image soft tokens. The sequence keeps
  // them (Sequence::media()) for the prefix cache.
  std::span<const MediaSpan> media = {};
};

class SequenceModel {
 public:
  virtual ~SequenceModel() = default;

  // Most tokens one sequence may hold.
  virtual int64_t context_length() const = 0;
  virtual int32_t vocab_size() const = 0;

  virtual Result<std::unique_ptr<Sequence>> NewSequence() = 0;
  // A copy of the first n ≤ seq.length() tokens of `seq` that grows independently (the prefix
  // cache keeps one of a shared system prompt). Unsupported where the model cannot copy.
  virtual Result<std::unique_ptr<Sequence>> Fork(const Sequence& seq, int64_t n) = 0;
  // Rolls `seq` back to its first n ≤ length() tokens, exactly as if it had never held more.
  virtual Status Truncate(Sequence& seq, int64_t n) = 0;
  // `seq` (new, or handed over by the prefix cache) starts serving another request: what the
  // model learned about the last one (a draft policy's acceptance) is forgotten.
  virtual void BeginRequest(Sequence& seq) { (void)seq; }

  // One forward step over every part (distinct sequences), in one pass over the weights.
  // logits [k, vocab] receives, in part order, the logits of the k parts that asked. Each
  // part's result does not depend on which other parts share the step. On error no sequence
  // has changed.
  virtual Status Step(std::span<const StepPart> parts, std::span<float> logits) = 0;

  // Speculative decoding (runtime/speculative.h) of a sequence that decodes alone, if the
  // model drafts (drafts()): one round after `last` (sampled, not yet fed) with at most
  // `room` drafts; `draw` is called for the verify rows in order, while the draws equal the
  // drafts. On return `seq` holds `last` and the accepted drafts, and *more says whether the
  // generation goes on (the last draw is then the next pending token). The round's counters
  // are added to *stats. Only the model's own Step may have fed `seq` in between.
  virtual bool drafts() const { return false; }
  virtual Status DraftRound(Sequence& seq, int32_t last, int64_t room, const RowDraw& draw, bool* more,
                            SpeculativeStats* stats) {
    (void)seq, (void)last, (void)room, (void)draw, (void)more, (void)stats;
    return Unsupported("this model does not draft");
  }
};

// The continuous-batching policy of one step. pending[i] is what sequence i has waiting:
// 1 for a decode step (its sampled token), more for a prompt still to prefill, 0 for
// nothing. Every decode row goes in (decode streams never wait), then prompt chunks of at
// most `chunk` tokens, in order, while the step's rows stay within `budget` (the first prompt
// chunk always gets at least one row, so prompts progress even beside many decoders). Returns
// the tokens to take from each sequence.
std::vector<int64_t> PlanStep(std::span<const int64_t> pending, int64_t budget, int64_t chunk);

}  // namespace gemlet::runtime
