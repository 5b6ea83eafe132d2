#include "ops/embedding.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "base/status.h"

namespace gemlet::ops {

void GatherRows(const Weight& table, const int32_t* ids, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    GEMLET_CHECK(ids[i] >= 0 && ids[i] < table.rows);
    DequantizeWeightRow(table, ids[i], out + i * table.cols);
  }
}

void GatherRowsFromFileMapping(const Weight& table, const int32_t* ids, int64_t n, float* out) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  constexpr uintptr_t kWindow = uintptr_t{2} << 20;
  const uintptr_t base = reinterpret_cast<uintptr_t>(table.data);
  const uintptr_t lo = (base + page - 1) & ~(page - 1);  // whole pages inside the table only
  const uintptr_t hi = (base + static_cast<uintptr_t>(table.rows) * table.row_bytes) & ~(page - 1);
  for (int64_t i = 0; i < n; ++i) {
    GatherRows(table, ids + i, 1, out + i * table.cols);
    if (table.layout != TensorLayout::kRowMajor) continue;  // (rows interleaved: not contiguous)
    const uintptr_t r = reinterpret_cast<uintptr_t>(table.row(ids[i]));
    const uintptr_t a = std::max(lo, r & ~(kWindow - 1));
    const uintptr_t b = std::min(hi, (r + table.row_bytes + kWindow - 1) & ~(kWindow - 1));
    if (a < b) ::madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
  }
}

}  // namespace gemlet::ops
