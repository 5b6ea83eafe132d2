#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ops/activation.h"

namespace gemlet::runtime {

Status SamplerOptions::Validate() const {
  if (!(temperature >= 0) || !std::isfinite(temperature)) return InvalidArgument("--temp must be >= 0");
  if (top_k < 0) return InvalidArgument("--top-k must be >= 0");
  if (!(top_p > 0 && top_p <= 1)) return InvalidArgument("--top-p must be in (0, 1]");
  if (!(min_p >= 0 && min_p <= 1)) return InvalidArgument("--min-p must be in [0, 1]");
  if (!(repetition_penalty > 0) || !std::isfinite(repetition_penalty)) {
    return InvalidArgument("--repeat-penalty must be > 0");
  }
  if (!std::isfinite(presence_penalty)) return InvalidArgument("--presence-penalty must be finite");
  if (!std::isfinite(frequency_penalty)) return InvalidArgument("--frequency-penalty must be finite");
  for (const auto& [id, bias] : logit_bias) {
    if (std::isnan(bias)) return InvalidArgument("logit bias of token " + std::to_string(id) + " is NaN");
  }
  if (penalty_last_n < 0) return InvalidArgument("--repeat-last-n must be >= 0");
  if (logprobs < -1) return InvalidArgument("logprobs must be >= -1");
  return Status::Ok();
}

int32_t ArgMax(std::span<const float> logits) {
  int32_t best = 0;
  float bv = logits.empty() ? 0.0f : logits[0];  // the best value in a register: no reload
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > bv) {
      bv = logits[i];
      best = static_cast<int32_t>(i);
    }
  }
  return best;
}

Sampler::Sampler(const SamplerOptions& options) : opt_(options), rng_(options.seed) {}

void Sampler::Reseed() {
  rng_.seed(opt_.seed);
  picked_.clear();
  picked_counts_.clear();
}

bool Sampler::Penalizes() const {
  return opt_.repetition_penalty != 1.0 || opt_.presence_penalty != 0.0 || opt_.frequency_penalty != 0.0;
}

void Sampler::Prepare(std::span<const float> logits) {
  work_.assign(logits.begin(), logits.end());
  // NaN (from a damaged model) would break the orderings below: treat it as impossible.
  for (float& l : work_) {
    if (std::isnan(l)) l = -std::numeric_limits<float>::infinity();
  }
  for (const auto& [id, bias] : opt_.logit_bias) {
    // -100 bans the token outright, as in OpenAI.
    if (id < 0 || static_cast<size_t>(id) >= work_.size()) continue;
    work_[id] = bias <= -100 ? -1e30f : work_[id] + bias;
  }
}

template <typename Counts>
void Sampler::Penalize(const Counts& counts) {
  const int64_t V = static_cast<int64_t>(work_.size());
  for (const auto& [id, n] : counts) {
    if (id < 0 || id >= V || n <= 0) continue;
    float& l = work_[id];
    if (opt_.repetition_penalty != 1.0) {
      l = l > 0 ? static_cast<float>(l / opt_.repetition_penalty)
                : static_cast<float>(l * opt_.repetition_penalty);
    }
    l -= static_cast<float>(opt_.presence_penalty + opt_.frequency_penalty * static_cast<double>(n));
  }
}

void Sampler::Score(std::span<const float> logits, const std::span<const int32_t>* history) {
  Prepare(logits);
  if (!Penalizes()) return;
  if (history == nullptr) {  // over what Sample(logits) picked
    Penalize(picked_counts_);
    return;
  }
  // Over the recent history.
  const size_t n = history->size();
  const size_t from = opt_.penalty_last_n > 0 && n > static_cast<size_t>(opt_.penalty_last_n)
                          ? n - static_cast<size_t>(opt_.penalty_last_n)
                          : 0;
  counts_.clear();
  for (size_t i = from; i < n; ++i) counts_[(*history)[i]]++;
  Penalize(counts_);
}

void Sampler::Remember(int32_t t) {
  picked_.push_back(t);
  picked_counts_[t]++;
  // Keep the counts to the window: the token that left it is seen once less.
  if (opt_.penalty_last_n > 0 && static_cast<int64_t>(picked_.size()) > opt_.penalty_last_n) {
    auto it = picked_counts_.find(picked_[picked_.size() - 1 - static_cast<size_t>(opt_.penalty_last_n)]);
    if (--it->second == 0) picked_counts_.erase(it);
  }
}

int32_t Sampler::PickAllowed(std::span<const float> logits, const std::span<const int32_t>* history,
                             TokenConstraint* constraint) {
  Score(logits, history);
  if (opt_.logprobs >= 0) scores_ = work_;  // Pick may rewrite work_
  const int32_t t = Pick();
  if (constraint == nullptr || constraint->Allows(t)) {
    if (opt_.logprobs >= 0) RecordLogprobs(scores_, t);
    return t;
  }
  // Refused: the mask, then the same pick over the allowed tokens only, made over them alone
  // (in id order, so ties and the draw's order are kept): a grammar's structural step allows a
  // handful of the vocabulary, and the draw need not weigh the rest. (Pick rewrote work_ for
  // its own needs, so the scores are made again.)
  const size_t V = logits.size();
  mask_.assign((V + 31) / 32, 0);
  constraint->Mask(mask_);
  allowed_.clear();
  for (size_t w = 0; w < mask_.size(); ++w) {
    for (uint32_t bits = mask_[w]; bits != 0; bits &= bits - 1) {
      const size_t id = w * 32 + static_cast<size_t>(__builtin_ctz(bits));
      if (id < V) allowed_.push_back(static_cast<int32_t>(id));
    }
  }
  if (allowed_.empty()) {
    last_logprobs_ = {};
    return kNoToken;
  }
  Score(logits, history);
  if (opt_.logprobs >= 0) {  // over the vocabulary, the refused tokens impossible
    scores_.assign(V, -std::numeric_limits<float>::infinity());
    for (int32_t id : allowed_) scores_[static_cast<size_t>(id)] = work_[static_cast<size_t>(id)];
  }
  for (size_t j = 0; j < allowed_.size(); ++j) work_[j] = work_[static_cast<size_t>(allowed_[j])];
  work_.resize(allowed_.size());
  // (Every allowed token −inf, from NaN logits: the pick is the first of them.)
  const int32_t u = allowed_[static_cast<size_t>(Pick())];
  if (opt_.logprobs >= 0) RecordLogprobs(scores_, u);
  return u;
}

void Sampler::RecordLogprobs(std::span<const float> scores, int32_t t) {
  // log p_i = s_i − max − log Σ e^(s_j − max), summed in double.
  const int32_t top = ArgMax(scores);
  const float mx = scores[top];
  double sum = 0;
  if (std::isfinite(mx)) {
    for (float v : scores) sum += std::exp(static_cast<double>(v) - mx);
  }
  const double log_z = std::isfinite(mx) ? mx + std::log(sum) : 0.0;
  auto logprob = [&](int32_t id) {
    const double lp = static_cast<double>(scores[id]) - log_z;
    return std::isfinite(mx) ? static_cast<float>(lp) : -std::numeric_limits<float>::infinity();
  };
  last_logprobs_.chosen = {t, logprob(t)};
  last_logprobs_.top.clear();
  const int64_t n = std::min<int64_t>(opt_.logprobs, static_cast<int64_t>(scores.size()));
  if (n <= 0) return;
  idx_.resize(scores.size());
  std::iota(idx_.begin(), idx_.end(), 0);
  auto better = [&](int32_t a, int32_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); };
  std::partial_sort(idx_.begin(), idx_.begin() + n, idx_.end(), better);
  for (int64_t i = 0; i < n; ++i) last_logprobs_.top.push_back({idx_[i], logprob(idx_[i])});
}

int32_t Sampler::Sample(std::span<const float> logits, std::span<const int32_t> history) {
  return PickAllowed(logits, &history, nullptr);
}

int32_t Sampler::Sample(std::span<const float> logits, std::span<const int32_t> history,
                        TokenConstraint* constraint) {
  return PickAllowed(logits, &history, constraint);
}

int32_t Sampler::Sample(std::span<const float> logits) {
  const int32_t t = PickAllowed(logits, nullptr, nullptr);
  Remember(t);
  return t;
}

int32_t Sampler::Sample(std::span<const float> logits, TokenConstraint& constraint) {
  const int32_t t = PickAllowed(logits, nullptr, &constraint);
  if (t != kNoToken) Remember(t);
  return t;
}

int32_t Sampler::Pick() {
  const int64_t V = static_cast<int64_t>(work_.size());
  if (opt_.temperature == 0.0) return ArgMax(work_);

  // Weights e^((l − max) / T) of every token, in id order: the top token weighs 1; a weight
  // below e^−87 (≈ 1.6e-38 of the top's, −inf logits included) is 0.
  const int32_t top = ArgMax(work_);
  const float mx = work_[top];
  const float inv_t = static_cast<float>(1.0 / opt_.temperature);
  if (!std::isfinite(mx) || !std::isfinite(inv_t)) return top;  // +inf or all −inf; T → 0
  weight_.resize(V);
  for (int64_t i = 0; i < V; ++i) weight_[i] = (work_[i] - mx) * inv_t;
  ops::ExpInPlace(weight_.data(), V);
  for (int64_t i = 0; i < V; ++i) weight_[i] = (work_[i] - mx) * inv_t < -87.0f ? 0.0f : weight_[i];

  const int64_t k = opt_.top_k > 0 ? std::min(opt_.top_k, V) : V;
  const double sum = WeightSum(weight_.data(), V);
  if (k == V && opt_.top_p >= 1.0 && opt_.min_p <= 0) {  // no cut: draw over every token
    return static_cast<int32_t>(Draw(weight_.data(), V, sum));
  }

  // The candidates: the top-k (by decreasing logit, ties: lower id first), or every token.
  // Only a head of them is ever ordered, with selections (no full sort: a step costs O(V)
  // whatever the settings): the tokens whose weight reaches a threshold, lowered until the
  // head provably holds what is kept. Weights are monotone in the logits, so such a head is
  // a prefix of the candidates in order.
  auto by_logit = [&](int32_t a, int32_t b) {
    return work_[a] > work_[b] || (work_[a] == work_[b] && a < b);
  };
  double mass = sum;  // of the candidates
  if (k < V) {
    for (float theta = 0.1f; Head(theta) < k && theta > 1e-38f; theta *= 0.01f) {
    }
    if (static_cast<int64_t>(idx_.size()) > k) {
      std::nth_element(idx_.begin(), idx_.begin() + (k - 1), idx_.end(), by_logit);
      idx_.resize(k);  // (fewer than k only when the rest weigh 0)
    }
    mass = 0;
    for (int32_t id : idx_) mass += weight_[id];
  } else if (opt_.top_p < 1.0) {
    for (float theta = 0.1f; theta > 1e-38f; theta *= 0.01f) {
      Head(theta);
      double head = 0;
      for (int32_t id : idx_) head += weight_[id];
      if (head >= opt_.top_p * sum) break;
    }
  } else {
    Head(static_cast<float>(opt_.min_p));  // min-p only: exactly its survivors
  }

  // Top-p: the smallest set of most likely candidates whose mass reaches top_p · mass.
  int64_t keep = static_cast<int64_t>(idx_.size());
  if (opt_.top_p < 1.0) keep = NucleusSize(opt_.top_p * mass, by_logit);
  // Min-p: of those, the ones with p ≥ min_p · p_max (the top token weighs 1).
  if (opt_.min_p > 0) {
    const float floor = static_cast<float>(opt_.min_p);
    keep = std::partition(idx_.begin(), idx_.begin() + keep, [&](int32_t id) { return weight_[id] >= floor; }) -
           idx_.begin();
  }
  if (keep == 0) return top;

  // Draw from the kept candidates in proportion to their weights.
  kept_.resize(keep);
  for (int64_t i = 0; i < keep; ++i) kept_[i] = weight_[idx_[i]];
  return idx_[Draw(kept_.data(), keep, WeightSum(kept_.data(), keep))];
}

int64_t Sampler::Head(float theta) {
  idx_.clear();
  const int64_t V = static_cast<int64_t>(weight_.size());
  for (int64_t i = 0; i < V; ++i) {
    if (weight_[i] >= theta) idx_.push_back(static_cast<int32_t>(i));
  }
  return static_cast<int64_t>(idx_.size());
}

double Sampler::WeightSum(const float* w, int64_t n) {
  double acc[4] = {0, 0, 0, 0};  // independent chains: 4× the throughput of one
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int j = 0; j < 4; ++j) acc[j] += w[i + j];
  }
  for (; i < n; ++i) acc[0] += w[i];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

int64_t Sampler::Draw(const float* w, int64_t n, double total) {
  if (!(total > 0)) return 0;
  const double r = std::uniform_real_distribution<double>(0.0, total)(rng_);
  // Blocks of 256 first (summed like WeightSum), then the weights of the block r falls in.
  constexpr int64_t kBlock = 256;
  double cum = 0;
  int64_t b = 0;
  for (; b + kBlock < n; b += kBlock) {
    const double s = WeightSum(w + b, kBlock);
    if (r < cum + s) break;
    cum += s;
  }
  const int64_t e = std::min(n, b + kBlock);
  for (int64_t i = b; i < e; ++i) {
    cum += w[i];
    if (r < cum) return i;
  }
  // Rounding left r just past the end of its block: the last positive weight up to there.
  for (int64_t i = e - 1; i > 0; --i) {
    if (w[i] > 0) return i;
  }
  return 0;
}

template <typename Less>
int64_t Sampler::NucleusSize(double target, const Less& less) {
  // Weighted quickselect: narrows [lo, hi) around the boundary, keeping in front of lo the
  // candidates that are certainly in (all more likely than the rest), until a small range
  // is left to sort.
  auto first = idx_.begin();
  int64_t lo = 0, hi = static_cast<int64_t>(idx_.size());
  double need = target;
  while (hi - lo > 64) {
    const int64_t mid = lo + (hi - lo) / 2;
    std::nth_element(first + lo, first + mid, first + hi, less);
    double m = 0;
    for (int64_t i = lo; i < mid; ++i) m += weight_[idx_[i]];
    if (m >= need) {
      hi = mid;
    } else {
      need -= m;
      lo = mid;
    }
  }
  std::sort(first + lo, first + hi, less);
  double cum = 0;
  for (int64_t i = lo; i < hi; ++i) {
    cum += weight_[idx_[i]];
    if (cum >= need) return i + 1;
  }
  return hi;
}

}  // namespace gemlet::runtime
