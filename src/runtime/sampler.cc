#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_set>

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
  if (penalty_last_n < 0) return InvalidArgument("--repeat-last-n must be >= 0");
  return Status::Ok();
}

int32_t ArgMax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

Sampler::Sampler(const SamplerOptions& options) : opt_(options), rng_(options.seed) {}

int32_t Sampler::Sample(std::span<const float> logits, std::span<const int32_t> history) {
  const int64_t V = static_cast<int64_t>(logits.size());
  work_.assign(logits.begin(), logits.end());
  // NaN (from a damaged model) would break the orderings below: treat it as impossible.
  for (float& l : work_) {
    if (std::isnan(l)) l = -std::numeric_limits<float>::infinity();
  }

  // Penalties over the recent history, each distinct token once.
  if (opt_.repetition_penalty != 1.0 || opt_.presence_penalty != 0.0) {
    const size_t n = history.size();
    const size_t from = opt_.penalty_last_n > 0 && n > static_cast<size_t>(opt_.penalty_last_n)
                            ? n - static_cast<size_t>(opt_.penalty_last_n)
                            : 0;
    std::unordered_set<int32_t> seen;
    for (size_t i = from; i < n; ++i) {
      const int32_t id = history[i];
      if (id < 0 || id >= V || !seen.insert(id).second) continue;
      float& l = work_[id];
      if (opt_.repetition_penalty != 1.0) {
        l = l > 0 ? static_cast<float>(l / opt_.repetition_penalty)
                  : static_cast<float>(l * opt_.repetition_penalty);
      }
      l -= static_cast<float>(opt_.presence_penalty);
    }
  }
  if (opt_.temperature == 0.0) return ArgMax(work_);

  // Candidates by decreasing logit (ties: lower id first), cut to top-k.
  idx_.resize(V);
  std::iota(idx_.begin(), idx_.end(), 0);
  auto by_logit = [&](int32_t a, int32_t b) {
    return work_[a] > work_[b] || (work_[a] == work_[b] && a < b);
  };
  int64_t k = opt_.top_k > 0 ? std::min(opt_.top_k, V) : V;
  if (k < V) {
    std::partial_sort(idx_.begin(), idx_.begin() + k, idx_.end(), by_logit);
    idx_.resize(k);
  } else {
    std::sort(idx_.begin(), idx_.end(), by_logit);
  }

  // Softmax at the temperature, in double.
  prob_.resize(k);
  const double mx = work_[idx_[0]];
  if (!std::isfinite(mx)) return idx_[0];  // +inf dominates; all −inf: nothing to weigh
  double sum = 0;
  for (int64_t i = 0; i < k; ++i) {
    prob_[i] = std::exp((work_[idx_[i]] - mx) / opt_.temperature);
    sum += prob_[i];
  }
  for (int64_t i = 0; i < k; ++i) prob_[i] /= sum;

  // Top-p: the shortest prefix whose mass reaches top_p. Min-p: relative to the top token.
  int64_t keep = k;
  if (opt_.top_p < 1.0) {
    double cum = 0;
    for (int64_t i = 0; i < k; ++i) {
      cum += prob_[i];
      if (cum >= opt_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  if (opt_.min_p > 0) {
    const double floor = opt_.min_p * prob_[0];
    int64_t m = 1;
    while (m < keep && prob_[m] >= floor) ++m;
    keep = m;
  }

  // Draw from the kept candidates (renormalized).
  double total = 0;
  for (int64_t i = 0; i < keep; ++i) total += prob_[i];
  const double r = std::uniform_real_distribution<double>(0.0, total)(rng_);
  double cum = 0;
  for (int64_t i = 0; i < keep; ++i) {
    cum += prob_[i];
    if (r < cum) return idx_[i];
  }
  return idx_[keep - 1];
}

}  // namespace gemlet::runtime
