// The interleaved layouts (TensorLayout::kQ4x8, kQ8x8): every tier's GEMV/GEMM equals its
// scalar twin and the row-major kernels of the same tensor bit for bit, and the repacking
// (kernels/repack.h) round-trips and puts each byte where base/tensor_type.h says.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernels_test_util.h"
#include "kernels/ref/quant.h"
#include "kernels/repack.h"

namespace gemlet::kernels::kernels_test {
namespace {

// One interleaved layout: its blocks, repacking and kernels, and the row-major ones it equals.
template <typename Block, typename BlockX8>
struct Layout {
  const char* name;
  std::vector<Block> (*make)(std::mt19937&, int64_t);
  Status (*repack)(const Block*, int64_t, int64_t, BlockX8*);
  void (*gemv_ref)(const BlockX8*, int64_t, int64_t, int64_t, const ActBlock*, int64_t, float*);
  void (*gemm_ref)(const BlockX8*, int64_t, int64_t, int64_t, const ActBlock*, int64_t, int64_t, int64_t, float*,
                   int64_t);
  void (*gemm_row_major)(const Block*, int64_t, int64_t, int64_t, const ActBlock*, int64_t, int64_t, int64_t,
                         float*, int64_t);
};

const Layout<BlockQ4, BlockQ4x8> kQ4x8{"q4x8", RandomQ4, RepackQ4x8, GemvQ4x8Ref, GemmQ4x8Ref, GemmQ4Ref};
const Layout<BlockQ8, BlockQ8x8> kQ8x8{"q8x8", RandomQ8, RepackQ8x8, GemvQ8x8Ref, GemmQ8x8Ref, GemmQ8Ref};

template <typename Block, typename BlockX8, typename Gemv, typename Gemm, typename RowMajorTier>
void CheckInterleaved(const Layout<Block, BlockX8>& l, Gemv gemv, Gemm gemm, RowMajorTier gemm_rm_tier) {
  std::mt19937 rng(3);
  for (int64_t K : kKs) {
    const int64_t nb = K / 32;
    // Row groups computed: 1, 2, 2, 3, 4, 5, 6, 7, 9 (rows > 16 start at row 8), so every
    // mix of 4-group, 2-group and single-group tiles; T up to 40 crosses the GEMM's token
    // block at the largest K.
    for (int64_t rows : {8, 16, 24, 32, 40, 48, 56, 64, 80}) {
      std::vector<Block> w = l.make(rng, rows * nb);
      std::vector<BlockX8> wx(rows / 8 * nb);
      ASSERT_TRUE(l.repack(w.data(), rows, K, wx.data()).ok());
      for (int64_t T : {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 17, 40}) {
        const std::string what =
            std::string(l.name) + " K=" + std::to_string(K) + " rows=" + std::to_string(rows) + " T=" + std::to_string(T);
        const int64_t r0 = rows > 16 ? 8 : 0, r1 = rows;
        const int64_t xs = nb + 3, ldy = rows + 1;
        std::vector<ActBlock> x = RandomAct(rng, T, K, xs);
        std::vector<float> want(T * ldy, kSentinel), got(T * ldy, kSentinel), rm(T * ldy, kSentinel),
            rm_tier(T * ldy, kSentinel);
        l.gemm_ref(wx.data(), nb, r0, r1, x.data(), xs, T, K, want.data(), ldy);
        gemm(wx.data(), nb, r0, r1, x.data(), xs, T, K, got.data(), ldy);
        l.gemm_row_major(w.data(), nb, r0, r1, x.data(), xs, T, K, rm.data(), ldy);
        gemm_rm_tier(w.data(), nb, r0, r1, x.data(), xs, T, K, rm_tier.data(), ldy);
        ExpectSame(want, got, what + " gemm");
        ExpectSame(rm, want, what + " layouts");  // same values, same results
        ExpectSame(rm_tier, got, what + " this tier's row-major gemm");
        std::vector<float> yv(rows, kSentinel), yr(rows, kSentinel);
        l.gemv_ref(wx.data(), nb, r0, r1, x.data(), K, yr.data());
        gemv(wx.data(), nb, r0, r1, x.data(), K, yv.data());
        ExpectSame(yr, yv, what + " gemv");
        for (int64_t r = r0; r < r1; ++r) ASSERT_TRUE(SameFloat(yv[r], got[r])) << what << " gemv vs gemm row " << r;
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

class InterleavedTest : public ::testing::TestWithParam<KernelCase> {
 protected:
  const KernelTable& k() const { return *GetParam().table; }
};

TEST_P(InterleavedTest, GemvGemmQ4x8MatchTwinAndRowMajor) {
  CheckInterleaved(kQ4x8, k().gemv_q4x8, k().gemm_q4x8, k().gemm_q4);
}

TEST_P(InterleavedTest, GemvGemmQ8x8MatchTwinAndRowMajor) {
  CheckInterleaved(kQ8x8, k().gemv_q8x8, k().gemm_q8x8, k().gemm_q8);
}

// A tensor of several groups computed in thread-sized pieces (r0, r1 multiples of 8), as
// ops/MatMul splits it, equals one call over all rows.
TEST_P(InterleavedTest, Q8x8RowRangesAddUp) {
  std::mt19937 rng(11);
  const int64_t K = 768, nb = K / 32, rows = 96, T = 37;
  std::vector<BlockQ8> w = RandomQ8(rng, rows * nb);
  std::vector<BlockQ8x8> wx(rows / 8 * nb);
  ASSERT_TRUE(RepackQ8x8(w.data(), rows, K, wx.data()).ok());
  std::vector<ActBlock> x = RandomAct(rng, T, K, nb);
  std::vector<float> whole(T * rows, kSentinel), pieces(T * rows, kSentinel);
  k().gemm_q8x8(wx.data(), nb, 0, rows, x.data(), nb, T, K, whole.data(), rows);
  for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, 8}, {8, 40}, {40, 48}, {48, 72}, {72, 96}}) {
    k().gemm_q8x8(wx.data(), nb, r0, r1, x.data(), nb, T, K, pieces.data(), rows);
  }
  ExpectSame(whole, pieces, "q8x8 row ranges");
}

INSTANTIATE_TEST_SUITE_P(AllTiers, InterleavedTest, ::testing::ValuesIn(KernelCases()), CaseName);

// Repack, unpack and the byte positions of base/tensor_type.h for one layout.
template <typename Block, typename BlockX8>
void CheckRepack(const Layout<Block, BlockX8>& l, TensorType type,
                 Status (*unpack)(const BlockX8*, int64_t, int64_t, Block*), bool (*can)(int64_t, int64_t),
                 void (*dequantize)(const BlockX8*, int64_t, int64_t, float*, int64_t)) {
  std::mt19937 rng(7);
  const int64_t rows = 24, K = 96;
  constexpr int kChunks = sizeof(Block::qs) / 4;
  std::vector<Block> w = l.make(rng, rows * K / 32), back(w.size());
  std::vector<BlockX8> wx(w.size() / 8);
  ASSERT_TRUE(l.repack(w.data(), rows, K, wx.data()).ok());
  ASSERT_TRUE(unpack(wx.data(), rows, K, back.data()).ok());
  EXPECT_EQ(std::memcmp(w.data(), back.data(), w.size() * sizeof(Block)), 0);
  // Row 9 (group 1, lane 1), block column 2: its scale and chunk bytes where the layout says.
  const BlockX8& g = wx[1 * (K / 32) + 2];
  EXPECT_EQ(g.d[1], w[9 * 3 + 2].d);
  for (int c = 0; c < kChunks; ++c) {
    for (int b = 0; b < 4; ++b) EXPECT_EQ(g.qs[c * 32 + 4 + b], w[9 * 3 + 2].qs[4 * c + b]) << l.name;
  }
  std::vector<float> a(K), b(K);
  for (int64_t r = 0; r < rows; ++r) {
    DequantizeRowRef(type, &w[r * (K / 32)], a.data(), K);
    dequantize(wx.data(), K / 32, r, b.data(), K);
    ASSERT_EQ(std::memcmp(a.data(), b.data(), K * sizeof(float)), 0) << l.name << " row " << r;
  }
  std::vector<uint8_t> buf;
  const uint8_t* rm = RowMajorBytes(reinterpret_cast<const uint8_t*>(wx.data()), type,
                                    type == TensorType::kQ4 ? TensorLayout::kQ4x8 : TensorLayout::kQ8x8, rows, K, &buf);
  EXPECT_EQ(std::memcmp(rm, w.data(), w.size() * sizeof(Block)), 0) << l.name;
  for (auto [r, k] : {std::pair<int64_t, int64_t>{7, 32}, {8, 31}, {0, 32}, {8, 0}, {-8, 32}}) {
    Status s = l.repack(w.data(), r, k, wx.data());
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << r << "x" << k;
    EXPECT_NE(s.message().find(l.name), std::string::npos);
    EXPECT_FALSE(can(r, k));
    EXPECT_EQ(unpack(wx.data(), r, k, back.data()).code(), ErrorCode::kInvalidArgument) << r << "x" << k;
  }
}

TEST(KernelsReference, RepackRoundTripsAndRejectsBadShapes) {
  CheckRepack(kQ4x8, TensorType::kQ4, UnpackQ4x8, CanRepackQ4x8, DequantizeRowQ4x8);
  CheckRepack(kQ8x8, TensorType::kQ8, UnpackQ8x8, CanRepackQ8x8, DequantizeRowQ8x8);
}

}  // namespace
}  // namespace gemlet::kernels::kernels_test
