// Attention over q8 KV segments (a KV cache in q8) and the rounding to the values a KV cache
// holds (RoundToKvType): the scores of q8 keys are the kernel table's int8 dot products with
// the queries quantized per block of 32, and q8 values are dequantized exactly, so the result
// is that of exact attention over the dequantized queries, keys and values, up to f32
// rounding — with the same bits whichever segments, query blocks, threads or path (prefill,
// decode) compute it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "kernels/kernels.h"
#include "kernels/ref/quant.h"
#include "kernels/ref/ref_kernels.h"
#include "ops/attention.h"
#include "ops/attention_test_util.h"
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

// The values the int8 queries stand for: each block of 32 quantized as quantize_act does
// (kernels.h), then q·d.
std::vector<float> QuantizedQueries(const std::vector<float>& q) {
  const int64_t n = static_cast<int64_t>(q.size());
  std::vector<kernels::ActBlock> b(n / kQBlock);
  kernels::QuantizeActRef(q.data(), b.data(), n);
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(b[i / kQBlock].q[i % kQBlock]) * b[i / kQBlock].d;
  return out;
}

class AttentionQ8Test : public ::testing::TestWithParam<Case> {};

// Prefill-shaped (T query rows) and decode-shaped (each row alone, the keys shared out between
// threads) over q8 segments — one; a wrapped ring past and the fresh chunk's rows in a buffer
// of their own, as the forward pass gives them; past and fresh rows split elsewhere — for 1, 2
// and 3 threads: the same bits everywhere, and within f32 rounding of attention in double over
// the quantized queries (which are 8-bit: the unquantized queries' result is ~1e-2 away).
TEST_P(AttentionQ8Test, IdenticalOverAnySplitAndCloseToQuantizedQueries) {
  const Case c = GetParam();
  AttentionShape s{c.H, c.Hkv, c.hd, c.window, 1.0f / std::sqrt(static_cast<float>(c.hd))};
  const int64_t kv_row = c.Hkv * c.hd, qrow = c.H * c.hd;
  auto q = testing::RandomVector(c.T * qrow, 4);
  auto k = testing::RandomVector(c.N * kv_row, 5, 3.0f);
  auto v = testing::RandomVector(c.N * kv_row, 6, 3.0f);
  const std::vector<BlockQ8> kq = QuantizeRows(k), vq = QuantizeRows(v);
  const std::vector<double> ref = testing::NaiveAttention(s, QuantizedQueries(q), k, v, c.T, c.N);
  std::vector<int64_t> pos(c.T);
  for (int64_t t = 0; t < c.T; ++t) pos[t] = c.N - c.T + t;
  const int64_t past = c.N - c.T, mid = past / 3, bpr = kv_row / kQBlock;  // blocks per row
  // The fresh rows' blocks, copied into a buffer of their own (the forward's scratch).
  const std::vector<BlockQ8> kf(kq.begin() + past * bpr, kq.end()), vf(vq.begin() + past * bpr, vq.end());
  auto seg8 = [&](int64_t p0, int64_t n) {
    return KvSegment{kq.data() + p0 * bpr, vq.data() + p0 * bpr, kv_row, p0, n, TensorType::kQ8};
  };
  const KvSegment fresh{kf.data(), vf.data(), kv_row, past, c.T, TensorType::kQ8};
  std::vector<std::vector<KvSegment>> q8_splits = {
      {seg8(0, c.N)},
      {seg8(mid, past - mid), seg8(0, mid), fresh},  // ring past, fresh rows apart
      {seg8(0, past / 2), seg8(past / 2, c.N - past / 2)},
  };
  ThreadPool pool2(2), pool3(3);
  std::vector<float> first;
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
    const std::string where = p ? " threads " + std::to_string(p->num_threads()) : " serial";
    for (size_t split = 0; split < q8_splits.size(); ++split) {
      const auto& segs = q8_splits[split];
      std::vector<float> got(c.T * qrow, -2.0f);
      Attention(s, q.data(), pos.data(), c.T, segs.data(), static_cast<int>(segs.size()), got.data(), p);
      if (first.empty()) {
        first = got;
        for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], ref[i], 1e-4) << i;
      }
      ASSERT_EQ(0, std::memcmp(first.data(), got.data(), got.size() * sizeof(float))) << "split " << split << where;
      std::vector<float> io = q;  // in place: the output over the queries
      Attention(s, io.data(), pos.data(), c.T, segs.data(), static_cast<int>(segs.size()), io.data(), p);
      ASSERT_EQ(0, std::memcmp(first.data(), io.data(), io.size() * sizeof(float))) << "in place, split " << split << where;
    }
    // Decode: each query row alone over the q8 past (its own and earlier positions).
    for (int64_t t = 0; t < c.T; ++t) {
      const KvSegment dec = seg8(0, pos[t] + 1);
      std::vector<float> row(qrow, -3.0f);
      Attention(s, q.data() + t * qrow, &pos[t], 1, &dec, 1, row.data(), p);
      ASSERT_EQ(0, std::memcmp(first.data() + t * qrow, row.data(), qrow * sizeof(float))) << "row " << t << where;
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
                                           Case{1, 1, 512, 0, 2, 66},     // the full layers' head size
                                           Case{8, 1, 512, 0, 5, 300}));  // E2B's full layers

// An interleaved layout (K then V of each position, stride 2·row, as a bench or packed cache
// may use): the block offsets follow the element offsets, and the bits are those of K and V
// in arrays of their own.
TEST(AttentionQ8LayoutTest, StridedRows) {
  const int64_t H = 4, Hkv = 2, hd = 64, N = 300, row = Hkv * hd, bpr = row / kQBlock;
  AttentionShape s{H, Hkv, hd, 0, 0.125f};
  auto kv = testing::RandomVector(N * 2 * row, 11);
  const std::vector<BlockQ8> q8 = QuantizeRows(kv);
  std::vector<BlockQ8> k8, v8;
  for (int64_t p = 0; p < N; ++p) {
    k8.insert(k8.end(), q8.begin() + 2 * p * bpr, q8.begin() + (2 * p + 1) * bpr);
    v8.insert(v8.end(), q8.begin() + (2 * p + 1) * bpr, q8.begin() + (2 * p + 2) * bpr);
  }
  auto q = testing::RandomVector(H * hd, 12);
  const int64_t p = N - 1;
  const KvSegment apart{k8.data(), v8.data(), row, 0, N, TensorType::kQ8};
  const KvSegment s8{q8.data(), q8.data() + bpr, 2 * row, 0, N, TensorType::kQ8};
  std::vector<float> want(H * hd), got(H * hd);
  ThreadPool pool(2);
  Attention(s, q.data(), &p, 1, &apart, 1, want.data(), &pool);
  Attention(s, q.data(), &p, 1, &s8, 1, got.data(), &pool);
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)));
}

// What the bit-identity above rests on, for every kernel tier this CPU runs: gemm_q8 over a
// tile of key rows (strided, a KV head's slice) gives each (key, query) score the same bits
// whichever keys and queries share the call — tails of the 4-row and 4-token tiles, one query
// (a decode step of MHA), a block of 32 (a prefill block of E2B), any range of keys.
TEST(AttentionQ8ScoresTest, IndependentOfTheKeysAndQueriesSharingTheCall) {
  for (kernels::Tier tier : kernels::AvailableTiers()) {
    const kernels::KernelTable& kt = *kernels::KernelsForTier(tier);
    for (int64_t hd : {32, 96, 256, 512}) {
      const int64_t Hkv = 2, nk = 64, M = 32, nb = hd / kQBlock, stride = Hkv * nb;  // stride in blocks
      auto kf = testing::RandomVector(nk * Hkv * hd, 30 + hd, 3.0f);
      std::vector<BlockQ8> k8(kf.size() / kQBlock);
      QuantizeKvRowQ8(kf.data(), k8.data(), static_cast<int64_t>(kf.size()));
      const BlockQ8* head1 = k8.data() + nb;  // KV head 1's slice of each row
      auto qf = testing::RandomVector(M * hd, 40 + hd);
      std::vector<kernels::ActBlock> qa(M * nb);
      kt.quantize_act(qf.data(), qa.data(), M * hd);
      std::vector<float> all(M * nk, -1.0f);
      kt.gemm_q8(head1, stride, 0, nk, qa.data(), nb, M, hd, all.data(), nk);
      const std::string what = std::string(kernels::TierName(tier)) + " hd " + std::to_string(hd);
      const int64_t key_ranges[][2] = {{0, 1}, {1, 6}, {6, 7}, {7, 40}, {40, 64}, {3, 64}};
      const int64_t query_ranges[][2] = {{0, 1}, {1, 3}, {3, 8}, {8, 13}, {13, 32}, {5, 6}};
      for (const auto& kr : key_ranges) {
        for (const auto& qr : query_ranges) {
          const int64_t T = qr[1] - qr[0];
          std::vector<float> part(T * nk, -2.0f);
          kt.gemm_q8(head1, stride, kr[0], kr[1], qa.data() + qr[0] * nb, nb, T, hd, part.data(), nk);
          for (int64_t t = 0; t < T; ++t) {
            for (int64_t r = kr[0]; r < kr[1]; ++r) {
              ASSERT_EQ(0, std::memcmp(&all[(qr[0] + t) * nk + r], &part[t * nk + r], sizeof(float)))
                  << what << " key " << r << " query " << qr[0] + t << " in keys [" << kr[0] << ", " << kr[1]
                  << ") queries [" << qr[0] << ", " << qr[1] << ")";
            }
          }
        }
      }
    }
  }
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
