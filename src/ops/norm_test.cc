#include "ops/norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/ops_test_util.h"

namespace gemlet::ops {
namespace {

TEST(RmsNormTest, MatchesFormulaWithAndWithoutWeight) {
  const int64_t rows = 3, dim = 96;
  const float eps = 1e-6f;
  auto x = testing::RandomVector(rows * dim, 1, 3.0f);
  auto w = testing::RandomVector(dim, 2);
  std::vector<float> y(rows * dim), y_noscale(rows * dim);
  RmsNorm(x.data(), w.data(), rows, dim, eps, y.data());
  RmsNorm(x.data(), nullptr, rows, dim, eps, y_noscale.data());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ss / dim + eps);
    for (int64_t i = 0; i < dim; ++i) {
      const double base = x[r * dim + i] * inv;
      EXPECT_NEAR(y_noscale[r * dim + i], base, 1e-6 * std::abs(base) + 1e-7);
      // The weight is a plain multiplier (Gemma 4), not 1 + w.
      EXPECT_NEAR(y[r * dim + i], base * w[i], 1e-6 * std::abs(base * w[i]) + 1e-7);
    }
  }
}

TEST(RmsNormTest, EpsIsInsideTheRootAndInPlaceWorks) {
  // All-zero input: 0 · (0 + eps)^−½ = 0, not NaN.
  std::vector<float> z(8, 0.0f);
  RmsNorm(z.data(), nullptr, 1, 8, 1e-6f, z.data());
  for (float v : z) EXPECT_EQ(v, 0.0f);
  // A tiny constant input: eps dominates, y = x / sqrt(x² + eps).
  std::vector<float> t(4, 1e-3f);
  RmsNorm(t.data(), nullptr, 1, 4, 1e-6f, t.data());
  EXPECT_NEAR(t[0], 1e-3 / std::sqrt(1e-6 + 1e-6), 1e-6);
}

}  // namespace
}  // namespace gemlet::ops
