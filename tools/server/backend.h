// The narrow interface between the scheduler and a language model: sequences (KV state),
// prefill, and one batched decode step over several sequences. model_backend.h implements it
// with the gemlet runtime; tests implement it with a fake model.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "base/status.h"

namespace gemlet::server {

// One sequence's model state (its KV cache). Only the Backend that made it may use it.
class SequenceState {
 public:
  virtual ~SequenceState() = default;
  // Tokens held (the next token goes to this position).
  virtual int64_t length() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // Most tokens one sequence may hold.
  virtual int64_t context_length() const = 0;
  virtual int32_t vocab_size() const = 0;

  virtual Result<std::unique_ptr<SequenceState>> NewSequence() = 0;
  // A copy of `seq` that can grow independently (used to keep a shared prompt prefix in the
  // prefix cache). Backends that cannot copy return Unsupported.
  virtual Result<std::unique_ptr<SequenceState>> Fork(const SequenceState& seq) = 0;

  // Appends `tokens` (at least one) to `seq`; writes the logits after the last one to
  // `logits` ([vocab]).
  virtual Status Prefill(SequenceState& seq, std::span<const int32_t> tokens,
                         std::span<float> logits) = 0;

  // One decode step for N sequences in one pass over the weights: appends tokens[i] to
  // *seqs[i] and writes the logits after it to logits[i * vocab, (i + 1) * vocab). The result
  // for each sequence must not depend on which other sequences share the batch.
  virtual Status DecodeBatch(std::span<SequenceState* const> seqs,
                             std::span<const int32_t> tokens, std::span<float> logits) = 0;
};

// Picks the next token from logits; owns the request's RNG and penalty state.
class TokenSampler {
 public:
  virtual ~TokenSampler() = default;
  // `logits` may be modified in place.
  virtual int32_t Sample(std::span<float> logits) = 0;
};

}  // namespace gemlet::server
