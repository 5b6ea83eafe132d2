// A read-only view of a 2-D weight matrix [rows, cols] of any TensorType, row-major, as the
// ops see it (the model builds these from the tensors of a mapped .gemlet file).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/tensor_type.h"

namespace gemlet::ops {

struct Weight {
  TensorType type = TensorType::kF32;
  TensorLayout layout = TensorLayout::kRowMajor;
  int64_t rows = 0;        // outputs of a matmul
  int64_t cols = 0;        // inputs of a matmul (a multiple of 32 for quantized types)
  uint64_t row_bytes = 0;  // bytes of one row (RowBytes(type, cols))
  const uint8_t* data = nullptr;

  const uint8_t* row(int64_t r) const { return data + static_cast<uint64_t>(r) * row_bytes; }
  bool valid() const { return data != nullptr && rows > 0 && cols > 0; }
};

// Row r of w as cols floats, whatever its type and layout (row-major, kQ4x8 or kQ8x8).
void DequantizeWeightRow(const Weight& w, int64_t r, float* out);

// Rows [r0, r0 + n) of w as a weight of their own over w's bytes (an interleaved layout's rows
// come in groups of 8: r0 and n are then multiples of 8). Row i of it is row r0 + i of w.
Weight RowRange(const Weight& w, int64_t r0, int64_t n);

// A weight that owns its bytes (GatherWeightRows); `view` points into `bytes`.
struct OwnedWeight {
  std::vector<uint8_t> bytes;
  Weight view;
};

// Rows order[0], order[1], … of w (each < w.rows) as a new row-major weight of w's type
// [order.size(), w.cols], the same values bit for bit. A lookup that reads many scattered
// rows in a known grouping (a sparse head's token clusters) reads them contiguously from it;
// an interleaved (kQ4x8, kQ8x8) source is unpacked one 8-row group at a time, each group once.
OwnedWeight GatherWeightRows(const Weight& w, std::span<const int32_t> order);

}  // namespace gemlet::ops
