#include "ops/embedding.h"

#include <algorithm>

#include "base/mapped_file.h"
#include "base/status.h"

namespace gemlet::ops {

void GatherRows(const Weight& table, const int32_t* ids, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    GEMLET_CHECK(ids[i] >= 0 && ids[i] < table.rows);
    DequantizeWeightRow(table, ids[i], out + i * table.cols);
  }
}

void GatherRowsFromFileMapping(const Weight& table, const int32_t* ids, int64_t n, float* out) {
  constexpr uintptr_t kWindow = uintptr_t{2} << 20;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(table.data);
  const uintptr_t hi = lo + static_cast<uintptr_t>(table.rows) * table.row_bytes;
  for (int64_t i = 0; i < n; ++i) {
    GatherRows(table, ids + i, 1, out + i * table.cols);
    if (table.layout != TensorLayout::kRowMajor) continue;  // (rows interleaved: not contiguous)
    // The row's 2 MiB-aligned window, clipped to the table (whole pages inside it only).
    const uintptr_t r = reinterpret_cast<uintptr_t>(table.row(ids[i]));
    const uintptr_t a = std::max(lo, r & ~(kWindow - 1));
    const uintptr_t b = std::min(hi, (r + table.row_bytes + kWindow - 1) & ~(kWindow - 1));
    if (a < b) DropResidentPages(reinterpret_cast<const void*>(a), b - a);
  }
}

}  // namespace gemlet::ops
