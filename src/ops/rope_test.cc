#include "ops/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/ops_test_util.h"

namespace gemlet::ops {
namespace rope_test {

TEST(RopeTest, InvFreqDefaultAndProportional) {
  auto d = RopeInvFreq(32, 10000.0, 16);
  ASSERT_EQ(d.size(), 16u);
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(d[i], std::pow(10000.0, -2.0 * i / 32), 2e-7 * d[i]) << i;
  // Proportional (the E2B full layers: head_dim 64, factor 0.25): 8 pairs rotate with the
  // exponent's denominator 64, the other 24 have inv_freq 0.
  auto p = RopeInvFreq(64, 1e6, 8);
  ASSERT_EQ(p.size(), 32u);
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(p[i], std::pow(1e6, -2.0 * i / 64), 2e-7 * p[i]) << i;
  for (int i = 8; i < 32; ++i) EXPECT_EQ(p[i], 0.0f);
}

// HF's table is 1 / pow in float32, not θ^(−2i/d) rounded once: ../shared/oracle/long/README.md
// measured that the once-rounded table is 1 ulp off HF's in 4 of the 16 sliding values (θ 1e4,
// head_dim 32) and 2 of the 8 rotated full values (θ 1e6, head_dim 64) of the tiny models.
TEST(RopeTest, InvFreqIsHfFloat32Recipe) {
  auto count_off = [](const std::vector<float>& inv, double theta, int64_t hd, int64_t pairs) {
    int off = 0;
    for (int64_t i = 0; i < pairs; ++i) {
      const float once = static_cast<float>(std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(hd)));
      if (once != inv[i]) {
        ++off;
        EXPECT_TRUE(std::nextafter(once, 0.0f) == inv[i] || std::nextafter(once, 1.0f) == inv[i]) << i;
      }
    }
    return off;
  };
  EXPECT_EQ(count_off(RopeInvFreq(32, 10000.0, 16), 10000.0, 32, 16), 4);
  EXPECT_EQ(count_off(RopeInvFreq(64, 1e6, 8), 1e6, 64, 8), 2);
}

// At large positions the angle is the float32 product, rounded once: at t = 131071 that
// rounding (up to 0.004 rad) is what separates HF's angles from exact ones.
TEST(RopeTest, AnglesAreOneFloat32Product) {
  const auto inv = RopeInvFreq(32, 10000.0, 16);
  const int64_t pos[2] = {131071, 65537};
  std::vector<float> c(2 * 16), s(2 * 16);
  RopeAngles(inv, pos, 2, c.data(), s.data());
  int differs_from_f64 = 0;
  for (int64_t t = 0; t < 2; ++t) {
    for (int64_t i = 0; i < 16; ++i) {
      const float a = inv[i] * static_cast<float>(pos[t]);
      EXPECT_EQ(c[t * 16 + i], static_cast<float>(std::cos(static_cast<double>(a)))) << t << " " << i;
      EXPECT_EQ(s[t * 16 + i], static_cast<float>(std::sin(static_cast<double>(a)))) << t << " " << i;
      const double exact = static_cast<double>(pos[t]) * std::pow(10000.0, -2.0 * i / 32);
      if (std::fabs(std::cos(exact) - c[t * 16 + i]) > 1e-5) ++differs_from_f64;
    }
  }
  EXPECT_GT(differs_from_f64, 0) << "the float32 product should differ from a float64 angle at this depth";
}

TEST(RopeTest, MatchesDirectFormulaHalfSplit) {
  const int64_t T = 3, H = 2, hd = 16, half = 8;
  auto inv = RopeInvFreq(hd, 10000.0, half);
  const int64_t pos[T] = {0, 5, 1234};
  std::vector<float> c(T * half), s(T * half);
  RopeAngles(inv, pos, T, c.data(), s.data());
  auto x = testing::RandomVector(T * H * hd, 3);
  auto y = x;
  ApplyRope(y.data(), T, H, hd, c.data(), s.data());
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const float* xv = x.data() + (t * H + h) * hd;
      const float* yv = y.data() + (t * H + h) * hd;
      for (int64_t i = 0; i < half; ++i) {
        const double a = pos[t] * std::pow(10000.0, -2.0 * i / hd);
        EXPECT_NEAR(yv[i], xv[i] * std::cos(a) - xv[i + half] * std::sin(a), 1e-5);
        EXPECT_NEAR(yv[i + half], xv[i + half] * std::cos(a) + xv[i] * std::sin(a), 1e-5);
      }
    }
  }
  // Position 0 is the identity.
  for (int64_t i = 0; i < H * hd; ++i) EXPECT_EQ(y[i], x[i]);
}

TEST(RopeTest, ProportionalLeavesNonRotatedDimsExactly) {
  const int64_t hd = 64, half = 32;
  auto inv = RopeInvFreq(hd, 1e6, 8);
  const int64_t pos[1] = {77};
  std::vector<float> c(half), s(half);
  RopeAngles(inv, pos, 1, c.data(), s.data());
  auto x = testing::RandomVector(hd, 4);
  auto y = x;
  ApplyRope(y.data(), 1, 1, hd, c.data(), s.data());
  // Pairs (i, i+32) rotate for i < 8: dims 0–7 and 32–39. All others are bit-identical.
  for (int64_t i = 0; i < hd; ++i) {
    const bool rotates = (i < 8) || (i >= 32 && i < 40);
    if (rotates) {
      EXPECT_NE(y[i], x[i]) << i;
    } else {
      EXPECT_EQ(y[i], x[i]) << i;
    }
  }
}

// The point of RoPE: q(p1)·k(p2) depends only on p1 − p2.
TEST(RopeTest, DotProductDependsOnRelativePosition) {
  const int64_t hd = 32, half = 16;
  auto inv = RopeInvFreq(hd, 10000.0, half);
  auto q = testing::RandomVector(hd, 5), k = testing::RandomVector(hd, 6);
  auto dot_at = [&](int64_t pq, int64_t pk) {
    std::vector<float> c(half), s(half), qq = q, kk = k;
    RopeAngles(inv, &pq, 1, c.data(), s.data());
    ApplyRope(qq.data(), 1, 1, hd, c.data(), s.data());
    RopeAngles(inv, &pk, 1, c.data(), s.data());
    ApplyRope(kk.data(), 1, 1, hd, c.data(), s.data());
    double d = 0;
    for (int64_t i = 0; i < hd; ++i) d += double(qq[i]) * kk[i];
    return d;
  };
  EXPECT_NEAR(dot_at(10, 3), dot_at(107, 100), 1e-4);
  EXPECT_NEAR(dot_at(5000, 4990), dot_at(20, 10), 1e-3);
}

}  // namespace rope_test
}  // namespace gemlet::ops
