// Every kernel of every tier this CPU runs equals its scalar twin (kernels/ref) bit for bit,
// over odd sizes, row ranges, token counts, strides and extreme values; and the scalar twins
// agree with a plain dequantize-and-multiply float reference.
#include "kernels/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "kernels/ref/quant.h"
#include "kernels/ref/ref_kernels.h"
#include "kernels/kernels_test_util.h"
#include "kernels/repack.h"

namespace gemlet::kernels {
namespace {}  // namespace

// Names tiers in gtest messages ("avx2" rather than "4-byte object").
void PrintTo(Tier t, std::ostream* os) { *os << TierName(t); }

namespace kernels_test {

class TierTest : public ::testing::TestWithParam<KernelCase> {
 protected:
  const KernelTable& k() const { return *GetParam().table; }
};

TEST_P(TierTest, QuantizeActMatchesTwin) {
  std::mt19937 rng(1);
  for (int64_t K : kKs) {
    std::vector<float> x = RandomFloats(rng, K, 3.0f);
    // Extreme blocks: zeros, ties at .5 (amax = 127 makes id = 1), huge, tiny, one spike.
    for (int j = 0; j < 32 && K >= 64; ++j) x[j] = 0.0f;
    if (K >= 96) {
      for (int j = 0; j < 32; ++j) x[32 + j] = (j % 2 ? -1.0f : 1.0f) * (j + 0.5f);
      x[32] = 127.0f;
      for (int j = 0; j < 32; ++j) x[64 + j] = (j - 16) * 1e30f;
    }
    if (K >= 4096) {
      for (int j = 0; j < 32; ++j) x[96 + j] = (j - 16) * 1e-35f;   // below 2^-100: zero block
      for (int j = 0; j < 32; ++j) x[128 + j] = (j - 16) * 1e-28f;  // tiny but quantized
      for (int j = 0; j < 32; ++j) x[160 + j] = j == 7 ? -5.0f : 1e-3f;
    }
    std::vector<ActBlock> want(K / 32), got(K / 32);
    std::memset(got.data(), 0x5a, got.size() * sizeof(ActBlock));
    QuantizeActRef(x.data(), want.data(), K);
    k().quantize_act(x.data(), got.data(), K);
    for (int64_t b = 0; b < K / 32; ++b) {
      SCOPED_TRACE("K=" + std::to_string(K) + " block " + std::to_string(b));
      EXPECT_EQ(std::memcmp(want[b].q, got[b].q, 32), 0);
      EXPECT_TRUE(SameFloat(want[b].d, got[b].d)) << want[b].d << " vs " << got[b].d;
      EXPECT_EQ(want[b].sum, got[b].sum);
      int32_t sum = 0;
      for (int j = 0; j < 32; ++j) {
        EXPECT_LE(std::abs(got[b].q[j]), 127);
        sum += got[b].q[j];
      }
      EXPECT_EQ(sum, got[b].sum);
    }
    if (K >= 96) {
      EXPECT_EQ(got[1].q[1], -2);  // −1.5 rounds half to even
      EXPECT_EQ(got[1].q[2], 2);   // 2.5 too
      EXPECT_EQ(got[2].q[16], 0);
      EXPECT_EQ(got[2].q[0], -127);
    }
    if (K >= 4096) {
      EXPECT_EQ(got[3].d, 0.0f);
      EXPECT_EQ(got[3].sum, 0);
      EXPECT_GT(got[4].d, 0.0f);
    }
  }
}

// Row-major q4 / q8: all row ranges, tokens, and a padded row stride.
template <typename Block, typename Gemv, typename Gemm, typename GemvRef, typename GemmRef>
void CheckRowMajor(const char* name, std::vector<Block> (*make)(std::mt19937&, int64_t), Gemv gemv,
                   Gemm gemm, GemvRef gemv_ref, GemmRef gemm_ref) {
  std::mt19937 rng(2);
  for (int64_t K : kKs) {
    const int64_t nb = K / 32;
    for (int64_t rows : kRows) {
      for (int64_t pad : {0, 1}) {
        const int64_t rs = nb + pad;
        std::vector<Block> w = make(rng, rows * rs);
        const int64_t r0 = rows > 2 ? 1 : 0, r1 = rows;
        for (int64_t T : kTokens) {
          const std::string what = std::string(name) + " K=" + std::to_string(K) +
                                   " rows=" + std::to_string(rows) + " pad=" + std::to_string(pad) +
                                   " T=" + std::to_string(T);
          const int64_t xs = nb + 1, ldy = rows + 2;
          std::vector<ActBlock> x = RandomAct(rng, T, K, xs);
          std::vector<float> want(T * ldy, kSentinel), got(T * ldy, kSentinel);
          gemm_ref(w.data(), rs, r0, r1, x.data(), xs, T, K, want.data(), ldy);
          gemm(w.data(), rs, r0, r1, x.data(), xs, T, K, got.data(), ldy);
          ExpectSame(want, got, what + " gemm");
          if (T == 1) {
            std::vector<float> yv(rows, kSentinel), yr(rows, kSentinel);
            gemv_ref(w.data(), rs, r0, r1, x.data(), K, yr.data());
            gemv(w.data(), rs, r0, r1, x.data(), K, yv.data());
            ExpectSame(yr, yv, what + " gemv");
            for (int64_t r = r0; r < r1; ++r) ASSERT_TRUE(SameFloat(yr[r], want[r])) << what;
          }
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST_P(TierTest, GemvGemmQ4MatchTwin) {
  CheckRowMajor("q4", RandomQ4, k().gemv_q4, k().gemm_q4, GemvQ4Ref, GemmQ4Ref);
}

TEST_P(TierTest, GemvGemmQ8MatchTwin) {
  CheckRowMajor("q8", RandomQ8, k().gemv_q8, k().gemm_q8, GemvQ8Ref, GemmQ8Ref);
}

// Saturating inputs: every weight at its extreme, activations ±127, all-zero blocks, and
// scales large enough to overflow to inf.
TEST_P(TierTest, ExtremeValues) {
  const int64_t K = 4096 + 32, nb = K / 32, rows = 16, T = 5;
  std::vector<BlockQ4> w4(rows * nb);
  std::vector<BlockQ8> w8(rows * nb);
  std::vector<ActBlock> x(T * nb);
  for (int64_t i = 0; i < rows * nb; ++i) {
    const int kind = static_cast<int>((i * 7 + i / nb) % 5);
    const uint16_t d = kind == 4 ? F32ToF16(65504.0f) : (kind == 3 ? 0 : F32ToF16(0.5f + kind));
    w4[i].d = w8[i].d = d;
    for (int j = 0; j < 16; ++j)
      w4[i].qs[j] = kind == 0 ? 0x00 : kind == 1 ? 0xff : (j % 2 ? 0x0f : 0xf0);
    for (int j = 0; j < 32; ++j)
      w8[i].qs[j] = kind == 0 ? -128 : kind == 1 ? 127 : (j % 2 ? -128 : 127);
  }
  for (int64_t i = 0; i < T * nb; ++i) {
    const int kind = static_cast<int>(i % 4);
    x[i].d = kind == 3 ? 0.0f : (kind == 2 ? 3e34f : 1.0f);
    int32_t s = 0;
    for (int j = 0; j < 32; ++j) {
      x[i].q[j] = kind == 3 ? 0 : kind == 0 ? 127 : kind == 1 ? -127 : (j % 3 ? -127 : 127);
      s += x[i].q[j];
    }
    x[i].sum = s;
  }
  std::vector<BlockQ4x8> wx(rows / 8 * nb);
  ASSERT_TRUE(RepackQ4x8(w4.data(), rows, K, wx.data()).ok());
  std::vector<BlockQ8x8> w8x(rows / 8 * nb);
  ASSERT_TRUE(RepackQ8x8(w8.data(), rows, K, w8x.data()).ok());
  for (int64_t t = 1; t <= T; ++t) {
    std::vector<float> a(t * rows), b(t * rows);
    GemmQ4Ref(w4.data(), nb, 0, rows, x.data(), nb, t, K, a.data(), rows);
    k().gemm_q4(w4.data(), nb, 0, rows, x.data(), nb, t, K, b.data(), rows);
    ExpectSame(a, b, "q4 extreme T=" + std::to_string(t));
    k().gemm_q4x8(wx.data(), nb, 0, rows, x.data(), nb, t, K, b.data(), rows);
    ExpectSame(a, b, "q4x8 extreme T=" + std::to_string(t));
    GemmQ8Ref(w8.data(), nb, 0, rows, x.data(), nb, t, K, a.data(), rows);
    k().gemm_q8(w8.data(), nb, 0, rows, x.data(), nb, t, K, b.data(), rows);
    ExpectSame(a, b, "q8 extreme T=" + std::to_string(t));
    k().gemm_q8x8(w8x.data(), nb, 0, rows, x.data(), nb, t, K, b.data(), rows);
    ExpectSame(a, b, "q8x8 extreme T=" + std::to_string(t));
    if (t == 1) {
      k().gemv_q8x8(w8x.data(), nb, 0, rows, x.data(), K, b.data());
      ExpectSame(a, b, "q8x8 extreme gemv");
    }
  }
  // The exact integer sums at the extremes: 32·(−8)·127 and 32·(−128)·(−127).
  EXPECT_EQ(BlockDotQ4(w4[0], x[0]), -32 * 8 * 127);
  EXPECT_EQ(BlockDotQ8(w8[0], x[1]), 32 * 128 * 127);
}

TEST_P(TierTest, FloatWeightsMatchTwin) {
  std::mt19937 rng(4);
  for (TensorType wt : {TensorType::kF32, TensorType::kF16, TensorType::kBF16}) {
    for (int64_t K : {0, 1, 15, 16, 17, 32, 100, 4096 + 32}) {
      for (int64_t rows : kRows) {
        const int64_t rs = K + 3, esize = wt == TensorType::kF32 ? 4 : 2;
        std::vector<float> wf = RandomFloats(rng, rows * rs, 0.1f);
        std::vector<uint8_t> w(rows * rs * esize);
        for (int64_t i = 0; i < rows * rs; ++i) {
          if (wt == TensorType::kF32) {
            std::memcpy(&w[i * 4], &wf[i], 4);
          } else {
            const uint16_t h = wt == TensorType::kF16 ? F32ToF16(wf[i]) : F32ToBf16(wf[i]);
            std::memcpy(&w[i * 2], &h, 2);
          }
        }
        for (int64_t T : {1, 2, 3, 4, 5, 8, 9, 12, 17}) {
          const std::string what = std::string(TensorTypeName(wt)) + " K=" + std::to_string(K) +
                                   " rows=" + std::to_string(rows) + " T=" + std::to_string(T);
          const int64_t xs = K + 1, ldy = rows + 1;
          std::vector<float> x = RandomFloats(rng, T * xs, 2.0f);
          std::vector<float> want(T * ldy, kSentinel), got(T * ldy, kSentinel);
          GemmFRef(wt, w.data(), rs, 0, rows, x.data(), xs, T, K, want.data(), ldy);
          k().gemm_f(wt, w.data(), rs, 0, rows, x.data(), xs, T, K, got.data(), ldy, 0);
          ExpectSame(want, got, what + " gemm");
          // The prefetch hint (as attention passes it: the tile's rows) changes no bit.
          std::vector<float> pf(T * ldy, kSentinel);
          k().gemm_f(wt, w.data(), rs, 0, rows, x.data(), xs, T, K, pf.data(), ldy, rows);
          ExpectSame(want, pf, what + " gemm prefetching");
          std::vector<float> yv(rows, kSentinel), yr(rows, kSentinel);
          GemvFRef(wt, w.data(), rs, rows > 1 ? 1 : 0, rows, x.data(), K, yr.data());
          k().gemv_f(wt, w.data(), rs, rows > 1 ? 1 : 0, rows, x.data(), K, yv.data());
          ExpectSame(yr, yv, what + " gemv");
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// y += A·B with f32 / f16 rows of B (attention's P·V): every tier bit for bit against the
// twin, over row-block tails (M), SIMD tails (D), empty and odd N, strided rows; and N split
// across two calls equals one call (the sum is sequential per element).
TEST_P(TierTest, GemmAccMatchesTwin) {
  ASSERT_NE(k().gemm_acc_f, nullptr);
  std::mt19937 rng(9);
  for (TensorType bt : {TensorType::kF32, TensorType::kF16}) {
    for (int64_t D : {1, 7, 15, 16, 17, 31, 32, 33, 47, 100, 256}) {
      for (int64_t M : {1, 2, 3, 4, 5, 7, 8, 9, 17}) {
        for (int64_t N : {0, 1, 2, 31, 64, 65}) {
          const std::string what = std::string(TensorTypeName(bt)) + " D=" + std::to_string(D) +
                                   " M=" + std::to_string(M) + " N=" + std::to_string(N);
          const int64_t bs = D + 5, lda = N + 2, ldy = D + 3;
          std::vector<float> bf = RandomFloats(rng, std::max<int64_t>(N, 1) * bs, 1.0f);
          std::vector<uint16_t> bh(bf.size());
          for (size_t i = 0; i < bf.size(); ++i) {
            bh[i] = F32ToF16(bf[i]);
            if (bt == TensorType::kF16) bf[i] = F16ToF32(bh[i]);
          }
          const void* b = bt == TensorType::kF32 ? static_cast<const void*>(bf.data()) : bh.data();
          std::vector<float> a = RandomFloats(rng, M * lda, 1.0f);
          std::vector<float> y0 = RandomFloats(rng, M * ldy, 1.0f);
          std::vector<float> want = y0, got = y0;
          GemmAccFRef(bt, a.data(), lda, M, b, bs, N, D, want.data(), ldy);
          k().gemm_acc_f(bt, a.data(), lda, M, b, bs, N, D, got.data(), ldy, N);  // prefetching as attention does
          ExpectSame(want, got, what);
          // Split N into [0, h) and [h, N): the same bits.
          const int64_t h = N / 2;
          std::vector<float> split = y0;
          const size_t eb = bt == TensorType::kF32 ? 4 : 2;
          k().gemm_acc_f(bt, a.data(), lda, M, b, bs, h, D, split.data(), ldy, 0);
          k().gemm_acc_f(bt, a.data() + h, lda, M, static_cast<const uint8_t*>(b) + h * bs * eb, bs,
                         N - h, D, split.data(), ldy, 0);
          ExpectSame(want, split, what + " split");
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// The same over q8 rows of B (attention's V from a q8 KV cache, read in place): every tier bit
// for bit against the twin, which is the f32 product over the rows dequantized first
// (DequantizeRowRef); strided rows (a KV row holding several heads), row-block tails, a split N,
// the prefetch hint, and blocks with scale 0 or extreme values.
TEST_P(TierTest, GemmAccQ8MatchesDequantizedRows) {
  ASSERT_NE(k().gemm_acc_f, nullptr);
  std::mt19937 rng(10);
  for (int64_t D : {32, 64, 512}) {
    for (int64_t M : {1, 3, 4, 5, 8, 9}) {
      for (int64_t N : {0, 1, 7, 64, 65}) {
        const std::string what = "q8 D=" + std::to_string(D) + " M=" + std::to_string(M) + " N=" + std::to_string(N);
        const int64_t bs = D + 64, lda = N + 3, ldy = D + 1;  // bs: two more blocks per row
        std::vector<float> bf = RandomFloats(rng, std::max<int64_t>(N, 1) * bs, 3.0f);
        for (int64_t i = 0; i < 32 && i < static_cast<int64_t>(bf.size()); ++i) bf[i] = 0.0f;  // a zero block
        if (bf.size() > 64) bf[40] = 6e4f;  // a block with a large scale
        std::vector<BlockQ8> bq(bf.size() / kQBlock);
        QuantizeRowQ8Ref(bf.data(), bq.data(), static_cast<int64_t>(bf.size()));
        std::vector<float> deq(bf.size());
        DequantizeRowRef(TensorType::kQ8, bq.data(), deq.data(), static_cast<int64_t>(deq.size()));
        std::vector<float> a = RandomFloats(rng, M * lda, 1.0f);
        std::vector<float> y0 = RandomFloats(rng, M * ldy, 1.0f);
        std::vector<float> want = y0, twin = y0, got = y0, split = y0;
        GemmAccFRef(TensorType::kF32, a.data(), lda, M, deq.data(), bs, N, D, want.data(), ldy);
        GemmAccFRef(TensorType::kQ8, a.data(), lda, M, bq.data(), bs, N, D, twin.data(), ldy);
        ExpectSame(want, twin, what + " twin");
        k().gemm_acc_f(TensorType::kQ8, a.data(), lda, M, bq.data(), bs, N, D, got.data(), ldy, 64);
        ExpectSame(want, got, what);
        const int64_t h = N / 2;
        k().gemm_acc_f(TensorType::kQ8, a.data(), lda, M, bq.data(), bs, h, D, split.data(), ldy, 0);
        k().gemm_acc_f(TensorType::kQ8, a.data() + h, lda, M, bq.data() + h * bs / kQBlock, bs, N - h, D, split.data(),
                       ldy, 0);
        ExpectSame(want, split, what + " split");
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Every f16 value, and f32 values around every f16 rounding boundary (ties, subnormals,
// overflow, NaN payloads), bit for bit against base/half.h; lengths cover the SIMD tails.
TEST_P(TierTest, F16ConversionsMatchTwin) {
  ASSERT_NE(k().f16_to_f32, nullptr);
  ASSERT_NE(k().f32_to_f16, nullptr);
  std::vector<uint16_t> h(65536 + 5);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i * 40503u);  // a permutation mod 2^16
  std::vector<float> want(h.size() + 1), got(h.size() + 1, kSentinel);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{7}, int64_t{8}, int64_t{9}, int64_t{17},
                    static_cast<int64_t>(h.size())}) {
    for (int64_t off : {0, 1, 3}) {
      if (off + n > static_cast<int64_t>(h.size())) continue;
      std::fill(got.begin(), got.end(), kSentinel);
      F16ToF32Ref(h.data() + off, want.data(), n);
      k().f16_to_f32(h.data() + off, got.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        uint32_t a, b;
        std::memcpy(&a, &want[i], 4);
        std::memcpy(&b, &got[i], 4);
        ASSERT_EQ(a, b) << "f16_to_f32 of 0x" << std::hex << h[off + i] << " (n " << std::dec << n << ")";
      }
      ASSERT_EQ(got[n], kSentinel) << "f16_to_f32 wrote past n = " << n;
    }
  }
  // f32 -> f16: each f16 value's f32 image and its neighbours ±1, ±2 ulp, the midpoints to
  // the next f16 (ties) and ±1 ulp around them, plus random bit patterns.
  std::vector<float> f;
  auto add_bits = [&](uint32_t u) {
    float x;
    std::memcpy(&x, &u, 4);
    f.push_back(x);
  };
  for (uint32_t v = 0; v < 65536; ++v) {
    uint32_t u;
    const float x = F16ToF32(static_cast<uint16_t>(v));
    std::memcpy(&u, &x, 4);
    for (int d = -2; d <= 2; ++d) add_bits(u + d);
    if ((v & 0x7fffu) < 0x7bffu) {  // midpoint to the next larger magnitude
      const float y = F16ToF32(static_cast<uint16_t>(v + 1));
      const double mid = (static_cast<double>(x) + y) / 2;
      float m = static_cast<float>(mid);  // exact: f16 midpoints fit in f32
      uint32_t um;
      std::memcpy(&um, &m, 4);
      for (int d = -1; d <= 1; ++d) add_bits(um + d);
    }
  }
  for (uint32_t u : {0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477ff001u, 0x7f7fffffu, 0x7f800000u, 0xff800000u,
                     0x7f800001u, 0x7fc00000u, 0xffc12345u, 0x7fbfffffu, 0x00000001u, 0x80000001u, 0x33000000u,
                     0x33000001u, 0xb3000001u, 0x387fe000u, 0x387ff000u}) {
    add_bits(u);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 100000; ++i) add_bits(static_cast<uint32_t>(rng()));
  std::vector<uint16_t> hw(f.size() + 1), hg(f.size() + 1);
  for (int64_t n : {int64_t{1}, int64_t{5}, int64_t{8}, int64_t{13}, static_cast<int64_t>(f.size()) - 1}) {
    for (int64_t off : {0, 1}) {
      std::fill(hg.begin(), hg.end(), 0xabcd);
      F32ToF16Ref(f.data() + off, hw.data(), n);
      k().f32_to_f16(f.data() + off, hg.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        uint32_t u;
        std::memcpy(&u, &f[off + i], 4);
        ASSERT_EQ(hw[i], hg[i]) << "f32_to_f16 of bits 0x" << std::hex << u << " (n " << std::dec << n << ")";
      }
      ASSERT_EQ(hg[n], 0xabcd) << "f32_to_f16 wrote past n = " << n;
    }
  }
}

TEST_P(TierTest, MisuseIsACheckFailure) {
  std::vector<BlockQ4x8> w(2);
  std::vector<ActBlock> x(1);
  std::vector<float> y(16), f(33);
  EXPECT_DEATH(k().gemv_q4x8(w.data(), 1, 4, 16, x.data(), 32, y.data()), "groups of 8 rows");
  std::vector<BlockQ8x8> w8(2);
  EXPECT_DEATH(k().gemm_q8x8(w8.data(), 1, 0, 12, x.data(), 1, 2, 32, y.data(), 16), "groups of 8 rows");
  EXPECT_DEATH(k().quantize_act(f.data(), x.data(), 33), "blocks of 32");
}

INSTANTIATE_TEST_SUITE_P(AllTiers, TierTest, ::testing::ValuesIn(KernelCases()), CaseName);

// ---- The scalar twins against a plain float reference --------------------------------------

double DotDouble(const float* a, const float* b, int64_t n, double* abs_sum) {
  double s = 0.0;
  *abs_sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    s += static_cast<double>(a[i]) * b[i];
    *abs_sum += std::fabs(static_cast<double>(a[i]) * b[i]);
  }
  return s;
}

std::vector<float> DequantizeAct(const ActBlock* x, int64_t K) {
  std::vector<float> f(K);
  for (int64_t i = 0; i < K; ++i) f[i] = x[i / 32].q[i % 32] * x[i / 32].d;
  return f;
}

TEST(KernelsReference, QuantizedProductsMatchDequantizedFloat) {
  std::mt19937 rng(5);
  const int64_t K = 4096 + 32, nb = K / 32, rows = 7;
  std::vector<BlockQ4> w4 = RandomQ4(rng, rows * nb);
  std::vector<BlockQ8> w8 = RandomQ8(rng, rows * nb);
  std::vector<float> xf = RandomFloats(rng, K, 1.5f);
  std::vector<ActBlock> x(nb);
  QuantizeActRef(xf.data(), x.data(), K);
  const std::vector<float> xd = DequantizeAct(x.data(), K);
  for (int64_t i = 0; i < K; ++i) {  // activation quantization error ≤ d/2 per value
    ASSERT_LE(std::fabs(xd[i] - xf[i]), 0.5f * x[i / 32].d * 1.0001f) << i;
  }
  std::vector<float> y4(rows), y8(rows), wrow(K);
  GemvQ4Ref(w4.data(), nb, 0, rows, x.data(), K, y4.data());
  GemvQ8Ref(w8.data(), nb, 0, rows, x.data(), K, y8.data());
  for (int64_t r = 0; r < rows; ++r) {
    double abs_sum;
    DequantizeRowRef(TensorType::kQ4, &w4[r * nb], wrow.data(), K);
    const double ref4 = DotDouble(wrow.data(), xd.data(), K, &abs_sum);
    EXPECT_NEAR(y4[r], ref4, 1e-5 * abs_sum + 1e-6) << "q4 row " << r;
    DequantizeRowRef(TensorType::kQ8, &w8[r * nb], wrow.data(), K);
    const double ref8 = DotDouble(wrow.data(), xd.data(), K, &abs_sum);
    EXPECT_NEAR(y8[r], ref8, 1e-5 * abs_sum + 1e-6) << "q8 row " << r;
    // Against the unquantized activations: the int8 rounding costs well under 1 %.
    const double full = DotDouble(wrow.data(), xf.data(), K, &abs_sum);
    EXPECT_NEAR(y8[r], full, 0.01 * abs_sum) << "q8 row " << r << " vs f32 activations";
  }
}

// A NaN or infinite weight (a hostile checkpoint) quantizes to 0 without undefined behaviour
// (the asan stage runs this under UBSan); the finite values of its block are unaffected.
TEST(KernelsReference, WeightQuantizersTakeNonFiniteValues) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = 0.25f * static_cast<float>(j - 16);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  BlockQ8 q8;
  QuantizeRowQ8Ref(x.data(), &q8, 32);
  EXPECT_EQ(q8.qs[3], 0);
  EXPECT_EQ(q8.qs[0], -127);  // −4 is the block's largest magnitude
  BlockQ4 q4;
  QuantizeRowQ4Ref(x.data(), &q4, 32);
  EXPECT_EQ(q4.qs[3] & 0x0f, 8);  // 8 is q4's zero
  x[5] = std::numeric_limits<float>::infinity();
  QuantizeRowQ8Ref(x.data(), &q8, 32);
  QuantizeRowQ4Ref(x.data(), &q4, 32);
  std::vector<float> back(32);
  DequantizeRowRef(TensorType::kQ8, &q8, back.data(), 32);
  for (float v : back) EXPECT_TRUE(std::isfinite(v) || std::isnan(v));
}

TEST(KernelsReference, FloatProductsMatchDouble) {
  std::mt19937 rng(6);
  const int64_t K = 1000;
  std::vector<float> w = RandomFloats(rng, K, 0.2f), x = RandomFloats(rng, K, 1.0f);
  std::vector<uint16_t> h(K), bf(K);
  std::vector<float> wh(K), wb(K);
  for (int64_t i = 0; i < K; ++i) {
    h[i] = F32ToF16(w[i]);
    bf[i] = F32ToBf16(w[i]);
    wh[i] = F16ToF32(h[i]);
    wb[i] = Bf16ToF32(bf[i]);
  }
  double abs_sum;
  const double r32 = DotDouble(w.data(), x.data(), K, &abs_sum);
  EXPECT_NEAR(DotFRef(TensorType::kF32, w.data(), x.data(), K), r32, 1e-6 * abs_sum);
  const double r16 = DotDouble(wh.data(), x.data(), K, &abs_sum);
  EXPECT_NEAR(DotFRef(TensorType::kF16, h.data(), x.data(), K), r16, 1e-6 * abs_sum);
  const double rb = DotDouble(wb.data(), x.data(), K, &abs_sum);
  EXPECT_NEAR(DotFRef(TensorType::kBF16, bf.data(), x.data(), K), rb, 1e-6 * abs_sum);
}

// ---- Dispatch ------------------------------------------------------------------------------

TEST(KernelsDispatch, ActiveIsTheBestAvailableTier) {
  const std::vector<Tier> tiers = AvailableTiers();
  ASSERT_FALSE(tiers.empty());
  EXPECT_EQ(tiers.front(), Tier::kScalar);
  for (Tier t : tiers) {
    ASSERT_NE(KernelsForTier(t), nullptr);
    EXPECT_EQ(KernelsForTier(t)->tier, t);
  }
  const char* env = std::getenv("GEMLET_CPU");
  if (env == nullptr || *env == '\0') {
    EXPECT_EQ(ActiveKernels().tier, SelectKernels(HostCpuFeatures(), nullptr).tier);
  }
  // The tier the run was told to expect (scripts/test.sh's aarch64 stage: qemu -cpu cortex-a72
  // -> neon, cortex-a76 -> dotprod, max -> i8mm), so that a detection fault cannot make the
  // three runs test the same tier.
  if (const char* want = std::getenv("GEMLET_EXPECT_CPU_TIER"); want != nullptr && *want != '\0') {
    EXPECT_STREQ(TierName(tiers.back()), want);
    if (env == nullptr || *env == '\0') {
      EXPECT_STREQ(TierName(ActiveKernels().tier), want);
    }
  }
  for (Tier t : {Tier::kScalar, Tier::kAvx2, Tier::kAvxVnni, Tier::kAvx512, Tier::kAvx512Bf16, Tier::kNeon,
                 Tier::kDotprod, Tier::kI8mm}) {
    bool listed = false;
    for (Tier a : tiers) listed |= a == t;
    EXPECT_EQ(KernelsForTier(t) != nullptr, listed) << TierName(t);
  }
}

TEST(KernelsDispatch, SelectHonoursFeaturesAndCap) {
  CpuFeatures none;
  EXPECT_EQ(SelectKernels(none, nullptr).tier, Tier::kScalar);
  EXPECT_EQ(SelectKernels(none, "bogus").tier, Tier::kScalar);  // reported and ignored
#if defined(__x86_64__)
  CpuFeatures f;
  f.avx2 = true;
  EXPECT_EQ(SelectKernels(f, nullptr).tier, Tier::kAvx2);
  EXPECT_EQ(SelectKernels(f, "scalar").tier, Tier::kScalar);
  EXPECT_EQ(SelectKernels(f, "avx512").tier, Tier::kAvx2);  // capped at what the CPU has
  f.avx512 = true;
  EXPECT_EQ(SelectKernels(f, nullptr).tier, Tier::kAvx512);
  EXPECT_EQ(SelectKernels(f, "avx2").tier, Tier::kAvx2);
  f.avx_vnni = true;  // both (Zen 5, Sapphire Rapids): the 512-bit kernels unless capped
  EXPECT_EQ(SelectKernels(f, "").tier, Tier::kAvx512);
  EXPECT_EQ(SelectKernels(f, "neon").tier, Tier::kAvx512);  // not an x86 level: ignored
  EXPECT_EQ(SelectKernels(f, "avxvnni").tier, Tier::kAvxVnni);
  f.avx512_bf16 = true;  // Zen 4/5, Sapphire Rapids: the bf16 dot products too
  EXPECT_EQ(SelectKernels(f, nullptr).tier, Tier::kAvx512Bf16);
  EXPECT_EQ(SelectKernels(f, "avx512").tier, Tier::kAvx512);
  f.avx512_bf16 = false;
  f.avx512 = false;
  EXPECT_EQ(SelectKernels(f, nullptr).tier, Tier::kAvxVnni);
#elif defined(__aarch64__)
  CpuFeatures a72;
  a72.neon = true;  // Pi 4: no dotprod, still runs on plain NEON
  EXPECT_EQ(SelectKernels(a72, nullptr).tier, Tier::kNeon);
  EXPECT_EQ(SelectKernels(a72, "i8mm").tier, Tier::kNeon);
  CpuFeatures a76 = a72;
  a76.dotprod = true;
  EXPECT_EQ(SelectKernels(a76, nullptr).tier, Tier::kDotprod);
  EXPECT_EQ(SelectKernels(a76, "neon").tier, Tier::kNeon);
  CpuFeatures v1 = a76;
  v1.i8mm = true;
  EXPECT_EQ(SelectKernels(v1, nullptr).tier, Tier::kI8mm);
  EXPECT_EQ(SelectKernels(v1, "dotprod").tier, Tier::kDotprod);
  EXPECT_EQ(SelectKernels(v1, "scalar").tier, Tier::kScalar);
#endif
}

}  // namespace kernels_test
}  // namespace gemlet::kernels
