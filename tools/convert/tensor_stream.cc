#include "tools/convert/tensor_stream.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/half.h"
#include "base/mapped_file.h"
#include "kernels/ref/quant.h"
#include "kernels/repack.h"

namespace gemlet::convert {

void DropMappedPages(const uint8_t* p, uint64_t n) {
  if (!p || n == 0) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t start = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n + page - 1) & ~(page - 1);
  DropResidentPages(reinterpret_cast<const void*>(start), end - start);  // (whole pages already)
}

void EncodeRows(const float* x, int64_t n, int64_t cols, TensorType type, uint8_t* out) {
  const uint64_t rb = RowBytes(type, cols).value();
  for (int64_t r = 0; r < n; ++r) {
    const float* xr = x + r * cols;
    uint8_t* o = out + static_cast<uint64_t>(r) * rb;
    switch (type) {
      case TensorType::kF32:
        std::memcpy(o, xr, static_cast<size_t>(cols) * 4);
        break;
      case TensorType::kF16:
        for (int64_t i = 0; i < cols; ++i) {
          const uint16_t h = F32ToF16(xr[i]);
          std::memcpy(o + 2 * i, &h, 2);
        }
        break;
      case TensorType::kBF16:
        for (int64_t i = 0; i < cols; ++i) {
          const uint16_t h = F32ToBf16(xr[i]);
          std::memcpy(o + 2 * i, &h, 2);
        }
        break;
      case TensorType::kQ8:
        kernels::QuantizeRowQ8Ref(xr, reinterpret_cast<BlockQ8*>(o), cols);
        break;
      case TensorType::kQ4:
        kernels::QuantizeRowQ4Ref(xr, reinterpret_cast<BlockQ4*>(o), cols);
        break;
    }
  }
}

TensorLayout InterleavedLayout(TensorType type, int64_t rows, int64_t cols) {
  if (type == TensorType::kQ4 && kernels::CanRepackQ4x8(rows, cols)) return TensorLayout::kQ4x8;
  if (type == TensorType::kQ8 && kernels::CanRepackQ8x8(rows, cols)) return TensorLayout::kQ8x8;
  return TensorLayout::kRowMajor;
}

Status StreamTensor(GemletWriter& writer, const std::string& name, const std::vector<int64_t>& shape,
                    const SourceTensor& src, TensorType type, ThreadPool& pool,
                    const std::function<void(uint64_t)>& on_bytes, bool interleave) {
  const int64_t cols = src.cols(), rows = src.rows();
  const int64_t shape_cols = shape.empty() ? 1 : shape.back();
  int64_t shape_numel = 1;
  for (int64_t d : shape) shape_numel *= d;
  GEMLET_CHECK_MSG(shape_cols == cols && shape_numel == rows * cols, "stored shape matches the source");
  auto dst_rb = RowBytes(type, cols);
  if (!dst_rb.ok()) {
    return InvalidArgument(
        "tensor " + name + " " + ShapeString(shape) + " cannot be stored as " + TensorTypeName(type) +
        ": its rows of " + std::to_string(cols) +
        " values are not a multiple of the 32-value block (choose another --type for its class)");
  }
  // q4 / q8 matrices whose rows come in groups of 8 are stored interleaved (q4x8 / q8x8) for
  // the int8 kernels (kernels/repack.h): the same blocks in another order, chunk by chunk
  // (chunks are whole groups of 8 rows, so the result equals repacking the whole tensor).
  const TensorLayout layout =
      interleave && shape.size() >= 2 ? InterleavedLayout(type, rows, cols) : TensorLayout::kRowMajor;
  const bool repack = layout != TensorLayout::kRowMajor;
  RETURN_IF_ERROR(writer.BeginTensor(name, type, shape, layout));
  const uint64_t src_rb = src.row_bytes();
  const bool lossless = LosslessType(src.type) == type;
  const uint64_t per_row = std::max<uint64_t>({src_rb, static_cast<uint64_t>(cols) * 4, 1});
  int64_t chunk_rows = std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / per_row));
  if (repack) chunk_rows = std::max<int64_t>(8, chunk_rows / 8 * 8);
  std::vector<uint8_t> packed;
  if (repack) packed.resize(static_cast<size_t>(std::min(chunk_rows, rows)) * *dst_rb);
  // Appends n rows of `type` (repacked if interleaved) to the tensor.
  auto append = [&](const uint8_t* rows_data, int64_t n) -> Status {
    const uint64_t bytes = static_cast<uint64_t>(n) * *dst_rb;
    if (!repack) return writer.AppendTensorData(rows_data, bytes);
    if (layout == TensorLayout::kQ4x8) {
      RETURN_IF_ERROR(kernels::RepackQ4x8(reinterpret_cast<const BlockQ4*>(rows_data), n, cols,
                                          reinterpret_cast<BlockQ4x8*>(packed.data())));
    } else {
      RETURN_IF_ERROR(kernels::RepackQ8x8(reinterpret_cast<const BlockQ8*>(rows_data), n, cols,
                                          reinterpret_cast<BlockQ8x8*>(packed.data())));
    }
    return writer.AppendTensorData(packed.data(), bytes);
  };
  std::vector<float> f32;
  std::vector<uint8_t> out;
  if (!lossless) {
    f32.resize(static_cast<size_t>(std::min(chunk_rows, rows) * cols));
    out.resize(static_cast<size_t>(std::min(chunk_rows, rows)) * *dst_rb);
  }
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1));
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const int64_t n = std::min(chunk_rows, rows - r0);
    const uint8_t* s = src.data + static_cast<uint64_t>(r0) * src_rb;
    const uint64_t s_bytes = static_cast<uint64_t>(n) * src_rb;
    if (lossless) {
      RETURN_IF_ERROR(append(s, n));
    } else {
      const uint64_t rb = *dst_rb;
      pool.ParallelFor(
          n,
          [&](int64_t b, int64_t e) {
            DecodeRows(src, r0 + b, e - b, f32.data() + b * cols);
            EncodeRows(f32.data() + b * cols, e - b, cols, type, out.data() + static_cast<uint64_t>(b) * rb);
          },
          grain);
      RETURN_IF_ERROR(append(out.data(), n));
    }
    if (src.mapped) DropMappedPages(s, s_bytes);
    if (on_bytes) on_bytes(s_bytes);
  }
  return writer.EndTensor();
}

}  // namespace gemlet::convert
