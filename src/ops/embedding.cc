#include "ops/embedding.h"

#include "base/status.h"
#include "kernels/ref/quant.h"

namespace gemlet::ops {

void GatherRows(const Weight& table, const int32_t* ids, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    GEMLET_CHECK(ids[i] >= 0 && ids[i] < table.rows);
    kernels::DequantizeRowRef(table.type, table.row(ids[i]), out + i * table.cols, table.cols);
  }
}

}  // namespace gemlet::ops
