#include "ops/weight.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/status.h"
#include "kernels/ref/quant.h"
#include "kernels/repack.h"

namespace gemlet::ops {

void DequantizeWeightRow(const Weight& w, int64_t r, float* out) {
  switch (w.layout) {  // interleaved: rows in groups of 8
    case TensorLayout::kQ4x8:
      kernels::DequantizeRowQ4x8(reinterpret_cast<const BlockQ4x8*>(w.data), w.cols / kQBlock, r, out, w.cols);
      break;
    case TensorLayout::kQ8x8:
      kernels::DequantizeRowQ8x8(reinterpret_cast<const BlockQ8x8*>(w.data), w.cols / kQBlock, r, out, w.cols);
      break;
    default:
      kernels::DequantizeRowRef(w.type, w.row(r), out, w.cols);
      break;
  }
}

Weight RowRange(const Weight& w, int64_t r0, int64_t n) {
  GEMLET_CHECK(r0 >= 0 && n >= 0 && r0 + n <= w.rows);
  GEMLET_CHECK_MSG(w.layout == TensorLayout::kRowMajor || (r0 % 8 == 0 && n % 8 == 0),
                   "an interleaved weight's row range covers whole groups of 8 rows");
  Weight v = w;
  v.rows = n;
  v.data = w.data + static_cast<uint64_t>(r0) * w.row_bytes;  // (a group is 8 rows' bytes)
  return v;
}

namespace {

// Rows `order` of an interleaved weight w into o (row-major, w.row_bytes apart), unpacking each
// 8-row group once: destinations are visited by source row.
template <typename Block, typename BlockX8>
void GatherInterleaved(const Weight& w, std::span<const int32_t> order,
                       Status (*unpack)(const BlockX8*, int64_t, int64_t, Block*), uint8_t* o) {
  const int64_t n = static_cast<int64_t>(order.size());
  std::vector<std::pair<int32_t, int64_t>> by_src(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) by_src[i] = {order[i], i};
  std::sort(by_src.begin(), by_src.end());
  const int64_t blocks = w.cols / kQBlock;  // per row
  const auto* groups = reinterpret_cast<const BlockX8*>(w.data);
  std::vector<Block> unpacked(static_cast<size_t>(8 * blocks));
  int64_t loaded = -1;
  for (const auto& [src, dst] : by_src) {
    const int64_t g = src / 8;
    if (g != loaded) {
      const Status st = unpack(groups + g * blocks, 8, w.cols, unpacked.data());
      GEMLET_CHECK_MSG(st.ok(), "an interleaved weight unpacks");
      loaded = g;
    }
    std::memcpy(o + dst * w.row_bytes, unpacked.data() + (src % 8) * blocks, w.row_bytes);
  }
}

}  // namespace

OwnedWeight GatherWeightRows(const Weight& w, std::span<const int32_t> order) {
  const int64_t n = static_cast<int64_t>(order.size());
  const uint64_t rb = w.row_bytes;
  OwnedWeight o;
  o.bytes.resize(static_cast<size_t>(n) * rb);
  o.view = w;
  o.view.layout = TensorLayout::kRowMajor;
  o.view.rows = n;
  o.view.data = o.bytes.data();
  for (int32_t r : order) GEMLET_CHECK_MSG(r >= 0 && r < w.rows, "gathered rows are rows of the weight");
  switch (w.layout) {
    case TensorLayout::kQ4x8:
      GatherInterleaved<BlockQ4, BlockQ4x8>(w, order, kernels::UnpackQ4x8, o.bytes.data());
      break;
    case TensorLayout::kQ8x8:
      GatherInterleaved<BlockQ8, BlockQ8x8>(w, order, kernels::UnpackQ8x8, o.bytes.data());
      break;
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(o.bytes.data() + i * rb, w.row(order[i]), rb);
      break;
  }
  return o;
}

}  // namespace gemlet::ops
