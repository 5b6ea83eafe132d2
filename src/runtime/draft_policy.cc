#include "runtime/draft_policy.h"

#include <algorithm>
#include <cmath>

namespace gemlet::runtime {

namespace {
double Blend(double old, double now, double w) { return old > 0 ? old + w * (now - old) : now; }
}  // namespace

DraftPolicy::DraftPolicy(int64_t max_draft, double prior)
    : max_(std::clamp<int64_t>(max_draft, 0, kMaxDraft)), prior_(std::clamp(prior, 0.0, 1.0)) {
  for (int i = 0; i < 2; ++i) Forget(static_cast<Proposer>(i));
}

void DraftPolicy::Forget(Proposer p) {
  const int i = static_cast<int>(p);
  hits_[i] = kPriorTrials * prior_;
  trials_[i] = kPriorTrials;
}

double DraftPolicy::acceptance(Proposer p) const {
  const int i = static_cast<int>(p);
  return hits_[i] / trials_[i];
}

double DraftPolicy::verify_ms(int64_t width) const {
  width = std::clamp<int64_t>(width, 1, kMaxDraft + 1);
  // A wider verify never costs less than a narrower one: a noisy measurement that says so
  // (another process took the cores during a plain step) would make drafts look free.
  double narrower = 0;
  for (int64_t w = 1; w < width; ++w) narrower = std::max(narrower, verify_ms_[w]);
  if (verify_ms_[width] > 0) return std::max(verify_ms_[width], narrower);
  for (int64_t w = width - 1; w >= 1; --w) {
    if (verify_ms_[w] > 0) return std::max(verify_ms_[w] * (1.0 + 0.1 * static_cast<double>(width - w)), narrower);
  }
  for (int64_t w = width + 1; w <= kMaxDraft + 1; ++w) {  // only wider ones: no cheaper than them
    if (verify_ms_[w] > 0) return verify_ms_[w];
  }
  return 0;
}

double DraftPolicy::draft_ms(Proposer p) const {
  const double d = draft_ms_[static_cast<int>(p)];
  if (d > 0) return d;
  return p == Proposer::kLookup ? 0 : 0.1 * verify_ms(1);
}

double DraftPolicy::Rate(Proposer p, int64_t K) const {
  const double a = std::clamp(acceptance(p), 0.0, 0.999);
  const double tokens = (1.0 - std::pow(a, static_cast<double>(K + 1))) / (1.0 - a);
  const double ms = static_cast<double>(K) * draft_ms(p) + verify_ms(K + 1);
  return ms > 0 ? tokens / ms : tokens;
}

int64_t DraftPolicy::Choose(Proposer p, int64_t limit) {
  const int i = static_cast<int>(p);
  const int64_t top = std::min(max_, limit);
  if (top <= 0) return 0;
  probing_[i] = false;
  if (wait_[i] > 0) {  // paused: plain steps until the next probe
    --wait_[i];
    if (wait_[i] > 0) return 0;
    probing_[i] = true;
    return std::min(kProbe, top);
  }
  if (verify_ms(1) <= 0) return std::min(kProbe, top);  // nothing measured yet: a short try
  int64_t best = 0;
  double best_rate = kMinGain * Rate(p, 0);
  for (int64_t K = 1; K <= top; ++K) {
    const double r = Rate(p, K);
    if (r > best_rate) {
      best = K;
      best_rate = r;
    }
  }
  if (best == 0) wait_[i] = backoff_[i];  // drafts do not pay: pause
  return best;
}

void DraftPolicy::Observe(Proposer p, int64_t drafted, int64_t accepted) {
  const int i = static_cast<int>(p);
  // Each draft tried is one Bernoulli trial of "accepted, given the ones before were".
  const int64_t tried = accepted + (accepted < drafted ? 1 : 0);
  for (int64_t t = 0; t < tried; ++t) {
    hits_[i] = kDiscount * hits_[i] + (t < accepted ? 1.0 : 0.0);
    trials_[i] = kDiscount * trials_[i] + 1.0;
  }
  if (!probing_[i]) return;
  probing_[i] = false;
  if (accepted == drafted) Forget(p);  // paying again, perhaps: forget the bad stretch
  bool pays = false;
  for (int64_t K = 1; K <= max_ && !pays; ++K) pays = Rate(p, K) > kMinGain * Rate(p, 0);
  if (pays) {  // back to choosing each round
    backoff_[i] = kFirstBackoff;
  } else {
    backoff_[i] = std::min(kMaxBackoff, backoff_[i] * 2);
    wait_[i] = backoff_[i];
  }
}

void DraftPolicy::MeasureDraft(Proposer p, double ms) {
  draft_ms_[static_cast<int>(p)] = Blend(draft_ms_[static_cast<int>(p)], ms, kCostDecay);
}

void DraftPolicy::MeasureVerify(int64_t width, double ms) {
  if (width < 1 || width > kMaxDraft + 1) return;
  verify_ms_[width] = Blend(verify_ms_[width], ms, kCostDecay);
}

}  // namespace gemlet::runtime
