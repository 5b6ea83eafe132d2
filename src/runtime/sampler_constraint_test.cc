// The sampler under a TokenConstraint: the pick is checked first, the mask is made only when
// it is refused, and the result follows the masked distribution.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "runtime/sampler.h"
#include "runtime/token_constraint.h"

namespace gemlet::runtime {
namespace {

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

}  // namespace
}  // namespace gemlet::runtime
