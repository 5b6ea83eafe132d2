// Conversion between row-major q4 / q8 blocks and the interleaved TensorLayout::kQ4x8 /
// kQ8x8 (base/tensor_type.h). Only the arrangement of bytes changes; values are identical, and
// Unpack(Repack(w)) == w. The converter calls RepackQ4x8 / RepackQ8x8 at conversion time.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "base/tensor_type.h"

namespace gemlet::kernels {

// True if a [rows, K] q4 (q8) tensor can be stored as kQ4x8 (kQ8x8): rows a positive
// multiple of 8, K a positive multiple of 32. The same condition for both.
bool CanRepackQ4x8(int64_t rows, int64_t K);
bool CanRepackQ8x8(int64_t rows, int64_t K);

// src: [rows, K] row-major BlockQ4 (rows * K/32 blocks). dst: rows/8 groups of K/32
// BlockQ4x8 (same byte count). InvalidArgument if !CanRepackQ4x8(rows, K).
Status RepackQ4x8(const BlockQ4* src, int64_t rows, int64_t K, BlockQ4x8* dst);
// The inverse.
Status UnpackQ4x8(const BlockQ4x8* src, int64_t rows, int64_t K, BlockQ4* dst);
// The same for q8: [rows, K] BlockQ8 <-> rows/8 groups of K/32 BlockQ8x8.
Status RepackQ8x8(const BlockQ8* src, int64_t rows, int64_t K, BlockQ8x8* dst);
Status UnpackQ8x8(const BlockQ8x8* src, int64_t rows, int64_t K, BlockQ8* dst);

// The bytes of a [rows, K] tensor of `type` in row-major order whatever its layout: `data`
// itself for kRowMajor, else the blocks unpacked into *buf (for tests and tools that compare
// stored bytes; the kernels read kQ4x8 / kQ8x8 directly).
const uint8_t* RowMajorBytes(const uint8_t* data, TensorType type, TensorLayout layout, int64_t rows,
                             int64_t K, std::vector<uint8_t>* buf);

// Row `row` of a kQ4x8 (kQ8x8) tensor as K floats (e.g. an embedding lookup in a tied table);
// groups are group_stride_blocks blocks apart (K/32 for a whole tensor). Equals
// DequantizeRowRef(kQ4 / kQ8, …) of the same row stored row-major.
void DequantizeRowQ4x8(const BlockQ4x8* w, int64_t group_stride_blocks, int64_t row, float* out,
                       int64_t K);
void DequantizeRowQ8x8(const BlockQ8x8* w, int64_t group_stride_blocks, int64_t row, float* out,
                       int64_t K);

}  // namespace gemlet::kernels
