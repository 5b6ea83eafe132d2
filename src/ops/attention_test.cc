#include "ops/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/half.h"
#include "ops/attention_test_util.h"
#include "ops/ops_test_util.h"

namespace gemlet::ops {
namespace attention_test {

struct Case {
  int64_t H, Hkv, hd, window, T, N;
};

class AttentionTest : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionTest, MatchesNaiveWithAnySegmentSplit) {
  const Case c = GetParam();
  AttentionShape s{c.H, c.Hkv, c.hd, c.window, 1.0f};
  const int64_t kv_row = c.Hkv * c.hd;
  auto q = testing::RandomVector(c.T * c.H * c.hd, 1);
  auto k = testing::RandomVector(c.N * kv_row, 2);
  auto v = testing::RandomVector(c.N * kv_row, 3);
  std::vector<int64_t> pos(c.T);
  for (int64_t t = 0; t < c.T; ++t) pos[t] = c.N - c.T + t;
  const auto ref = testing::NaiveAttention(s, q, k, v, c.T, c.N);

  auto seg = [&](int64_t p0, int64_t n) {
    return KvSegment{k.data() + p0 * kv_row, v.data() + p0 * kv_row, kv_row, p0, n};
  };
  // One segment; the past split in two (a ring that wrapped) plus the fresh chunk; and a
  // segment holding only old positions that the window masks entirely.
  const int64_t past = c.N - c.T, mid = past / 2;
  std::vector<std::vector<KvSegment>> splits = {
      {seg(0, c.N)},
      {seg(0, mid), seg(mid, past - mid), seg(past, c.T)},
  };
  ThreadPool pool(2);
  std::vector<float> first;
  for (const auto& segs : splits) {
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      std::vector<float> out(c.T * c.H * c.hd, -1.0f);
      Attention(s, q.data(), pos.data(), c.T, segs.data(), static_cast<int>(segs.size()), out.data(), p);
      for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], ref[i], 2e-5) << i;
      if (first.empty()) first = out;
      EXPECT_EQ(out, first) << "segment split or threads changed the bits";
      // In place: the output written over the queries, the same bits.
      std::vector<float> io = q;
      Attention(s, io.data(), pos.data(), c.T, segs.data(), static_cast<int>(segs.size()), io.data(), p);
      EXPECT_EQ(io, first) << "in place" << (p ? " threaded" : " serial");
    }
  }
}

// Each query row computed alone (a decode step, whose keys are shared out between threads)
// gives exactly the bits it gets inside a prefill block, across several softmax chunks.
TEST_P(AttentionTest, EachRowAloneEqualsItsRowInTheBlock) {
  const Case c = GetParam();
  AttentionShape s{c.H, c.Hkv, c.hd, c.window, 0.5f};
  const int64_t kv_row = c.Hkv * c.hd, qrow = c.H * c.hd;
  auto q = testing::RandomVector(c.T * qrow, 4);
  auto k = testing::RandomVector(c.N * kv_row, 5);
  auto v = testing::RandomVector(c.N * kv_row, 6);
  std::vector<int64_t> pos(c.T);
  for (int64_t t = 0; t < c.T; ++t) pos[t] = c.N - c.T + t;
  const KvSegment seg{k.data(), v.data(), kv_row, 0, c.N};
  ThreadPool pool2(2), pool3(3);
  std::vector<float> block(c.T * qrow);
  Attention(s, q.data(), pos.data(), c.T, &seg, 1, block.data(), &pool2);
  for (int64_t t = 0; t < c.T; ++t) {
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
      std::vector<float> row(qrow, -1.0f);
      Attention(s, q.data() + t * qrow, &pos[t], 1, &seg, 1, row.data(), p);
      ASSERT_EQ(row, std::vector<float>(block.begin() + t * qrow, block.begin() + (t + 1) * qrow))
          << "row " << t << (p ? " threaded" : " serial");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionTest,
                         ::testing::Values(Case{2, 1, 32, 0, 5, 5},  // MQA, full causal prefill
                                           Case{2, 1, 32, 16, 36,
                                                36},  // sliding window shorter than the prompt
                                           Case{4, 2, 16, 12, 7, 40},  // GQA, chunk after a long past
                                           Case{4, 2, 64, 0, 1, 50},   // decode step, full attention
                                           Case{8, 2, 16, 3, 9, 9},    // tiny window
                                           Case{4, 4, 8, 1, 4, 10},    // window 1: a token sees only itself
                                           Case{8, 1, 32, 0, 3, 700},  // several key chunks
                                           Case{8, 1, 32, 300, 6, 700},  // a window across chunks
                                           Case{4, 2, 16, 0, 5, 530}));  // GQA across chunks

// f16 segments (a KV cache in f16) give exactly the bits of f32 segments holding the same
// f16-rounded values, alone and mixed with f32 segments (the forward's f16 past + f32 fresh
// rows), for full and sliding masks, odd head counts and head sizes, tiles with tails.
class AttentionF16Test : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionF16Test, EqualsF32SegmentsOfTheRoundedValues) {
  const Case c = GetParam();
  AttentionShape s{c.H, c.Hkv, c.hd, c.window, 1.0f / std::sqrt(static_cast<float>(c.hd))};
  const int64_t kv_row = c.Hkv * c.hd;
  auto q = testing::RandomVector(c.T * c.H * c.hd, 4);
  auto k = testing::RandomVector(c.N * kv_row, 5);
  auto v = testing::RandomVector(c.N * kv_row, 6);
  std::vector<uint16_t> k16(k.size()), v16(v.size());
  for (size_t i = 0; i < k.size(); ++i) {
    k16[i] = F32ToF16(3.0f * k[i]);
    v16[i] = F32ToF16(3.0f * v[i]);
    k[i] = F16ToF32(k16[i]);
    v[i] = F16ToF32(v16[i]);
  }
  std::vector<int64_t> pos(c.T);
  for (int64_t t = 0; t < c.T; ++t) pos[t] = c.N - c.T + t;
  auto seg32 = [&](int64_t p0, int64_t n) {
    return KvSegment{k.data() + p0 * kv_row, v.data() + p0 * kv_row, kv_row, p0, n};
  };
  auto seg16 = [&](int64_t p0, int64_t n) {
    return KvSegment{k16.data() + p0 * kv_row, v16.data() + p0 * kv_row, kv_row, p0, n, TensorType::kF16};
  };
  const int64_t past = c.N - c.T, mid = past / 3;
  std::vector<KvSegment> f32_segs = {seg32(0, c.N)};
  std::vector<std::vector<KvSegment>> f16_splits = {
      {seg16(0, c.N)},
      {seg16(mid, past - mid), seg16(0, mid), seg32(past, c.T)},  // ring past in f16, fresh rows f32
      {seg16(0, past), seg16(past, c.T)},
  };
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    std::vector<float> want(c.T * c.H * c.hd, -1.0f);
    Attention(s, q.data(), pos.data(), c.T, f32_segs.data(), 1, want.data(), p);
    for (size_t split = 0; split < f16_splits.size(); ++split) {
      const auto& segs = f16_splits[split];
      std::vector<float> got(want.size(), -2.0f);
      Attention(s, q.data(), pos.data(), c.T, segs.data(), static_cast<int>(segs.size()), got.data(), p);
      ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
          << "split " << split << (p ? " threaded" : "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionF16Test,
                         ::testing::Values(Case{3, 1, 32, 0, 5, 150},    // MQA, odd heads, full, 3 tiles
                                           Case{3, 1, 17, 40, 70, 70},   // odd head size, sliding prefill
                                           Case{6, 3, 24, 0, 1, 129},    // GQA decode, tail of 1 key
                                           Case{5, 5, 8, 64, 9, 200},    // MHA, window = one tile
                                           Case{8, 2, 40, 13, 3, 77},    // GQA, short window, strided rows
                                           Case{1, 1, 256, 0, 2, 66}));  // one head, large head size

// RoundToF16 gives base/half.h's nearest f16 value of each element, in place, any length.
TEST(AttentionF16RoundTest, NearestF16Values) {
  for (int64_t n : {0, 1, 7, 9, 511, 512, 513, 1500}) {
    auto x = testing::RandomVector(n, 9);
    for (int64_t i = 0; i < n; ++i) x[i] *= (i % 3 == 0) ? 1e-6f : (i % 3 == 1 ? 1.0f : 7e4f);
    std::vector<float> want(x.size());
    for (int64_t i = 0; i < n; ++i) want[i] = F16ToF32(F32ToF16(x[i]));
    RoundToF16(x.data(), n);
    if (n > 0) {
      ASSERT_EQ(0, std::memcmp(want.data(), x.data(), n * sizeof(float))) << n;
    }
  }
}

// GQA: query head h reads KV head h / (H / Hkv), not h % Hkv. With distinct values per KV
// head and a single key, each head's output is exactly its KV head's value row.
TEST(AttentionMappingTest, GroupedHeadsReadTheirGroup) {
  const int64_t H = 4, Hkv = 2, hd = 2;
  AttentionShape s{H, Hkv, hd, 0, 1.0f};
  std::vector<float> q(H * hd, 1.0f);
  std::vector<float> k(Hkv * hd, 0.5f);
  std::vector<float> v = {10, 11, 20, 21};  // KV head 0: (10, 11), KV head 1: (20, 21)
  const int64_t pos = 0;
  KvSegment seg{k.data(), v.data(), Hkv * hd, 0, 1};
  std::vector<float> out(H * hd);
  Attention(s, q.data(), &pos, 1, &seg, 1, out.data(), nullptr);
  EXPECT_EQ(out, (std::vector<float>{10, 11, 10, 11, 20, 21, 20, 21}));
}

TEST(AttentionMappingTest, NoVisibleKeyGivesZeros) {
  AttentionShape s{1, 1, 4, 2, 1.0f};
  std::vector<float> q(4, 1.0f), k(4, 1.0f), v(4, 3.0f);
  const int64_t pos = 10;  // the only key is at position 0, outside the window of 2
  KvSegment seg{k.data(), v.data(), 4, 0, 1};
  std::vector<float> out(4, 7.0f);
  Attention(s, q.data(), &pos, 1, &seg, 1, out.data(), nullptr);
  EXPECT_EQ(out, std::vector<float>(4, 0.0f));
}

}  // namespace attention_test
}  // namespace gemlet::ops
