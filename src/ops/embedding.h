// Embedding lookups: rows of a (possibly quantized) table gathered and dequantized to f32.
// Only the requested rows are touched, so a huge memory-mapped table costs one row per token.
#pragma once

#include <cstdint>

#include "ops/weight.h"

namespace gemlet::ops {

// out[i, :] = table row ids[i] as f32 ([n, table.cols]). Every id must be in [0, table.rows)
// (the caller validates token ids; this is checked as an invariant).
void GatherRows(const Weight& table, const int32_t* ids, int64_t n, float* out);

}  // namespace gemlet::ops
