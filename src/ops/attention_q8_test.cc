// Attention over q8 KV segments (a KV cache in q8) and the rounding to the values a KV cache
// holds (RoundToKvType): q8 segments give exactly the bits of f32 segments holding the
// dequantized values, and rounding is idempotent, so prefill and decode agree bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/half.h"
#include "kernels/ref/quant.h"
#include "ops/attention.h"
#include "ops/ops_test_util.h"

namespace gemlet::ops {
namespace attention_q8_test {

struct Case {
  int64_t H, Hkv, hd, window, T, N;
};

// [N, kv_row] f32 rows → q8 blocks (kv_row a multiple of 32, so rows start at block
// boundaries), and `x` replaced by the values the blocks hold.
std::vector<BlockQ8> QuantizeRows(std::vector<float>& x) {
  std::vector<BlockQ8> q(x.size() / kQBlock);
  QuantizeKvRowQ8(x.data(), q.data(), static_cast<int64_t>(x.size()));
  kernels::DequantizeRowRef(TensorType::kQ8, q.data(), x.data(), static_cast<int64_t>(x.size()));
  return q;
}

class AttentionQ8Test : public ::testing::TestWithParam<Case> {};

// Prefill-shaped (T query rows) and decode-shaped (each row alone, the keys shared out between
// threads) over q8 segments — one, a wrapped ring past, the past in q8 with the fresh chunk in
// f32 — give the bits of one f32 segment of the dequantized values, for 1, 2 and 3 threads.
TEST_P(AttentionQ8Test, EqualsF32SegmentsOfTheDequantizedValues) {
  const Case c = GetParam();
  AttentionShape s{c.H, c.Hkv, c.hd, c.window, 1.0f / std::sqrt(static_cast<float>(c.hd))};
  const int64_t kv_row = c.Hkv * c.hd, qrow = c.H * c.hd;
  auto q = testing::RandomVector(c.T * qrow, 4);
  auto k = testing::RandomVector(c.N * kv_row, 5, 3.0f);
  auto v = testing::RandomVector(c.N * kv_row, 6, 3.0f);
  const std::vector<BlockQ8> kq = QuantizeRows(k), vq = QuantizeRows(v);
  std::vector<int64_t> pos(c.T);
  for (int64_t t = 0; t < c.T; ++t) pos[t] = c.N - c.T + t;
  auto seg32 = [&](int64_t p0, int64_t n) {
    return KvSegment{k.data() + p0 * kv_row, v.data() + p0 * kv_row, kv_row, p0, n};
  };
  auto seg8 = [&](int64_t p0, int64_t n) {
    return KvSegment{kq.data() + p0 * kv_row / kQBlock, vq.data() + p0 * kv_row / kQBlock, kv_row, p0, n,
                     TensorType::kQ8};
  };
  const int64_t past = c.N - c.T, mid = past / 3;
  const KvSegment all32 = seg32(0, c.N);
  std::vector<std::vector<KvSegment>> q8_splits = {
      {seg8(0, c.N)},
      {seg8(mid, past - mid), seg8(0, mid), seg32(past, c.T)},  // ring past in q8, fresh rows f32
      {seg8(0, past), seg8(past, c.T)},
  };
  ThreadPool pool2(2), pool3(3);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
    const std::string where = p ? " threads " + std::to_string(p->num_threads()) : " serial";
    std::vector<float> want(c.T * qrow, -1.0f);
    Attention(s, q.data(), pos.data(), c.T, &all32, 1, want.data(), p);
    for (size_t split = 0; split < q8_splits.size(); ++split) {
      const auto& segs = q8_splits[split];
      std::vector<float> got(want.size(), -2.0f);
      Attention(s, q.data(), pos.data(), c.T, segs.data(), static_cast<int>(segs.size()), got.data(), p);
      ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float))) << "split " << split << where;
    }
    // Decode: each query row alone over the q8 past (its own and earlier positions).
    for (int64_t t = 0; t < c.T; ++t) {
      const KvSegment dec = seg8(0, pos[t] + 1);
      std::vector<float> row(qrow, -3.0f);
      Attention(s, q.data() + t * qrow, &pos[t], 1, &dec, 1, row.data(), p);
      ASSERT_EQ(0, std::memcmp(want.data() + t * qrow, row.data(), qrow * sizeof(float))) << "row " << t << where;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionQ8Test,
                         ::testing::Values(Case{3, 1, 32, 0, 5, 150},     // MQA, odd heads, full, 3 tiles
                                           Case{4, 2, 64, 0, 1, 600},     // GQA decode over 3 chunks
                                           Case{8, 1, 32, 300, 6, 700},   // window across chunks
                                           Case{6, 3, 32, 40, 70, 70},    // GQA, sliding prefill
                                           Case{8, 2, 96, 13, 3, 77},     // short window, 3 blocks a head
                                           Case{2, 1, 256, 0, 9, 530},    // E2B-like head, chunks
                                           Case{1, 1, 512, 0, 2, 66}));  // the full layers' head size

// An interleaved layout (K then V of each position, stride 2·row, as a bench or packed cache
// may use): the block offsets follow the element offsets.
TEST(AttentionQ8LayoutTest, StridedRows) {
  const int64_t H = 4, Hkv = 2, hd = 64, N = 300, row = Hkv * hd;
  AttentionShape s{H, Hkv, hd, 0, 0.125f};
  auto kv = testing::RandomVector(N * 2 * row, 11);
  const std::vector<BlockQ8> q8 = QuantizeRows(kv);
  auto q = testing::RandomVector(H * hd, 12);
  const int64_t p = N - 1;
  const KvSegment s32{kv.data(), kv.data() + row, 2 * row, 0, N};
  const KvSegment s8{q8.data(), q8.data() + row / kQBlock, 2 * row, 0, N, TensorType::kQ8};
  std::vector<float> want(H * hd), got(H * hd);
  ThreadPool pool(2);
  Attention(s, q.data(), &p, 1, &s32, 1, want.data(), &pool);
  Attention(s, q.data(), &p, 1, &s8, 1, got.data(), &pool);
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)));
}

// Rows of widely varying magnitude, one scale per block: normal, huge, tiny (the f16 scale
// subnormal), tinier (the scale underflows to 0), all zeros, −0, one outlier among tiny
// values, mixed signs.
std::vector<float> HardRows(int64_t blocks, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ex(-40.0f, 20.0f);
  std::vector<float> x(blocks * kQBlock);
  for (int64_t b = 0; b < blocks; ++b) {
    float* xb = x.data() + b * kQBlock;
    const int kind = static_cast<int>(b % 8);
    const float scale = kind == 0   ? 1.0f
                        : kind == 1 ? 5e4f                 // d near the f16 range's top
                        : kind == 2 ? 127.0f * 0x1p-20f    // d an f16 subnormal
                        : kind == 3 ? 127.0f * 0x1p-27f    // d rounds to 0 in f16
                        : kind == 4 ? 0.0f
                        : kind == 5 ? -0.0f
                                    : std::exp2(ex(rng));  // anything from 2^-40 to 2^20
    for (int j = 0; j < kQBlock; ++j) xb[j] = kind >= 4 && kind <= 5 ? scale : scale * nd(rng);
    if (kind == 7) {  // one outlier among values 1000× smaller
      for (int j = 0; j < kQBlock; ++j) xb[j] *= 1e-3f;
      xb[b % kQBlock] = scale;
    }
  }
  return x;
}

// RoundToKvType: f32 unchanged, f16 = RoundToF16, q8 = ggml's q8_0 reference quantize +
// dequantize (where the f16 scale is not 0; +0 where it is).
TEST(RoundToKvTypeTest, ValuesTheCacheHolds) {
  for (int64_t blocks : {1, 3, 16, 17, 40}) {
    const std::vector<float> x = HardRows(blocks, 20 + blocks);
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<float> a = x, b = x;
    RoundToKvType(TensorType::kF32, a.data(), n);
    EXPECT_EQ(0, std::memcmp(a.data(), x.data(), n * sizeof(float)));
    RoundToKvType(TensorType::kF16, a.data(), n);
    RoundToF16(b.data(), n);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), n * sizeof(float)));

    std::vector<float> r = x;
    RoundToKvType(TensorType::kQ8, r.data(), n);
    std::vector<BlockQ8> ref(blocks);
    kernels::QuantizeRowQ8Ref(x.data(), ref.data(), n);
    std::vector<float> want(n);
    kernels::DequantizeRowRef(TensorType::kQ8, ref.data(), want.data(), n);
    for (int64_t bl = 0; bl < blocks; ++bl) {
      for (int j = 0; j < kQBlock; ++j) {
        const int64_t i = bl * kQBlock + j;
        uint32_t bits;
        std::memcpy(&bits, &r[i], 4);
        if (ref[bl].d == 0) {
          ASSERT_EQ(bits, 0u) << "block " << bl << ": a zero scale gives +0";
        } else {
          ASSERT_EQ(r[i], want[i]) << "block " << bl << " element " << j;
        }
      }
    }
  }
}

// Rounding twice == rounding once, bit for bit, and re-quantizing the rounded values gives
// the same blocks (a cache's Commit of rows that were rounded before they were attended over).
TEST(RoundToKvTypeTest, IdempotentBitForBit) {
  for (uint64_t seed = 0; seed < 50; ++seed) {
    const std::vector<float> x = HardRows(24, 100 + seed);
    const int64_t n = static_cast<int64_t>(x.size());
    for (TensorType t : {TensorType::kF16, TensorType::kQ8}) {
      std::vector<float> once = x;
      RoundToKvType(t, once.data(), n);
      std::vector<float> twice = once;
      RoundToKvType(t, twice.data(), n);
      ASSERT_EQ(0, std::memcmp(once.data(), twice.data(), n * sizeof(float))) << "seed " << seed;
    }
    std::vector<float> once = x;
    RoundToKvType(TensorType::kQ8, once.data(), n);
    std::vector<BlockQ8> b1(n / kQBlock), b2(n / kQBlock);
    QuantizeKvRowQ8(x.data(), b1.data(), n);
    QuantizeKvRowQ8(once.data(), b2.data(), n);
    ASSERT_EQ(0, std::memcmp(b1.data(), b2.data(), b1.size() * sizeof(BlockQ8))) << "seed " << seed;
  }
}

}  // namespace attention_q8_test
}  // namespace gemlet::ops
