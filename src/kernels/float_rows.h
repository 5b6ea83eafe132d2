// Internal to kernels/: where the float kernels find a B row's elements, for every ISA's
// float products (f32, f16/bf16 and, for GemmAccF, q8 rows: kernels.h), and their prefetch
// hint.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "base/tensor_type.h"

namespace gemlet::kernels {

// Bytes per element of a float row (f32, or f16/bf16).
inline int64_t ElemBytes(TensorType t) { return t == TensorType::kF32 ? 4 : 2; }

// Bytes from one row to the next, rows `stride` elements apart (q8: 34 bytes per 32 elements).
template <TensorType T>
inline int64_t RowBytes(int64_t stride) {
  if constexpr (T == TensorType::kQ8) return stride / kQBlock * static_cast<int64_t>(sizeof(BlockQ8));
  return stride * ElemBytes(T);
}

// The float kernels' prefetch hint (kernels.h): brings into L2 the cache line at byte `off` of
// the row `ahead` bytes after `row`. The address is computed as an integer: it may lie past
// the rows (a prefetch never faults).
inline void PrefetchAhead(const void* row, int64_t ahead, int64_t off) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(row) + ahead + off), 0, 2);
}

// q8 rows: the hint for the block of element d (34 bytes, which may straddle two lines).
inline void PrefetchBlockAhead(const void* row, int64_t ahead, int64_t d) {
  const int64_t off = d / kQBlock * static_cast<int64_t>(sizeof(BlockQ8));
  PrefetchAhead(row, ahead, off);
  PrefetchAhead(row, ahead, off + static_cast<int64_t>(sizeof(BlockQ8)) - 1);
}

// The B rows GemmAccF takes (kernels.h): f32, f16, or q8 in whole blocks.
inline void CheckAccRows(TensorType bt, int64_t b_stride, int64_t D) {
  GEMLET_CHECK(bt == TensorType::kF32 || bt == TensorType::kF16 || bt == TensorType::kQ8);
  GEMLET_CHECK_MSG(bt != TensorType::kQ8 || (b_stride % kQBlock == 0 && D % kQBlock == 0),
                   "q8 rows of B are whole blocks");
}

}  // namespace gemlet::kernels
