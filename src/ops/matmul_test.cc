#include "ops/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/embedding.h"
#include "ops/ops_test_util.h"

namespace gemlet::ops {
namespace {

constexpr TensorType kAllTypes[] = {TensorType::kF32, TensorType::kF16, TensorType::kBF16, TensorType::kQ8,
                                    TensorType::kQ4};

// y = x · W^T against a double-precision reference on the dequantized weights, for every
// storage type, odd row counts and several token counts.
TEST(MatMulTest, MatchesReferenceForEveryType) {
  for (TensorType type : kAllTypes) {
    for (int64_t rows : {1, 7, 33}) {
      for (int64_t T : {1, 3, 40}) {
        const int64_t cols = 96;
        auto w = testing::MakeWeight(type, rows, cols, 10 + rows, 0.1f);
        auto x = testing::RandomVector(T * cols, 20 + T);
        std::vector<float> y(T * rows);
        MatMul(w.w, x.data(), T, y.data(), MatMulMode::kExact, nullptr);
        for (int64_t t = 0; t < T; ++t) {
          for (int64_t r = 0; r < rows; ++r) {
            double ref = 0;
            for (int64_t i = 0; i < cols; ++i) ref += double(w.ref[r * cols + i]) * x[t * cols + i];
            ASSERT_NEAR(y[t * rows + r], ref, 1e-5) << TensorTypeName(type) << " r=" << r << " t=" << t;
          }
        }
      }
    }
  }
}

// Results do not depend on the thread count nor on how tokens are batched: bit-identical.
TEST(MatMulTest, ThreadsAndBatchingAreBitIdentical) {
  ThreadPool pool1(1), pool2(2), pool3(3);
  for (TensorType type : kAllTypes) {
    const int64_t rows = 70, cols = 128, T = 37;
    auto w = testing::MakeWeight(type, rows, cols, 7);
    auto x = testing::RandomVector(T * cols, 8);
    std::vector<float> serial(T * rows), p1(T * rows), p2(T * rows), p3(T * rows), single(T * rows);
    MatMul(w.w, x.data(), T, serial.data(), MatMulMode::kExact, nullptr);
    MatMul(w.w, x.data(), T, p1.data(), MatMulMode::kExact, &pool1);
    MatMul(w.w, x.data(), T, p2.data(), MatMulMode::kExact, &pool2);
    MatMul(w.w, x.data(), T, p3.data(), MatMulMode::kExact, &pool3);
    for (int64_t t = 0; t < T; ++t) {
      MatMul(w.w, x.data() + t * cols, 1, single.data() + t * rows, MatMulMode::kExact, &pool2);
    }
    EXPECT_EQ(serial, p1) << TensorTypeName(type);
    EXPECT_EQ(serial, p2) << TensorTypeName(type);
    EXPECT_EQ(serial, p3) << TensorTypeName(type);
    EXPECT_EQ(serial, single) << TensorTypeName(type);
  }
}

TEST(MatMulTest, DotHandlesTails) {
  for (int64_t n : {0, 1, 7, 8, 9, 31, 33}) {
    auto a = testing::RandomVector(n, 1), b = testing::RandomVector(n, 2);
    double ref = 0;
    for (int64_t i = 0; i < n; ++i) ref += double(a[i]) * b[i];
    EXPECT_NEAR(DotF32(a.data(), b.data(), n), ref, 1e-5) << n;
  }
}

TEST(EmbeddingTest, GatherRowsDequantizesEveryType) {
  for (TensorType type : kAllTypes) {
    const int64_t rows = 10, cols = 64;
    auto w = testing::MakeWeight(type, rows, cols, 3);
    const int32_t ids[4] = {9, 0, 9, 4};
    std::vector<float> out(4 * cols);
    GatherRows(w.w, ids, 4, out.data());
    for (int i = 0; i < 4; ++i) {
      for (int64_t c = 0; c < cols; ++c) ASSERT_EQ(out[i * cols + c], w.ref[ids[i] * cols + c]);
    }
  }
}

// Q4 nibble order matters: element j of a block is the low nibble of byte j, element j+16
// the high nibble (GGUF Q4_0), checked on a hand-made block.
TEST(EmbeddingTest, Q4BlockLayoutByHand) {
  BlockQ4 b;
  b.d = F32ToF16(0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>((j & 15) | ((15 - j) << 4));
  Weight w{TensorType::kQ4, TensorLayout::kRowMajor, 1, 32, sizeof(BlockQ4), reinterpret_cast<uint8_t*>(&b)};
  std::vector<float> out(32);
  const int32_t id = 0;
  GatherRows(w, &id, 1, out.data());
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(out[j], (j - 8) * 0.5f);
    EXPECT_EQ(out[j + 16], (15 - j - 8) * 0.5f);
  }
}

}  // namespace
}  // namespace gemlet::ops
