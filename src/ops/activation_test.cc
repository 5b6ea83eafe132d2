#include "ops/activation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace gemlet::ops {
namespace activation_test {

double GeluTanhRef(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
double GeluErf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

TEST(ActivationTest, GeluIsTheTanhApproximation) {
  for (double x = -8; x <= 8; x += 0.037) {
    EXPECT_NEAR(GeluTanh(static_cast<float>(x)), GeluTanhRef(static_cast<float>(x)), 2e-6 * (1 + std::abs(x)))
        << x;
  }
  // Far enough from erf GELU that a mix-up cannot pass: at x = 1 they differ by 1.5e-4.
  EXPECT_GT(std::abs(GeluTanh(1.0f) - GeluErf(1.0)), 1e-4);
  EXPECT_EQ(GeluTanh(0.0f), 0.0f);
}

// The vectorizable GELU stays within the exact-tier budget of the tanh form, everywhere.
TEST(ActivationTest, FastGeluMatchesTanhForm) {
  for (double x = -30; x <= 30; x += 0.0173) {
    EXPECT_NEAR(GeluTanhFast(static_cast<float>(x)), GeluTanhRef(static_cast<float>(x)), 1e-6 * (1 + std::abs(x)))
        << x;
  }
  EXPECT_EQ(GeluTanhFast(0.0f), 0.0f);
  EXPECT_EQ(GeluTanhFast(-200.0f), 0.0f);
  EXPECT_EQ(GeluTanhFast(200.0f), 200.0f);
}

TEST(ActivationTest, GeGluAndInPlace) {
  std::vector<float> gate = {-2.0f, -0.5f, 0.0f, 0.7f, 3.0f};
  std::vector<float> up = {1.0f, 2.0f, 3.0f, -4.0f, 0.5f};
  std::vector<float> out(5);
  GeGlu(gate.data(), up.data(), 5, out.data());
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(out[i], GeluTanhRef(gate[i]) * up[i], 1e-6);
  GeGlu(gate.data(), up.data(), 5, gate.data());  // aliasing the gate
  EXPECT_EQ(gate, out);
  std::vector<float> g = {-1.0f, 2.0f};
  GeluTanhInPlace(g.data(), 2);
  EXPECT_NEAR(g[0], GeluTanhRef(-1.0), 1e-6);
  EXPECT_NEAR(g[1], GeluTanhRef(2.0), 1e-6);
}

TEST(ActivationTest, SoftcapScaleAdd) {
  std::vector<float> x = {-100.0f, -14.6f, 0.0f, 1.0f, 14.6f, 1000.0f};
  std::vector<float> y = x;
  Softcap(y.data(), y.size(), 30.0f);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], 30.0 * std::tanh(x[i] / 30.0), 1e-5);
  EXPECT_NEAR(y[4], 13.547, 1e-3);  // 30·tanh(14.6/30)
  EXPECT_LE(y[5], 30.0f);
  std::vector<float> z = x;
  Softcap(z.data(), z.size(), 0.0f);  // no cap
  EXPECT_EQ(z, x);
  Scale(z.data(), z.size(), 0.5f);
  EXPECT_EQ(z[0], -50.0f);
  AddInPlace(z.data(), x.data(), z.size());
  EXPECT_EQ(z[0], -150.0f);
}

// Non-finite inputs (a corrupt KV state, an overflowing activation) give NaN or the limits,
// never undefined behaviour (the asan stage runs this under UBSan).
TEST(ActivationTest, NonFiniteInputs) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(GeluTanhFast(nan)));
  EXPECT_EQ(GeluTanhFast(inf), inf);
  std::vector<float> x = {nan, inf, -inf, 1.0f};
  std::vector<float> out(4);
  GeGlu(x.data(), std::vector<float>(4, 1.0f).data(), 4, out.data());
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(out[1], inf);
  EXPECT_NEAR(out[3], GeluTanhRef(1.0), 1e-6);
  Softcap(x.data(), 4, 30.0f);
  EXPECT_TRUE(std::isnan(x[0]));
  EXPECT_EQ(x[1], 30.0f);
  EXPECT_EQ(x[2], -30.0f);
}

}  // namespace activation_test
}  // namespace gemlet::ops
