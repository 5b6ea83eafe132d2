// Embedding lookups: rows of a (possibly quantized) table gathered and dequantized to f32.
// Only the requested rows are touched, so a huge memory-mapped table costs one row per token.
#pragma once

#include <cstdint>

#include "ops/weight.h"

namespace gemlet::ops {

// out[i, :] = table row ids[i] as f32 ([n, table.cols]). Every id must be in [0, table.rows)
// (the caller validates token ids; this is checked as an invariant).
void GatherRows(const Weight& table, const int32_t* ids, int64_t n, float* out);

// GatherRows for a table that lives in a read-only, private *file* mapping (never anonymous
// or written memory: the data would be lost). After each row, the pages of the 2 MiB-aligned
// window around it (clipped to the table) are dropped from this process's page tables
// (MADV_DONTNEED; the page cache keeps them, a later read maps them again). The kernel maps
// whole large page-cache folios on a fault, so without this every looked-up row of a 1.3 GB
// per-layer-embedding table would add up to ~1 MiB to the resident set.
void GatherRowsFromFileMapping(const Weight& table, const int32_t* ids, int64_t n, float* out);

}  // namespace gemlet::ops
