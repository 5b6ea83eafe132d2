// Token sampling from a logit vector: logit bias, repetition, presence and frequency
// penalties, temperature, top-k, top-p (nucleus), min-p, and a seeded RNG. Temperature 0 is
// greedy (ties go to the lowest id). The order is: logit bias → penalties → (greedy if
// temperature 0) → temperature → top-k → softmax → top-p → min-p → draw.
//
// The penalties look at a window of tokens (the last penalty_last_n, or all): either the
// history the caller passes (the command line passes prompt and generated tokens), or, with
// Sample(logits) alone, the tokens this sampler picked since it was made or reseeded (OpenAI's
// semantics, which the server uses with penalty_last_n = 0: generated tokens only, all of
// them). For a token seen c > 0 times in the window: logit → logit / r (logit > 0) or
// logit · r (repetition_penalty r), then logit −= presence_penalty + frequency_penalty · c.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "runtime/token_constraint.h"

namespace gemlet::runtime {

struct SamplerOptions {
  double temperature = 1.0;         // 0 = greedy
  int64_t top_k = 0;                // 0 = no limit
  double top_p = 1.0;               // keep the smallest set whose probability is ≥ top_p
  double min_p = 0.0;               // drop tokens with p < min_p · p_max
  double repetition_penalty = 1.0;  // > 1 discourages repeats: logit / r if > 0, · r if < 0
  double presence_penalty = 0.0;    // subtracted once from the logit of every token seen
  double frequency_penalty = 0.0;   // subtracted once per time a token was seen
  int64_t penalty_last_n = 64;      // how many recent tokens the penalties look at (0 = all)
  uint64_t seed = 0;
  // (token id, bias) pairs added to the logits before anything else, in order (OpenAI's
  // logit_bias); a bias ≤ −100 bans the token. Ids outside the vocabulary are ignored.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // ≥ 0: after each pick, record the log-probabilities (last_logprobs()) of the pick and of
  // this many most likely tokens (OpenAI's logprobs / top_logprobs); -1: off (no cost).
  int32_t logprobs = -1;

  // InvalidArgument naming the option for values outside their range.
  Status Validate() const;
};

// What Sample returns when a constraint allows no token at all (a grammar's dead end).
inline constexpr int32_t kNoToken = -1;

// A token and its log-probability.
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
};

// The distribution a pick was drawn from, as log-probabilities: the log-softmax of the scores
// after the logit bias, the penalties and a constraint's mask (a refused token has −inf), at
// temperature 1 and before the top-k / top-p / min-p cuts — the model's distribution as the
// request adjusted it, which does not change with the temperature (as OpenAI reports it).
struct PickLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // most likely first (ties: lower id first)
};

// Index of the largest value; ties go to the lowest index.
int32_t ArgMax(std::span<const float> logits);

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options = {});
  const SamplerOptions& options() const { return opt_; }
  // Restarts the RNG from the seed and forgets the tokens Sample(logits) picked (a reset
  // session samples the same sequence again).
  void Reseed();

  // Picks the next token. `history` is the tokens seen so far (prompt and generated), read
  // by the penalties. `logits` is not modified.
  int32_t Sample(std::span<const float> logits, std::span<const int32_t> history);
  // Picks the next token with the penalties over the tokens this overload picked before
  // (since construction or Reseed), and remembers the pick.
  int32_t Sample(std::span<const float> logits);

  // The same two, picking only tokens that `constraint` allows (null: no constraint): the
  // unconstrained pick is checked first; if refused, the pick is drawn again over the allowed
  // tokens (the mask applied after the logit bias and penalties, before temperature and the
  // filters). With temperature and no filters that is exactly sampling from the masked
  // distribution; greedy gives the best allowed token. The constraint is not advanced (the
  // caller Accepts the token). kNoToken when no token is allowed (then nothing is remembered).
  int32_t Sample(std::span<const float> logits, std::span<const int32_t> history,
                 TokenConstraint* constraint);
  int32_t Sample(std::span<const float> logits, TokenConstraint& constraint);

  // The last pick's log-probabilities (options().logprobs ≥ 0; empty before the first pick
  // and after a kNoToken).
  const PickLogprobs& last_logprobs() const { return last_logprobs_; }

 private:
  // last_logprobs_ for pick `t` over the scores `scores` (work_ before Pick).
  void RecordLogprobs(std::span<const float> scores, int32_t t);
  // Moves the smallest set of most likely candidates (by `less`) whose weights reach
  // `target` to the front of idx_; returns its size.
  template <typename Less>
  int64_t NucleusSize(double target, const Less& less);
  // idx_ = the ids whose weight is ≥ theta, in id order; returns their count.
  int64_t Head(float theta);
  static double WeightSum(const float* w, int64_t n);
  // An index in [0, n) drawn with probability w[i] / total (total = WeightSum(w, n)).
  int64_t Draw(const float* w, int64_t n, double total);

  bool Penalizes() const;
  // Copies the logits into work_ (NaN as −inf) and applies the logit bias.
  void Prepare(std::span<const float> logits);
  // The penalties for the tokens of the window, `counts` = (id, times seen).
  template <typename Counts>
  void Penalize(const Counts& counts);
  // Everything after the penalties, over work_.
  int32_t Pick();
  // Prepare + the penalties (of `history`, or of picked_ when history is null).
  void Score(std::span<const float> logits, const std::span<const int32_t>* history);
  // Pick, then the constraint's check and, on refusal, the masked draw.
  int32_t PickAllowed(std::span<const float> logits, const std::span<const int32_t>* history,
                      TokenConstraint* constraint);
  void Remember(int32_t t);  // a pick of Sample(logits), for the penalty window

  SamplerOptions opt_;
  std::vector<int32_t> picked_;  // what Sample(logits) picked, in order
  std::unordered_map<int32_t, int64_t> picked_counts_;  // of picked_'s penalty window
  std::unordered_map<int32_t, int64_t> counts_;  // scratch: the window of a history
  std::mt19937_64 rng_;
  std::vector<float> work_;
  std::vector<float> weight_;  // e^((l − max) / T), in id order
  std::vector<float> kept_;    // the weights of the kept candidates, in idx_ order
  std::vector<int32_t> idx_;
  std::vector<uint32_t> mask_;     // the constraint's mask, when a pick was refused
  std::vector<int32_t> allowed_;  // its allowed ids, in order
  std::vector<float> scores_;     // logprobs: the scores a pick was made from
  PickLogprobs last_logprobs_;
};

}  // namespace gemlet::runtime
