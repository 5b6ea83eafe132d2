// The online softmax kernel (kernels.h OnlineSoftmaxFn): every tier this CPU runs equals the
// scalar twin bit for bit (scores, running maxima, sums and corrections) over row lengths that
// cover the SIMD tails, strides, and first and later tiles; the twin's SoftmaxExp is within
// 2 ulp of e^x, and two tiles give the softmax of their union.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"

namespace gemlet::kernels {
namespace online_softmax_test {

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct State {
  std::vector<float> s, m, l, corr;
};

// R rows of n scores (stride lds) of spread `scale`; m before the tile: −inf (a first tile),
// or around the scores' maximum (a later tile, whose maximum may or may not grow).
State MakeState(std::mt19937& rng, int64_t R, int64_t n, int64_t lds, float scale, bool first) {
  std::normal_distribution<float> nd(0.0f, scale);
  State st;
  st.s.resize(R * lds);
  for (float& x : st.s) x = nd(rng);
  st.m.resize(R);
  st.l.resize(R);
  st.corr.assign(R, -1.0f);
  for (int64_t r = 0; r < R; ++r) {
    st.m[r] = first ? -std::numeric_limits<float>::infinity() : nd(rng) + (r % 2 ? 2.0f * scale : 0.0f);
    st.l[r] = first ? 0.0f : 1.0f + std::abs(nd(rng));
  }
  return st;
}

TEST(OnlineSoftmax, EveryTierMatchesTheTwin) {
  std::mt19937 rng(11);
  for (Tier t : AvailableTiers()) {
    const KernelTable& k = *KernelsForTier(t);
    ASSERT_NE(k.online_softmax, nullptr) << TierName(t);
    for (int64_t n : {1, 5, 8, 15, 16, 17, 31, 32, 33, 64, 88, 128, 200}) {
      for (int64_t R : {1, 3, 8}) {
        for (float scale : {1.0f, 10.0f, 60.0f}) {
          for (bool first : {true, false}) {
            const std::string what = std::string(TierName(t)) + " n=" + std::to_string(n) + " R=" + std::to_string(R) +
                                     " scale=" + std::to_string(scale) + (first ? " first" : " later");
            const int64_t lds = n + 3;
            const State in = MakeState(rng, R, n, lds, scale, first);
            State want = in, got = in;
            OnlineSoftmaxRef(want.s.data(), lds, R, n, want.m.data(), want.l.data(), want.corr.data());
            k.online_softmax(got.s.data(), lds, R, n, got.m.data(), got.l.data(), got.corr.data());
            ASSERT_TRUE(SameBits(want.s, got.s)) << what << ": weights (or the padding between rows)";
            ASSERT_TRUE(SameBits(want.m, got.m)) << what << ": maxima";
            ASSERT_TRUE(SameBits(want.l, got.l)) << what << ": sums";
            ASSERT_TRUE(SameBits(want.corr, got.corr)) << what << ": corrections";
          }
        }
      }
    }
  }
}

TEST(OnlineSoftmax, ExpWithinTwoUlp) {
  float worst = 0;
  for (float x = -87.0f; x <= 0.0f; x += 0.000731f) {
    const double want = std::exp(static_cast<double>(x));
    const float got = SoftmaxExp(x);
    const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(want)) - 23);
    worst = std::max(worst, static_cast<float>(std::abs(got - want) / ulp));
  }
  std::printf("[softmax exp] worst error on [-87, 0]: %.2f ulp\n", worst);
  EXPECT_LE(worst, 2.0f);
  EXPECT_EQ(SoftmaxExp(0.0f), 1.0f);
  EXPECT_EQ(SoftmaxExp(-1000.0f), SoftmaxExp(-87.0f));  // clamped below
  EXPECT_EQ(SoftmaxExp(-std::numeric_limits<float>::infinity()), SoftmaxExp(-87.0f));
  EXPECT_GT(SoftmaxExp(-87.0f), 0.0f);
  EXPECT_LT(SoftmaxExp(-87.0f), 2e-38f);
}

// Two tiles in turn: m is the maximum of both, l·e^m = Σ e^s over both, and the first tile's
// weights times the second call's correction are e^(s − m) of the final maximum.
TEST(OnlineSoftmax, TwoTilesGiveTheSoftmaxOfTheirUnion) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 8.0f);
  for (Tier t : AvailableTiers()) {
    const KernelTable& k = *KernelsForTier(t);
    const int64_t n = 40;
    std::vector<float> a(n), b(n);
    for (float& x : a) x = nd(rng);
    for (float& x : b) x = nd(rng) + 5.0f;  // the maximum grows in the second tile
    double mx = -1e30;
    for (float x : a) mx = std::max<double>(mx, x);
    for (float x : b) mx = std::max<double>(mx, x);
    double sum = 0;
    for (float x : a) sum += std::exp(x - mx);
    for (float x : b) sum += std::exp(x - mx);
    float m = -std::numeric_limits<float>::infinity(), l = 0, corr1, corr2;
    std::vector<float> pa = a, pb = b;
    k.online_softmax(pa.data(), n, 1, n, &m, &l, &corr1);
    k.online_softmax(pb.data(), n, 1, n, &m, &l, &corr2);
    EXPECT_EQ(m, static_cast<float>(mx)) << TierName(t);
    EXPECT_NEAR(l, sum, 1e-6 * sum) << TierName(t);
    for (int64_t c = 0; c < n; ++c) {
      EXPECT_NEAR(pa[c] * corr2, std::exp(a[c] - mx), 1e-6) << TierName(t);
      EXPECT_NEAR(pb[c], std::exp(b[c] - mx), 1e-6) << TierName(t);
    }
  }
}

}  // namespace online_softmax_test
}  // namespace gemlet::kernels
