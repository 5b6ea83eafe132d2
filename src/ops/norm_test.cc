#include "ops/norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ops/activation.h"
#include "ops/ops_test_util.h"

namespace gemlet::ops {
namespace norm_test {

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
      // The weight is a plain multiplier, not 1 + w.
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

// Many rows at once (their sums of squares accumulated side by side), in place or not, give
// exactly the bits of one row at a time.
TEST(RmsNormTest, RowsTogetherEqualRowsAlone) {
  for (int64_t dim : {1, 7, 64, 768}) {
    for (int64_t rows : {1, 2, 3, 4, 5, 8, 9}) {
      auto x = testing::RandomVector(rows * dim, 3, 2.0f);
      auto w = testing::RandomVector(dim, 4);
      std::vector<float> alone(rows * dim), together(rows * dim), in_place = x;
      for (int64_t r = 0; r < rows; ++r) RmsNorm(x.data() + r * dim, w.data(), 1, dim, 1e-6f, alone.data() + r * dim);
      RmsNorm(x.data(), w.data(), rows, dim, 1e-6f, together.data());
      RmsNorm(in_place.data(), w.data(), rows, dim, 1e-6f, in_place.data());
      // The one-row calls above take the plain path: their bits are those of the sequential sum.
      for (int64_t r = 0; r < rows; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(x[r * dim + i]) * x[r * dim + i];
        const double scale = 1.0 / std::sqrt(ss / static_cast<double>(dim) + static_cast<double>(1e-6f));
        for (int64_t i = 0; i < dim; ++i) {
          ASSERT_EQ(alone[r * dim + i], static_cast<float>(x[r * dim + i] * scale) * w[i]) << dim << "x" << rows;
        }
      }
      EXPECT_EQ(0, std::memcmp(alone.data(), together.data(), alone.size() * 4)) << dim << "x" << rows;
      EXPECT_EQ(0, std::memcmp(alone.data(), in_place.data(), alone.size() * 4)) << dim << "x" << rows;
    }
  }
}

// The fused pre-norm writes RmsNorm's rows and, when asked, the kernel table's int8 blocks of
// each, the same bits serial and threaded; without a block buffer it only normalizes.
TEST(RmsNormQuantizeTest, EqualsRmsNormThenQuantize) {
  ThreadPool pool2(2), pool3(3);
  const int64_t dim = 160, nb = dim / kQBlock;
  const kernels::KernelTable& k = kernels::ActiveKernels();
  auto w = testing::RandomVector(dim, 9);
  for (int64_t rows : {1, 5, 16, 45}) {
    auto x = testing::RandomVector(rows * dim, 10 + rows, 4.0f);
    std::vector<float> want(rows * dim);
    std::vector<kernels::ActBlock> want_q(rows * nb);
    RmsNorm(x.data(), w.data(), rows, dim, 1e-6f, want.data());
    for (int64_t r = 0; r < rows; ++r) k.quantize_act(want.data() + r * dim, want_q.data() + r * nb, dim);
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool2, &pool3}) {
      std::vector<float> a(rows * dim, -1.0f);
      std::vector<kernels::ActBlock> q(rows * nb);
      const MatMulInput in = RmsNormQuantize(x.data(), w.data(), rows, dim, 1e-6f, a.data(), q.data(), p);
      EXPECT_EQ(in.x, a.data());
      EXPECT_EQ(in.xq, q.data());
      EXPECT_EQ(a, want) << rows;
      ASSERT_EQ(std::memcmp(q.data(), want_q.data(), q.size() * sizeof(kernels::ActBlock)), 0) << rows;
      std::vector<float> a2(rows * dim);
      const MatMulInput plain = RmsNormQuantize(x.data(), w.data(), rows, dim, 1e-6f, a2.data(), nullptr, p);
      EXPECT_EQ(plain.xq, nullptr);
      EXPECT_EQ(a2, want) << rows;
    }
  }
}

// The fused residual add equals RmsNorm(d), AddInPlace and Scale bit for bit, with and
// without a scale, serial and threaded.
TEST(AddRmsNormTest, EqualsNormAddScale) {
  ThreadPool pool(2);
  const int64_t dim = 96;
  auto w = testing::RandomVector(dim, 5);
  for (int64_t rows : {1, 3, 33}) {
    for (float scale : {1.0f, 0.37f}) {
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        auto x = testing::RandomVector(rows * dim, 6 + rows);
        auto d = testing::RandomVector(rows * dim, 7 + rows, 2.0f);
        std::vector<float> wx = x, wd = d;
        RmsNorm(wd.data(), w.data(), rows, dim, 1e-6f, wd.data());
        AddInPlace(wx.data(), wd.data(), rows * dim);
        Scale(wx.data(), rows * dim, scale);
        AddRmsNorm(x.data(), d.data(), w.data(), rows, dim, 1e-6f, scale, p);
        EXPECT_EQ(x, wx) << rows << " " << scale;
        EXPECT_EQ(d, wd) << rows << " " << scale;
      }
    }
  }
}

}  // namespace norm_test
}  // namespace gemlet::ops
