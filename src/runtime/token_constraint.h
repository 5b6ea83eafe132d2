// What a generation may sample next, as the sampler sees it: a grammar (runtime/
// grammar_constraint.h over grammar/), or a test's own rule. The sampler asks about its pick
// first (Allows) and computes the whole mask only when the pick is refused, so a constraint
// that allows most tokens costs one check per token; the generation loop then calls Accept.
//
// Protocol per step: Allows(t)* → [Mask] → Accept(picked). Rollback(n) undoes the last n
// Accepts exactly (a rejected speculative draft, a rolled-back sequence).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "base/status.h"

namespace gemlet::runtime {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;

  // Whether `token` may come next.
  virtual bool Allows(int32_t token) = 0;
  // Sets bit t of `mask` (word t / 32, bit t % 32) for every token t that may come next and
  // clears the others; mask has (vocab + 31) / 32 words. Agrees with Allows for every token.
  virtual void Mask(std::span<uint32_t> mask) = 0;
  // Advances past `token`. InvalidArgument if it is not allowed (nothing changes then).
  virtual Status Accept(int32_t token) = 0;
  // Undoes the last n accepted tokens; OutOfRange if fewer than n are remembered.
  virtual Status Rollback(int64_t n) = 0;
  // The constraint is satisfied and allows nothing but ending: the generation should end.
  virtual bool Complete() const = 0;
  // An independent copy in the same state (the n > 1 choices of one prompt).
  virtual std::unique_ptr<TokenConstraint> Clone() const = 0;
  // The most tokens the generation may still sample, this step's included (its token limit,
  // or the context's room). A constraint that has to be complete to be useful (a grammar)
  // then allows only what can still be completed within it, the end included, so that
  // the output is whole when the budget allows it. Called before each step's Allows/Mask.
  virtual void SetBudget(int64_t tokens) { (void)tokens; }
};

inline bool MaskBit(std::span<const uint32_t> mask, int32_t t) {
  return (mask[static_cast<size_t>(t) >> 5] >> (t & 31)) & 1u;
}

}  // namespace gemlet::runtime
