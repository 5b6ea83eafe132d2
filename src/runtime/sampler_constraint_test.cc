// The sampler under a TokenConstraint: the pick is checked first, the mask is made only when
// it is refused, and the result follows the masked distribution.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "runtime/sampler.h"
#include "runtime/token_constraint.h"

namespace gemlet::runtime {
namespace sampler_constraint_test {

// Allows the tokens of a fixed set; counts the calls.
class SetConstraint : public TokenConstraint {
 public:
  SetConstraint(int32_t vocab, std::vector<int32_t> allowed) : vocab_(vocab), allowed_(allowed) {}
  bool Allows(int32_t t) override {
    ++allows_calls;
    for (int32_t a : allowed_) {
      if (a == t) return true;
    }
    return false;
  }
  void Mask(std::span<uint32_t> mask) override {
    ++mask_calls;
    for (auto& w : mask) w = 0;
    for (int32_t a : allowed_) mask[a >> 5] |= 1u << (a & 31);
  }
  Status Accept(int32_t t) override {
    if (!Allows(t)) return InvalidArgument("not allowed");
    accepted.push_back(t);
    return Status::Ok();
  }
  Status Rollback(int64_t n) override {
    if (n > static_cast<int64_t>(accepted.size())) return OutOfRange("rollback");
    accepted.resize(accepted.size() - n);
    return Status::Ok();
  }
  bool Complete() const override { return allowed_.empty(); }
  std::unique_ptr<TokenConstraint> Clone() const override {
    return std::make_unique<SetConstraint>(*this);
  }

  int allows_calls = 0;
  int mask_calls = 0;
  std::vector<int32_t> accepted;

 private:
  int32_t vocab_;
  std::vector<int32_t> allowed_;
};

TEST(SamplerConstraintTest, GreedyTakesTheBestAllowedToken) {
  SamplerOptions o;
  o.temperature = 0;
  Sampler s(o);
  std::vector<float> logits(40, 0.0f);
  logits[3] = 9;   // best, refused
  logits[35] = 5;  // best allowed
  logits[36] = 4;
  SetConstraint c(40, {35, 36, 1});
  EXPECT_EQ(s.Sample(logits, {}, &c), 35);
  EXPECT_EQ(c.mask_calls, 1);
  // Allowed at once: no mask.
  SetConstraint all3(40, {3, 35});
  EXPECT_EQ(s.Sample(logits, {}, &all3), 3);
  EXPECT_EQ(all3.mask_calls, 0);
  EXPECT_EQ(all3.allows_calls, 1);
  // The sampler does not advance the constraint.
  EXPECT_TRUE(c.accepted.empty());
}

// The filters act on the allowed tokens only (the redraw is made over them alone): top-k 2
// of the allowed {5, 20, 33, 70} is {20, 70}, whatever the refused tokens weigh; min-p then
// keeps only 70 when 20 is far below it. Ids past the first mask words are kept right.
TEST(SamplerConstraintTest, FiltersActOnTheAllowedTokens) {
  std::vector<float> logits(100, 0.0f);
  logits[1] = 20;  // refused, the best of all
  logits[5] = 1;
  logits[20] = 3;
  logits[33] = 2;
  logits[70] = 4;
  SamplerOptions o;
  o.top_k = 2;
  o.seed = 3;
  Sampler s(o);
  std::map<int32_t, int> seen;
  for (int i = 0; i < 400; ++i) {
    SetConstraint c(100, {5, 20, 33, 70});
    seen[s.Sample(logits, {}, &c)]++;
  }
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_GT(seen[20], 40);  // p = 1 / (1 + e) ~ 0.27
  EXPECT_GT(seen[70], 200);
  o.top_k = 0;
  o.min_p = 0.5;  // e^(3-4) = 0.37 < 0.5: only 70
  Sampler m(o);
  for (int i = 0; i < 50; ++i) {
    SetConstraint c(100, {5, 20, 33, 70});
    EXPECT_EQ(m.Sample(logits, {}, &c), 70);
  }
}

TEST(SamplerConstraintTest, NothingAllowedIsNoToken) {
  Sampler s;
  SetConstraint none(8, {});
  EXPECT_EQ(s.Sample(std::vector<float>(8, 1.0f), none), kNoToken);
  // Not remembered as a pick: a later unconstrained draw is still valid.
  EXPECT_GE(s.Sample(std::vector<float>(8, 1.0f)), 0);
}

// Temperature 1, no filters: the frequencies are softmax over the allowed tokens, whatever
// share of the mass the refused ones had (here 3/4, so most picks take the masked redraw).
TEST(SamplerConstraintTest, FrequenciesFollowTheMaskedDistribution) {
  SamplerOptions o;
  o.seed = 11;
  o.top_k = 0;
  o.top_p = 1.0;
  Sampler s(o);
  // p = 0.4, 0.2, 0.3, 0.1 for tokens 0..3; allowed {1, 3}: 2/3 and 1/3.
  std::vector<float> logits = {std::log(0.4f), std::log(0.2f), std::log(0.3f), std::log(0.1f)};
  SetConstraint c(4, {1, 3});
  std::map<int32_t, int> h;
  const int n = 30000;
  for (int i = 0; i < n; ++i) h[s.Sample(logits, c)]++;
  EXPECT_EQ(h.size(), 2u);
  EXPECT_NEAR(h[1] / double(n), 2.0 / 3, 0.015);
  EXPECT_NEAR(h[3] / double(n), 1.0 / 3, 0.015);
  EXPECT_LT(c.mask_calls, n);  // the allowed first picks needed no mask
  EXPECT_GT(c.mask_calls, n / 2);
}

// The penalties of Sample(logits, constraint) count what was finally picked.
TEST(SamplerConstraintTest, PenaltiesRememberTheAllowedPick) {
  SamplerOptions o;
  o.temperature = 0;
  o.presence_penalty = 10;
  o.penalty_last_n = 0;
  Sampler s(o);
  std::vector<float> logits = {5.0f, 4.0f, 3.0f, 0.0f};
  SetConstraint c(4, {1, 2});
  EXPECT_EQ(s.Sample(logits, c), 1);  // 0 refused
  // Unconstrained now: 0 was never picked, so it is not penalized; 1 is.
  EXPECT_EQ(s.Sample(logits), 0);
  EXPECT_EQ(s.Sample(logits), 2);  // 0 and 1 both penalized now: 5−10, 4−10 < 3
}

}  // namespace sampler_constraint_test
}  // namespace gemlet::runtime

namespace gemlet::runtime {
namespace sampler_constraint_test {

// Logprobs: the log-softmax of the adjusted scores (bias, penalties, mask) at temperature 1,
// whatever temperature the pick used; the top entries in order.
TEST(SamplerLogprobsTest, LogSoftmaxOfTheAdjustedScores) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, -1.0f, 0.5f};
  double z = 0;
  for (float l : logits) z += std::exp(static_cast<double>(l));
  for (double temp : {0.0, 0.7, 1.5}) {
    SamplerOptions o;
    o.temperature = temp;
    o.seed = 5;
    o.logprobs = 3;
    Sampler s(o);
    const int32_t t = s.Sample(logits, {});
    const PickLogprobs& lp = s.last_logprobs();
    EXPECT_EQ(lp.chosen.token, t);
    EXPECT_NEAR(lp.chosen.logprob, logits[t] - std::log(z), 1e-5) << temp;
    ASSERT_EQ(lp.top.size(), 3u);
    EXPECT_EQ(lp.top[0].token, 1);
    EXPECT_EQ(lp.top[1].token, 2);
    EXPECT_EQ(lp.top[2].token, 0);
    EXPECT_NEAR(lp.top[0].logprob, 3.0 - std::log(z), 1e-5);
    if (temp == 0.0) {
      EXPECT_EQ(t, lp.top[0].token);
    }
  }
  // Off by default: nothing recorded.
  Sampler off{SamplerOptions{}};
  off.Sample(logits, {});
  EXPECT_TRUE(off.last_logprobs().top.empty());
  EXPECT_EQ(off.last_logprobs().chosen.logprob, 0.0f);
}

TEST(SamplerLogprobsTest, BiasAndMaskChangeTheDistribution) {
  std::vector<float> logits(40, 0.0f);
  logits[3] = 9;   // refused by the constraint
  logits[35] = 5;
  logits[36] = 4;
  SamplerOptions o;
  o.temperature = 0;
  o.logprobs = 2;
  o.logit_bias = {{36, 2.0f}};  // 36 now scores 6, above 35
  Sampler s(o);
  SetConstraint c(40, {35, 36, 1});
  EXPECT_EQ(s.Sample(logits, {}, &c), 36);
  const PickLogprobs& lp = s.last_logprobs();
  // Over the allowed tokens only: e^6, e^5, e^0.
  const double z = std::exp(6.0) + std::exp(5.0) + 1.0;
  EXPECT_EQ(lp.chosen.token, 36);
  EXPECT_NEAR(lp.chosen.logprob, 6.0 - std::log(z), 1e-5);
  ASSERT_EQ(lp.top.size(), 2u);
  EXPECT_EQ(lp.top[0].token, 36);
  EXPECT_EQ(lp.top[1].token, 35);
  EXPECT_NEAR(lp.top[1].logprob, 5.0 - std::log(z), 1e-5);
  EXPECT_NEAR(std::exp(lp.top[0].logprob) + std::exp(lp.top[1].logprob) + 1.0 / z, 1.0, 1e-5);
}

}  // namespace sampler_constraint_test
}  // namespace gemlet::runtime
