#include "runtime/draft_policy.h"

#include <gtest/gtest.h>

namespace gemlet::runtime {
namespace {

// A bandwidth-bound target: a verify of w rows costs 1 + 0.02 (w − 1) decode steps.
void MeasureBandwidthBound(DraftPolicy& p, double draft_ms) {
  for (int64_t w = 1; w <= 9; ++w) p.MeasureVerify(w, 10.0 * (1 + 0.02 * (w - 1)));
  p.MeasureDraft(Proposer::kMtp, draft_ms);
}

TEST(DraftPolicyTest, NothingMeasuredTriesTheLongest) {
  DraftPolicy p(8);
  EXPECT_EQ(p.Choose(Proposer::kMtp, 8), 8);
  EXPECT_EQ(p.Choose(Proposer::kMtp, 3), 3);
  EXPECT_EQ(p.Choose(Proposer::kMtp, 0), 0);
}

TEST(DraftPolicyTest, HighAcceptanceDraftsLongLowAcceptancePauses) {
  DraftPolicy p(8);
  MeasureBandwidthBound(p, 0.5);
  for (int i = 0; i < 50; ++i) p.Observe(Proposer::kMtp, 8, 8);
  EXPECT_GT(p.acceptance(Proposer::kMtp), 0.95);
  EXPECT_EQ(p.Choose(Proposer::kMtp, 8), 8);
  for (int i = 0; i < 100; ++i) p.Observe(Proposer::kMtp, 4, 0);
  EXPECT_LT(p.acceptance(Proposer::kMtp), 0.05);
  EXPECT_EQ(p.Choose(Proposer::kMtp, 8), 0) << "drafts that are never accepted do not pay";
  // Paused: plain steps, then one short probe.
  int64_t plain = 0, k = 0;
  while ((k = p.Choose(Proposer::kMtp, 8)) == 0) ++plain;
  EXPECT_GE(plain, 2);
  EXPECT_EQ(k, 2);
  p.Observe(Proposer::kMtp, 2, 0);  // the probe fails: a longer pause
  int64_t plain2 = 0;
  while (p.Choose(Proposer::kMtp, 8) == 0) ++plain2;
  EXPECT_GT(plain2, plain);
}

TEST(DraftPolicyTest, ExpensiveDraftsNeedHigherAcceptance) {
  // Draft steps as dear as a decode step pay only at high acceptance.
  DraftPolicy cheap(8, 0.5), dear(8, 0.5);
  MeasureBandwidthBound(cheap, 0.3);
  MeasureBandwidthBound(dear, 10.0);
  EXPECT_GT(cheap.Choose(Proposer::kMtp, 8), 0);
  EXPECT_EQ(dear.Choose(Proposer::kMtp, 8), 0);
  EXPECT_GT(cheap.Rate(Proposer::kMtp, 2), cheap.Rate(Proposer::kMtp, 0));
  EXPECT_LT(dear.Rate(Proposer::kMtp, 2), dear.Rate(Proposer::kMtp, 0));
}

TEST(DraftPolicyTest, UnmeasuredWidthsAreEstimated) {
  DraftPolicy p(8);
  EXPECT_EQ(p.verify_ms(3), 0);
  p.MeasureVerify(1, 10);
  EXPECT_DOUBLE_EQ(p.verify_ms(3), 12);  // 10 % more per extra row
  EXPECT_DOUBLE_EQ(p.draft_ms(Proposer::kMtp), 1);
  EXPECT_DOUBLE_EQ(p.draft_ms(Proposer::kLookup), 0);
  p.MeasureVerify(3, 11);
  EXPECT_DOUBLE_EQ(p.verify_ms(3), 11);
}

}  // namespace
}  // namespace gemlet::runtime
