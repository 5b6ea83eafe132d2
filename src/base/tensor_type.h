// Tensor element types (the .gemlet file stores these; docs/file-format.md §4). The quantized types are
// blocks of 32 values along the innermost dimension with an f16 scale, value-identical to
// GGUF Q8_0 and Q4_0.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace gemlet {

enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
  kQ8 = 8,  // BlockQ8: f16 d, 32 × int8 q; x = q·d
  kQ4 = 9,  // BlockQ4: f16 d, 16 bytes; x[j] = (lo(qs[j]) − 8)·d, x[j+16] = (hi(qs[j]) − 8)·d
};

constexpr int kQBlock = 32;  // values per quantized block

#pragma pack(push, 1)
struct BlockQ8 {
  uint16_t d;  // f16 scale
  int8_t qs[kQBlock];
};
struct BlockQ4 {
  uint16_t d;  // f16 scale
  uint8_t qs[kQBlock / 2];
};
#pragma pack(pop)
static_assert(sizeof(BlockQ8) == 34);
static_assert(sizeof(BlockQ4) == 18);

// Storage order of a tensor's blocks (docs/file-format.md §5). The values are the same in
// every layout; only the order of whole blocks differs.
enum class TensorLayout : uint32_t {
  kRowMajor = 0,
  // q4 only, rows a multiple of 8: the rows in groups of 8, each group a row of BlockQ4x8
  // (one per block column). Same bytes as row-major, rearranged for SIMD kernels that put
  // one row per vector lane; kernels/repack.h converts.
  kQ4x8 = 1,
  // q8 only, rows a multiple of 8: the same arrangement with BlockQ8x8.
  kQ8x8 = 2,
};
// "row-major", "q4x8" or "q8x8" (docs/file-format.md §6).
const char* TensorLayoutName(TensorLayout layout);

// The blocks of 8 consecutive rows in one block column: d[i] is row i's scale and
// qs[c * 32 + i * 4 + k] = row i's qs[4c + k] (c < 4 chunks of 4 bytes, i < 8 rows), so
// its low nibble is value 4c + k and its high nibble value 16 + 4c + k of row i's block.
#pragma pack(push, 1)
struct BlockQ4x8 {
  uint16_t d[8];
  uint8_t qs[8 * kQBlock / 2];
};
#pragma pack(pop)
static_assert(sizeof(BlockQ4x8) == 8 * sizeof(BlockQ4));

// The q8 twin of BlockQ4x8: the blocks of 8 consecutive rows in one block column, d[i] row
// i's scale and qs[c * 32 + i * 4 + k] = row i's qs[4c + k] (c < 8 chunks of 4 bytes, i < 8
// rows), i.e. value 4c + k of row i's block. So 32 bytes (one chunk) hold 4 consecutive
// values of each of the 8 rows, row i in bytes 4i..4i+3: one 4-byte dot product (vpdpbusd,
// SDOT) per row and lane, as in BlockQ4x8.
#pragma pack(push, 1)
struct BlockQ8x8 {
  uint16_t d[8];
  int8_t qs[8 * kQBlock];
};
#pragma pack(pop)
static_assert(sizeof(BlockQ8x8) == 8 * sizeof(BlockQ8));

struct TypeTraits {
  const char* name;
  int block_elems;  // values per block (1 for float types)
  int block_bytes;  // bytes per block
};

// nullptr for a value that is not a known TensorType.
const TypeTraits* FindTypeTraits(uint32_t raw_type);
const TypeTraits& GetTypeTraits(TensorType type);
const char* TensorTypeName(TensorType type);
// "f32", "f16", "bf16", "q8", "q4" -> type.
Result<TensorType> ParseTensorType(const std::string& name);
inline bool IsQuantized(TensorType t) { return t == TensorType::kQ8 || t == TensorType::kQ4; }

// Bytes of one row of `cols` values; an error if cols is not a multiple of the block size.
Result<uint64_t> RowBytes(TensorType type, int64_t cols);

}  // namespace gemlet
