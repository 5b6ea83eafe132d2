#include "kernels/repack.h"

#include <string>

#include "base/half.h"

namespace gemlet::kernels {

namespace {

// Runs `convert` if a [rows, K] tensor has the interleaved layouts' shape (the same for q4x8
// and q8x8), else names `layout` in the error.
template <typename Convert>
Status Checked(const char* layout, int64_t rows, int64_t K, Convert convert) {
  if (!CanRepackQ4x8(rows, K)) {
    return InvalidArgument(std::string(layout) + " layout needs rows a multiple of 8 and K a multiple of 32, got [" +
                           std::to_string(rows) + ", " + std::to_string(K) + "]");
  }
  convert();
  return Status::Ok();
}

// The interleaving of base/tensor_type.h, for q4 and q8 alike: byte 4c + k of row i's qs is
// byte c * 32 + i * 4 + k of its group's (c < the block's qs bytes / 4).
template <typename Block, typename BlockX8>
void Interleave(const Block* src, int64_t rows, int64_t nb, BlockX8* dst) {
  constexpr int kChunks = sizeof(Block::qs) / 4;
  for (int64_t g = 0; g < rows / 8; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      BlockX8& o = dst[g * nb + b];
      for (int i = 0; i < 8; ++i) {
        const Block& in = src[(g * 8 + i) * nb + b];
        o.d[i] = in.d;
        for (int c = 0; c < kChunks; ++c) {
          for (int k = 0; k < 4; ++k) o.qs[c * 32 + i * 4 + k] = in.qs[4 * c + k];
        }
      }
    }
  }
}

template <typename Block, typename BlockX8>
void Deinterleave(const BlockX8* src, int64_t rows, int64_t nb, Block* dst) {
  constexpr int kChunks = sizeof(Block::qs) / 4;
  for (int64_t g = 0; g < rows / 8; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      const BlockX8& in = src[g * nb + b];
      for (int i = 0; i < 8; ++i) {
        Block& o = dst[(g * 8 + i) * nb + b];
        o.d = in.d[i];
        for (int c = 0; c < kChunks; ++c) {
          for (int k = 0; k < 4; ++k) o.qs[4 * c + k] = in.qs[c * 32 + i * 4 + k];
        }
      }
    }
  }
}

}  // namespace

bool CanRepackQ4x8(int64_t rows, int64_t K) {
  return rows > 0 && K > 0 && rows % 8 == 0 && K % kQBlock == 0;
}
bool CanRepackQ8x8(int64_t rows, int64_t K) { return CanRepackQ4x8(rows, K); }

Status RepackQ4x8(const BlockQ4* src, int64_t rows, int64_t K, BlockQ4x8* dst) {
  return Checked("q4x8", rows, K, [&] { Interleave(src, rows, K / kQBlock, dst); });
}
Status UnpackQ4x8(const BlockQ4x8* src, int64_t rows, int64_t K, BlockQ4* dst) {
  return Checked("q4x8", rows, K, [&] { Deinterleave(src, rows, K / kQBlock, dst); });
}
Status RepackQ8x8(const BlockQ8* src, int64_t rows, int64_t K, BlockQ8x8* dst) {
  return Checked("q8x8", rows, K, [&] { Interleave(src, rows, K / kQBlock, dst); });
}
Status UnpackQ8x8(const BlockQ8x8* src, int64_t rows, int64_t K, BlockQ8* dst) {
  return Checked("q8x8", rows, K, [&] { Deinterleave(src, rows, K / kQBlock, dst); });
}

void DequantizeRowQ4x8(const BlockQ4x8* w, int64_t gs, int64_t row, float* out, int64_t K) {
  const BlockQ4x8* g = w + (row / 8) * gs;
  const int i = static_cast<int>(row % 8);
  for (int64_t b = 0; b < K / kQBlock; ++b) {
    const float d = F16ToF32(g[b].d[i]);
    float* o = out + b * kQBlock;
    for (int c = 0; c < 4; ++c) {
      for (int k = 0; k < 4; ++k) {
        const uint8_t byte = g[b].qs[c * 32 + i * 4 + k];
        o[4 * c + k] = (static_cast<int>(byte & 0x0f) - 8) * d;
        o[16 + 4 * c + k] = (static_cast<int>(byte >> 4) - 8) * d;
      }
    }
  }
}

void DequantizeRowQ8x8(const BlockQ8x8* w, int64_t gs, int64_t row, float* out, int64_t K) {
  const BlockQ8x8* g = w + (row / 8) * gs;
  const int i = static_cast<int>(row % 8);
  for (int64_t b = 0; b < K / kQBlock; ++b) {
    const float d = F16ToF32(g[b].d[i]);
    float* o = out + b * kQBlock;
    for (int c = 0; c < 8; ++c) {
      for (int k = 0; k < 4; ++k) o[4 * c + k] = g[b].qs[c * 32 + i * 4 + k] * d;
    }
  }
}

const uint8_t* RowMajorBytes(const uint8_t* data, TensorType type, TensorLayout layout, int64_t rows,
                             int64_t K, std::vector<uint8_t>* buf) {
  switch (layout) {
    case TensorLayout::kQ4x8:
      GEMLET_CHECK(type == TensorType::kQ4 && CanRepackQ4x8(rows, K));
      buf->resize(static_cast<size_t>(rows * (K / kQBlock)) * sizeof(BlockQ4));
      GEMLET_CHECK(UnpackQ4x8(reinterpret_cast<const BlockQ4x8*>(data), rows, K,
                              reinterpret_cast<BlockQ4*>(buf->data()))
                       .ok());
      return buf->data();
    case TensorLayout::kQ8x8:
      GEMLET_CHECK(type == TensorType::kQ8 && CanRepackQ8x8(rows, K));
      buf->resize(static_cast<size_t>(rows * (K / kQBlock)) * sizeof(BlockQ8));
      GEMLET_CHECK(UnpackQ8x8(reinterpret_cast<const BlockQ8x8*>(data), rows, K,
                              reinterpret_cast<BlockQ8*>(buf->data()))
                       .ok());
      return buf->data();
    default:
      return data;
  }
}

}  // namespace gemlet::kernels
