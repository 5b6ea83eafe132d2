// Adaptive draft length for speculative decoding: how many tokens to draft this round, from
// the running acceptance rate of each proposer and the measured costs of a draft step and of
// a verify pass of each width. A round of K drafts whose tokens are each accepted with
// probability α (given the ones before were) yields E(K) = (1 − α^(K+1)) / (1 − α) tokens
// for K · draft + verify(K + 1); K = 0 is a plain decode step, verify(1). The policy picks the
// K in 0 … max with the most tokens per millisecond. When that is 0 (drafts do not pay), it
// pauses and probes with a short draft after a wait that doubles with each failed probe, so
// a proposer whose drafts start being accepted (a quoted passage for prompt lookup) is found
// again.
#pragma once

#include <array>
#include <cstdint>

#include "runtime/speculative_options.h"

namespace gemlet::runtime {

enum class Proposer { kMtp = 0, kLookup = 1 };

class DraftPolicy {
 public:
  // Acceptance starts at `prior` for every proposer; costs are unknown until measured (a
  // verify width that was never measured is estimated from the nearest measured one below,
  // 10 % more per extra row; a draft step from one tenth of a decode step).
  explicit DraftPolicy(int64_t max_draft, double prior = 0.5);

  // Drafts for the next round of `p`, 0 … min(max_draft, limit). Probing counts calls.
  int64_t Choose(Proposer p, int64_t limit);
  // A round of `p` with `drafted` ≥ 1 drafts, of which the first `accepted` were accepted.
  void Observe(Proposer p, int64_t drafted, int64_t accepted);
  // Measured costs: one draft step of `p` (the proposer's time for one token), and a verify
  // pass (or, width 1, a plain step) of `width` rows.
  void MeasureDraft(Proposer p, double ms);
  void MeasureVerify(int64_t width, double ms);

  double acceptance(Proposer p) const { return alpha_[static_cast<int>(p)]; }
  double verify_ms(int64_t width) const;  // measured or estimated; 0 if nothing was measured
  double draft_ms(Proposer p) const;      // measured or estimated
  // Expected tokens per millisecond of a round of K drafts of `p` (K = 0: plain decoding).
  double Rate(Proposer p, int64_t K) const;

 private:
  static constexpr double kDecay = 0.1;  // weight of a new observation in the running means
  int64_t max_;
  std::array<double, 2> alpha_;
  std::array<double, 2> draft_ms_{0, 0};
  std::array<double, kMaxDraft + 2> verify_ms_{};  // [width], 0 = not measured
  std::array<int64_t, 2> wait_{0, 0};      // rounds still paused
  std::array<int64_t, 2> backoff_{4, 4};   // the next pause after a failed probe
  std::array<bool, 2> probing_{false, false};
};

}  // namespace gemlet::runtime
