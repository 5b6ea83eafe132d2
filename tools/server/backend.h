// What the scheduler asks of a request besides the model (runtime::SequenceModel): its
// sampler.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "runtime/sampler.h"

namespace gemlet::server {

// Picks the next token from logits; owns the request's RNG and penalty state.
class TokenSampler {
 public:
  virtual ~TokenSampler() = default;
  // `logits` may be modified in place. A request's output constraint (a grammar) is the
  // sampler's too: it returns only allowed tokens, and -1 (runtime::kNoToken) when the
  // constraint allows none.
  virtual int32_t Sample(std::span<float> logits) = 0;
  // The tokens the job may still sample, this one included (runtime::TokenConstraint::
  // SetBudget: a constrained output is steered to end whole within it). Called before Sample.
  virtual void SetBudget(int64_t tokens) { (void)tokens; }
  // The last pick's log-probabilities, when the request asked for them (SamplingOptions::
  // logprobs ≥ 0); null otherwise.
  virtual const runtime::PickLogprobs* logprobs() const { return nullptr; }
};

}  // namespace gemlet::server
