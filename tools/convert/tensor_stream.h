// Streams one source tensor into a GemletWriter as a target type, in chunks of rows: lossless
// targets copy the source bytes; others decode rows to f32 and encode them (f32/f16/bf16
// rounding, or kernels::QuantizeRowQ8Ref / QuantizeRowQ4Ref), rows split over a thread pool.
// After each chunk the source pages are dropped from the mapping (MADV_DONTNEED), so a
// conversion's resident set stays near one chunk whatever the checkpoint size.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/tensor_type.h"
#include "base/thread_pool.h"
#include "format/gemlet_writer.h"
#include "tools/convert/source.h"

namespace gemlet::convert {

// Source bytes per chunk (the f32 staging buffer is bounded by the same amount).
constexpr uint64_t kChunkBytes = 32u << 20;

// Writes `src` as tensor `name` of `shape` (same element count and row length as the source)
// stored as `type`. `on_bytes` is called with the source bytes done after each chunk.
// With `interleave`, a q4 / q8 matrix whose rows come in groups of 8 is stored as
// TensorLayout::kQ4x8 / kQ8x8 for the int8 kernels (InterleavedLayout; same values;
// docs/file-format.md §6); tables that are only gathered row by row (the per-layer
// embeddings, the vision position table) stay row-major so that one row is one contiguous run
// of bytes.
Status StreamTensor(GemletWriter& writer, const std::string& name, const std::vector<int64_t>& shape,
                    const SourceTensor& src, TensorType type, ThreadPool& pool,
                    const std::function<void(uint64_t)>& on_bytes, bool interleave = true);

// The interleaved layout of a [rows, cols] matrix of `type` (kQ4x8 for q4, kQ8x8 for q8, rows
// a multiple of 8), or kRowMajor if it has none.
TensorLayout InterleavedLayout(TensorType type, int64_t rows, int64_t cols);

// Encodes n rows of cols f32 values as `type` (cols a multiple of the block size).
void EncodeRows(const float* x, int64_t n, int64_t cols, TensorType type, uint8_t* out);

// Drops the pages of a read-only file mapping that cover [p, p + n) (advisory; never for
// memory that is not a file mapping).
void DropMappedPages(const uint8_t* p, uint64_t n);

}  // namespace gemlet::convert
