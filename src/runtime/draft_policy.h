// Adaptive draft length for speculative decoding: how many tokens to draft this round, from
// the running acceptance rate of each proposer and the measured costs of a draft step and of
// a verify pass of each width. A round of K drafts whose tokens are each accepted with
// probability α (given the ones before were) yields E(K) = (1 − α^(K+1)) / (1 − α) tokens
// for K · draft + verify(K + 1); K = 0 is a plain decode step, verify(1). The policy picks the
// K in 0 … max with the most tokens per millisecond, so it drafts only while the expected
// accepted tokens are worth more than the draft steps and the verify's extra rows cost.
//
// α is a discounted count of recent trials (about the last 20 drafts) that starts from a prior
// worth two trials, discounted with them, so a run of rejected rounds pushes it as far below
// the break-even point as it needs (a prior kept at full weight held α ≥ 1/22, which cheap
// drafts — the sparse head at 1 % of a decode step — still took for paying, so a drafter that
// was never accepted drafted every round, 4 % slower than plain decoding). A round must also
// promise 2 % more tokens per millisecond than plain decoding, so that noise in the measured
// costs does not keep a useless drafter going. Drafting then pauses, and probes with a short draft after a wait that doubles with each failed probe
// (4, 8, … 256 plain steps), so a proposer whose drafts are never accepted costs a fraction of
// a percent. A probe whose drafts are all accepted forgets the bad stretch (α back to the
// prior), so a proposer that starts paying again (a quoted passage for prompt lookup) is
// found within a few rounds.
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
  // 10 % more per extra row; a draft step from one tenth of a decode step). Until a decode
  // step is measured, Choose drafts a probe's length.
  explicit DraftPolicy(int64_t max_draft, double prior = 0.5);

  // Drafts for the next round of `p`, 0 … min(max_draft, limit). Pauses count calls.
  int64_t Choose(Proposer p, int64_t limit);
  // A round of `p` with `drafted` ≥ 1 drafts, of which the first `accepted` were accepted.
  void Observe(Proposer p, int64_t drafted, int64_t accepted);
  // Measured costs: one draft step of `p` (the proposer's time for one token), and a verify
  // pass (or, width 1, a plain step) of `width` rows.
  void MeasureDraft(Proposer p, double ms);
  void MeasureVerify(int64_t width, double ms);

  double acceptance(Proposer p) const;
  bool paused(Proposer p) const { return wait_[static_cast<int>(p)] > 0; }
  double verify_ms(int64_t width) const;  // measured or estimated; 0 if nothing was measured
  double draft_ms(Proposer p) const;      // measured or estimated
  // Expected tokens per millisecond of a round of K drafts of `p` (K = 0: plain decoding).
  double Rate(Proposer p, int64_t K) const;

  static constexpr int64_t kProbe = 2;          // drafts of a probe
  static constexpr int64_t kFirstBackoff = 4;   // plain steps of the first pause
  static constexpr int64_t kMaxBackoff = 256;   // of the longest

 private:
  static constexpr double kDiscount = 0.95;     // per trial: the estimate spans ~20 drafts
  static constexpr double kPriorTrials = 2;     // the prior's weight, in trials
  static constexpr double kCostDecay = 0.1;     // weight of a new time in the running means
  static constexpr double kMinGain = 1.02;      // a round's rate over plain decoding's, at least
  // Acceptance back to the prior (no trials seen).
  void Forget(Proposer p);
  int64_t max_;
  double prior_;
  std::array<double, 2> hits_{0, 0}, trials_{0, 0};  // discounted counts, from the prior's
  std::array<double, 2> draft_ms_{0, 0};
  std::array<double, kMaxDraft + 2> verify_ms_{};  // [width], 0 = not measured
  std::array<int64_t, 2> wait_{0, 0};      // plain steps still to take before the next probe
  std::array<int64_t, 2> backoff_{kFirstBackoff, kFirstBackoff};  // the pause after a failed probe
  std::array<bool, 2> probing_{false, false};
};

}  // namespace gemlet::runtime
