// The bf16 dot products (kernels.h's Numerics, KernelTable::gemm_bf16 / f32_to_bf16): on every
// tier this CPU runs that has them, equal to the scalar twin bit for bit — the rounding of the
// activations (subnormals, NaN, ties, overflow) and the products over K that cover the
// 32-element groups' tails, row ranges and token counts of every tile shape, weights of every
// magnitude, and sums that cancel to subnormals (flushed) and signed zeros; the twin itself is
// within f32 rounding of the exact dot product of its bf16 inputs; and the tiers without them
// leave both entries null.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/kernels_test_util.h"
#include "kernels/ref/ref_kernels.h"

namespace gemlet::kernels {
namespace bf16_kernels_test {

using kernels_test::ExpectSame;
using kernels_test::kSentinel;

float Bf16ToF32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// n bf16 values: mostly N(0, scale) rounded, with every `special`-th one drawn from the edge
// cases (subnormals, zeros of both signs, the smallest normals, 2^63 — large, but no sum overflows).
std::vector<uint16_t> RandomBf16(std::mt19937& rng, int64_t n, float scale, int special = 0) {
  std::vector<float> f = kernels_test::RandomFloats(rng, n, scale);
  const uint16_t edges[] = {0x0000, 0x8000, 0x0001, 0x807f, 0x0080, 0x8080, 0x5f00, 0x3f80, 0xbf80};
  std::vector<uint16_t> h(n);
  F32ToBf16Ref(f.data(), h.data(), n);
  if (special > 0) {
    for (int64_t i = 0; i < n; i += special) h[i] = edges[rng() % std::size(edges)];
  }
  return h;
}

std::vector<const KernelTable*> Bf16Tables() {
  std::vector<const KernelTable*> out;
  for (Tier t : AvailableTiers()) {
    const KernelTable* k = KernelsForTier(t);
    EXPECT_EQ(k->gemm_bf16 == nullptr, k->f32_to_bf16 == nullptr) << TierName(t);
    EXPECT_EQ(k->gemm_bf16 == nullptr, k->gemm_acc_bf16 == nullptr) << TierName(t);
    if (k->gemm_bf16 != nullptr) out.push_back(k);
  }
  return out;
}

TEST(Bf16Kernels, OnlyTheBf16TierHasThem) {
  EXPECT_EQ(ScalarKernels().gemm_bf16, nullptr);
  EXPECT_EQ(ScalarKernels().f32_to_bf16, nullptr);
  EXPECT_EQ(ScalarKernels().gemm_acc_bf16, nullptr);
  EXPECT_EQ(ScalarKernels().online_softmax_bf16, nullptr);
  for (Tier t : AvailableTiers()) {
    const KernelTable& k = *KernelsForTier(t);
    const bool bf16 = t == Tier::kAvx512Bf16;
    EXPECT_EQ(k.gemm_bf16 != nullptr, bf16) << TierName(t);
    EXPECT_EQ(k.f32_to_bf16 != nullptr, bf16) << TierName(t);
    EXPECT_EQ(k.gemm_acc_bf16 != nullptr, bf16) << TierName(t);
    EXPECT_EQ(k.online_softmax_bf16 != nullptr, bf16) << TierName(t);
  }
  if (HostCpuFeatures().avx512_bf16) {
    EXPECT_EQ(Bf16Tables().size(), 1u);
  }
}

TEST(Bf16Kernels, RoundingMatchesTheTwin) {
  std::mt19937 rng(5);
  std::vector<float> x = kernels_test::RandomFloats(rng, 1000, 3.0f);
  const uint32_t specials[] = {0x00000001, 0x807fffff, 0x00400000, 0x7f800001, 0xffc00000, 0x7fffffff,
                               0x3f808000, 0x3f818000, 0x7f7fffff, 0x00800000, 0x80000000, 0x3f807fff,
                               0x7fa00000, 0x3f800001, 0x7f800000, 0xff800000, 0xff7fffff, 0x80800000};
  for (uint32_t u : specials) x.push_back(std::bit_cast<float>(u));
  for (int i = 0; i < 200; ++i) x.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint16_t> want(n + 1, 0x5555);
  F32ToBf16Ref(x.data(), want.data(), n);
  EXPECT_EQ(want[1000 + 0], 0x0000);  // subnormal → +0
  EXPECT_EQ(want[1000 + 1], 0x8000);  // → −0
  EXPECT_EQ(want[1000 + 6], 0x3f80);  // tie to even (down)
  EXPECT_EQ(want[1000 + 7], 0x3f82);  // tie to even (up)
  EXPECT_EQ(want[1000 + 8], 0x7f80);  // overflow → inf
  EXPECT_EQ(want[1000 + 3], 0x7fc0);  // NaN quieted
  for (const KernelTable* k : Bf16Tables()) {
    for (int64_t len : {int64_t{0}, int64_t{1}, int64_t{15}, int64_t{16}, int64_t{17}, n}) {
      std::vector<uint16_t> got(n + 1, 0x5555);
      k->f32_to_bf16(x.data(), got.data(), len);
      for (int64_t i = 0; i < len; ++i) ASSERT_EQ(got[i], want[i]) << TierName(k->tier) << " element " << i;
      EXPECT_EQ(got[len], 0x5555) << TierName(k->tier) << ": wrote past n=" << len;
    }
  }
}

TEST(Bf16Kernels, GemmMatchesTheTwin) {
  std::mt19937 rng(7);
  const std::vector<const KernelTable*> tables = Bf16Tables();
  if (tables.empty()) GTEST_SKIP() << "this CPU has no bf16 dot products (the twin is tested below)";
  // Rows across the kernel's panels of 32 (and a start off them); tokens across its tiles of 12.
  for (int64_t K : {0, 1, 2, 31, 32, 33, 63, 96, 130, 1024}) {
    for (int64_t rows : {1, 3, 4, 7, 9, 33, 70}) {
      for (int64_t T : {1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 25}) {
        for (int special : {0, 7}) {
          const int64_t rs = K + 3, xs = K + 5, r0 = rows > 3 ? 1 : 0, ldy = rows + 2;
          const std::vector<uint16_t> w = RandomBf16(rng, rows * rs, 0.05f * (1 + K % 3), special);
          const std::vector<uint16_t> x = RandomBf16(rng, T * xs, 2.0f, special);
          std::vector<float> want(T * ldy, kSentinel);
          GemmBf16Ref(w.data(), rs, r0, rows, x.data(), xs, T, K, want.data(), ldy);
          for (const KernelTable* k : tables) {
            std::vector<float> got(T * ldy, kSentinel);
            k->gemm_bf16(w.data(), rs, r0, rows, x.data(), xs, T, K, got.data(), ldy);
            ExpectSame(want, got,
                       std::string(TierName(k->tier)) + " K=" + std::to_string(K) + " rows=" + std::to_string(rows) +
                           " T=" + std::to_string(T) + " special=" + std::to_string(special));
          }
        }
      }
    }
  }
}

// The accumulating product (attention's P·V and scores): every tile shape (row blocks of 8 and
// their tails, 32-column pairs of vectors, masked column tails), strides, inputs with edge
// cases, and accumulation onto given outputs, against the twin bit for bit; splitting N at an
// even point across two calls gives the same bits.
TEST(Bf16Kernels, GemmAccMatchesTheTwin) {
  std::mt19937 rng(13);
  const std::vector<const KernelTable*> tables = Bf16Tables();
  if (tables.empty()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  for (int64_t M : {1, 3, 8, 9, 17}) {
    for (int64_t D : {1, 15, 16, 17, 32, 33, 64, 100}) {
      for (int64_t N : {0, 2, 6, 64, 128}) {
        for (int special : {0, 5}) {
          const int64_t lda = N + 4, bs = 2 * D + 6, ldy = D + 3;
          const std::vector<uint16_t> a = RandomBf16(rng, M * lda, 0.3f, special);
          const std::vector<uint16_t> b = RandomBf16(rng, (N / 2) * bs + 2, 1.0f, special);
          const std::vector<float> y0 = kernels_test::RandomFloats(rng, M * ldy, 0.5f);
          std::vector<float> want = y0;
          GemmAccBf16Ref(a.data(), lda, M, b.data(), bs, N, D, want.data(), ldy);
          const std::string what = " M=" + std::to_string(M) + " D=" + std::to_string(D) + " N=" + std::to_string(N) +
                                   " special=" + std::to_string(special);
          for (const KernelTable* k : tables) {
            std::vector<float> got = y0;
            k->gemm_acc_bf16(a.data(), lda, M, b.data(), bs, N, D, got.data(), ldy);
            ExpectSame(want, got, TierName(k->tier) + what);
            if (N >= 64) {  // in two calls, split at an even N
              std::vector<float> split = y0;
              k->gemm_acc_bf16(a.data(), lda, M, b.data(), bs, 32, D, split.data(), ldy);
              k->gemm_acc_bf16(a.data() + 32, lda, M, b.data() + 16 * bs, bs, N - 32, D, split.data(), ldy);
              ExpectSame(want, split, TierName(k->tier) + what + " split");
            }
          }
        }
      }
    }
  }
}

// The fused softmax against its twin (OnlineSoftmaxRef, then F32ToBf16Ref) bit for bit: row
// tails (n mod 16) and odd n (the +0 partner), strides, a first tile (m = −inf) and a second
// whose maximum grows for some rows; s is left as it was and nothing past a row's pair is written.
// On a CPU without the bf16 dot products only the twin's own checks run (it is the scalar code).
TEST(Bf16Kernels, OnlineSoftmaxBf16MatchesTheTwin) {
  std::mt19937 rng(17);
  const std::vector<const KernelTable*> tables = Bf16Tables();
  for (int64_t n : {1, 2, 15, 16, 17, 33, 128}) {
    for (int64_t R : {1, 3, 8}) {
      const int64_t lds = n + 5, ldp = n + 7;
      std::vector<float> s1 = kernels_test::RandomFloats(rng, R * lds, 6.0f), s2 = kernels_test::RandomFloats(rng, R * lds, 9.0f);
      std::vector<float> mw(R, -INFINITY), lw(R, 0.0f), cw(R);
      std::vector<uint16_t> pw(R * ldp, 0x5555);
      OnlineSoftmaxBf16Ref(s1.data(), lds, R, n, mw.data(), lw.data(), cw.data(), pw.data(), ldp);
      const std::vector<float> m1 = mw, l1 = lw;
      OnlineSoftmaxBf16Ref(s2.data(), lds, R, n, mw.data(), lw.data(), cw.data(), pw.data(), ldp);
      // The twin is online_softmax's twin and the rounding, composed.
      std::vector<float> plain = s2, mp = m1, lp = l1, cp(R);
      OnlineSoftmaxRef(plain.data(), lds, R, n, mp.data(), lp.data(), cp.data());
      EXPECT_EQ(mp, mw);
      EXPECT_EQ(lp, lw);
      for (int64_t r = 0; r < R; ++r) {
        std::vector<uint16_t> want(n);
        F32ToBf16Ref(plain.data() + r * lds, want.data(), n);
        for (int64_t c = 0; c < n; ++c) ASSERT_EQ(pw[r * ldp + c], want[c]) << "n=" << n << " r=" << r;
      }
      for (const KernelTable* k : tables) {
        const std::string what = std::string(TierName(k->tier)) + " n=" + std::to_string(n) + " R=" + std::to_string(R);
        std::vector<float> m(R, -INFINITY), l(R, 0.0f), corr(R);
        std::vector<uint16_t> p(R * ldp, 0x5555);
        const std::vector<float> s1_before = s1, s2_before = s2;
        k->online_softmax_bf16(s1.data(), lds, R, n, m.data(), l.data(), corr.data(), p.data(), ldp);
        k->online_softmax_bf16(s2.data(), lds, R, n, m.data(), l.data(), corr.data(), p.data(), ldp);
        EXPECT_EQ(s1, s1_before) << what;
        EXPECT_EQ(s2, s2_before) << what;
        ExpectSame(mw, m, what + " m");
        ExpectSame(lw, l, what + " l");
        ExpectSame(cw, corr, what + " corr");
        for (int64_t r = 0; r < R; ++r) {
          for (int64_t c = 0; c < n + n % 2; ++c) {
            ASSERT_EQ(p[r * ldp + c], pw[r * ldp + c]) << what << " row " << r << " weight " << c;
          }
          if (n % 2 != 0) EXPECT_EQ(p[r * ldp + n], 0) << what;
          for (int64_t c = n + n % 2; c < ldp; ++c) ASSERT_EQ(p[r * ldp + c], 0x5555) << what << ": wrote past the row";
        }
      }
    }
  }
}

// Sums that cancel: each token's row is the weight row negated but for tiny perturbations, so
// lanes pass through subnormal and zero sums, which vdpbf16ps flushes to ±0.
TEST(Bf16Kernels, CancellingSumsMatchTheTwin) {
  std::mt19937 rng(9);
  const std::vector<const KernelTable*> tables = Bf16Tables();
  if (tables.empty()) GTEST_SKIP() << "this CPU has no bf16 dot products";
  const int64_t K = 96, R = 4, T = 4;
  std::vector<uint16_t> w(R * K), x(T * K);
  for (int64_t i = 0; i < R * K; ++i) w[i] = static_cast<uint16_t>(0x0080 + (rng() % 0x0100)) | (rng() % 2 ? 0x8000 : 0);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < K; ++i) {
      // x·w with both around 2^-126·2^k: products near the bottom of the normal range.
      x[t * K + i] = static_cast<uint16_t>((0x3f80 + (rng() % 0x0200)) ^ (w[(t % R) * K + i] & 0x8000) ^ (i % 2 ? 0x8000 : 0));
    }
  }
  std::vector<float> want(T * R), got(T * R);
  GemmBf16Ref(w.data(), K, 0, R, x.data(), K, T, K, want.data(), R);
  for (const KernelTable* k : tables) {
    k->gemm_bf16(w.data(), K, 0, R, x.data(), K, T, K, got.data(), R);
    ExpectSame(want, got, TierName(k->tier));
  }
}

// The twin is a dot product: within the bound of f32 sequential summation, (K − 1)·2⁻²⁴·Σ|x·w|,
// of the exact sum of its (bf16) inputs' products.
TEST(Bf16Kernels, TwinIsTheDotProductOfTheRoundedInputs) {
  std::mt19937 rng(3);
  for (int64_t K : {1, 32, 100, 4096}) {
    const std::vector<uint16_t> w = RandomBf16(rng, K, 0.1f), x = RandomBf16(rng, K, 3.0f);
    double exact = 0, abs_sum = 0;
    for (int64_t i = 0; i < K; ++i) {
      const double p = static_cast<double>(Bf16ToF32(w[i])) * Bf16ToF32(x[i]);
      exact += p;
      abs_sum += std::fabs(p);
    }
    EXPECT_NEAR(DotBf16Ref(w.data(), x.data(), K), exact, std::ldexp(static_cast<double>(K), -24) * abs_sum + 1e-30)
        << "K=" << K;
  }
}

}  // namespace bf16_kernels_test
}  // namespace gemlet::kernels
