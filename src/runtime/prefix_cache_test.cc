// PrefixCache over a toy SequenceModel (a sequence is its token list), and PlanStep.
#include "runtime/prefix_cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace gemlet::runtime {
namespace prefix_cache_test {

struct ToySequence : Sequence {
  std::span<const int32_t> tokens() const override { return held; }
  std::vector<int32_t> held;
};

class ToyModel : public SequenceModel {
 public:
  int64_t context_length() const override { return 1000; }
  int32_t vocab_size() const override { return 100; }
  Result<std::unique_ptr<Sequence>> NewSequence() override { return std::unique_ptr<Sequence>(new ToySequence); }
  Result<std::unique_ptr<Sequence>> Fork(const Sequence& s, int64_t n) override {
    forks++;
    auto c = std::make_unique<ToySequence>();
    const auto& t = static_cast<const ToySequence&>(s).held;
    c->held.assign(t.begin(), t.begin() + n);
    return std::unique_ptr<Sequence>(std::move(c));
  }
  Status Truncate(Sequence& s, int64_t n) override {
    truncations++;
    static_cast<ToySequence&>(s).held.resize(n);
    return Status::Ok();
  }
  Status Step(std::span<const StepPart>, std::span<float>) override { return Unsupported("toy"); }
  int forks = 0, truncations = 0;
};

std::unique_ptr<Sequence> Seq(std::vector<int32_t> t) {
  auto s = std::make_unique<ToySequence>();
  s->held = std::move(t);
  return s;
}
std::vector<int32_t> TokensOf(const PrefixCache::Hit& h) {
  return std::vector<int32_t>(h.seq->tokens().begin(), h.seq->tokens().end());
}

TEST(PrefixCacheTest, SharedEntriesAreForkedFinishedOnesTakenAndRolledBack) {
  ToyModel model;
  PrefixCache cache(4, /*max_rollback=*/3);
  cache.Put(Seq({1, 2, 3}), /*shared=*/true);
  cache.Put(Seq({1, 2, 3, 4, 5, 6, 7}));
  // A prompt that continues the finished entry takes it.
  auto h = cache.Lookup(std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8}, model);
  ASSERT_NE(h.seq, nullptr);
  EXPECT_EQ(TokensOf(h), (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(model.truncations, 0);
  // Put it back; a prompt that leaves it after token 5 rolls it back by 2 (≤ 3).
  cache.Put(std::move(h.seq));
  h = cache.Lookup(std::vector<int32_t>{1, 2, 3, 4, 5, 9, 9}, model);
  ASSERT_NE(h.seq, nullptr);
  EXPECT_EQ(TokensOf(h), (std::vector<int32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(model.truncations, 1);
  // Put back; leaving after token 3 would roll back 4 > 3: the shared entry is forked instead.
  cache.Put(Seq({1, 2, 3, 4, 5, 6, 7}));
  h = cache.Lookup(std::vector<int32_t>{1, 2, 3, 8, 8}, model);
  ASSERT_NE(h.seq, nullptr);
  EXPECT_EQ(TokensOf(h), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(model.forks, 1);
  EXPECT_EQ(cache.size(), 2u) << "a shared entry stays";
  // At least one prompt token is left to prefill.
  h = cache.Lookup(std::vector<int32_t>{1, 2, 3}, model);
  ASSERT_NE(h.seq, nullptr);
  EXPECT_EQ(TokensOf(h).size(), 2u);
  // No common start: no hit.
  EXPECT_EQ(cache.Lookup(std::vector<int32_t>{9, 9}, model).seq, nullptr);
}

TEST(PrefixCacheTest, CapacityAndReplacement) {
  ToyModel model;
  PrefixCache cache(2, 0);
  cache.Put(Seq({1}));
  cache.Put(Seq({2}));
  cache.Put(Seq({1}));  // replaces, most recent
  cache.Put(Seq({3}));  // evicts {2}
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(cache.Contains(std::vector<int32_t>{1}));
  EXPECT_FALSE(cache.Contains(std::vector<int32_t>{2}));
  cache.Put(Seq({}));
  EXPECT_EQ(cache.size(), 2u);
  PrefixCache none(0, 0);
  none.Put(Seq({1}));
  EXPECT_EQ(none.size(), 0u);
}

TEST(PlanStepTest, DecodeRowsFirstThenPromptChunksWithinTheBudget) {
  // Three decoders, two prompts: budget 10, chunk 4.
  EXPECT_EQ(PlanStep(std::vector<int64_t>{1, 20, 1, 9, 1}, 10, 4), (std::vector<int64_t>{1, 4, 1, 3, 1}));
  // Decoders beyond the budget still all go; the first prompt gets one row.
  EXPECT_EQ(PlanStep(std::vector<int64_t>{1, 1, 1, 50, 50}, 2, 8), (std::vector<int64_t>{1, 1, 1, 1, 0}));
  // Idle sequences take nothing; a prompt alone takes a whole chunk.
  EXPECT_EQ(PlanStep(std::vector<int64_t>{0, 300}, 260, 256), (std::vector<int64_t>{0, 256}));
  EXPECT_EQ(PlanStep(std::vector<int64_t>{}, 10, 4), std::vector<int64_t>{});
}

}  // namespace prefix_cache_test
}  // namespace gemlet::runtime
