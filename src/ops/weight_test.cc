#include "ops/weight.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "ops/ops_test_util.h"

namespace gemlet::ops {
namespace weight_test {

// Row r of w dequantized.
std::vector<float> Row(const Weight& w, int64_t r) {
  std::vector<float> out(w.cols);
  DequantizeWeightRow(w, r, out.data());
  return out;
}

TEST(GatherWeightRows, RowsInTheGivenOrderBitForBit) {
  const int64_t rows = 48, cols = 64;
  std::vector<int32_t> order(rows);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  order.push_back(5);  // a row twice, and a gather longer than the weight
  for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kQ8, TensorType::kQ4}) {
    const testing::OwnedWeight src = testing::MakeWeight(type, rows, cols, 11);
    std::vector<Weight> layouts = {src.w};
    testing::InterleavedWeight interleaved;
    if (IsQuantized(type)) {  // and the same weight stored as kQ4x8 / kQ8x8
      interleaved = testing::Interleave(src);
      layouts.push_back(interleaved.w);
    }
    for (const Weight& w : layouts) {
      const OwnedWeight g = GatherWeightRows(w, order);
      ASSERT_EQ(g.view.rows, static_cast<int64_t>(order.size()));
      EXPECT_EQ(g.view.layout, TensorLayout::kRowMajor);
      EXPECT_EQ(g.view.type, type);
      for (size_t i = 0; i < order.size(); ++i) {
        // The stored bytes of the source row, and so its values.
        EXPECT_EQ(std::memcmp(g.view.row(static_cast<int64_t>(i)), src.w.row(order[i]), src.w.row_bytes), 0)
            << TensorTypeName(type) << " " << TensorLayoutName(w.layout) << " row " << i;
        EXPECT_EQ(Row(g.view, static_cast<int64_t>(i)), Row(w, order[i]));
      }
    }
  }
}

}  // namespace weight_test
}  // namespace gemlet::ops
