#include "kernels/repack.h"

#include <string>

#include "base/half.h"

namespace gemlet::kernels {

namespace {
Status ShapeError(int64_t rows, int64_t K) {
  return InvalidArgument("q4x8 layout needs rows a multiple of 8 and K a multiple of 32, got [" +
                         std::to_string(rows) + ", " + std::to_string(K) + "]");
}
}  // namespace

bool CanRepackQ4x8(int64_t rows, int64_t K) {
  return rows > 0 && K > 0 && rows % 8 == 0 && K % kQBlock == 0;
}

Status RepackQ4x8(const BlockQ4* src, int64_t rows, int64_t K, BlockQ4x8* dst) {
  if (!CanRepackQ4x8(rows, K)) return ShapeError(rows, K);
  const int64_t nb = K / kQBlock;
  for (int64_t g = 0; g < rows / 8; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ4x8& o = dst[g * nb + b];
      for (int i = 0; i < 8; ++i) {
        const BlockQ4& in = src[(g * 8 + i) * nb + b];
        o.d[i] = in.d;
        for (int c = 0; c < 4; ++c) {
          for (int k = 0; k < 4; ++k) o.qs[c * 32 + i * 4 + k] = in.qs[4 * c + k];
        }
      }
    }
  }
  return Status::Ok();
}

Status UnpackQ4x8(const BlockQ4x8* src, int64_t rows, int64_t K, BlockQ4* dst) {
  if (!CanRepackQ4x8(rows, K)) return ShapeError(rows, K);
  const int64_t nb = K / kQBlock;
  for (int64_t g = 0; g < rows / 8; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ4x8& in = src[g * nb + b];
      for (int i = 0; i < 8; ++i) {
        BlockQ4& o = dst[(g * 8 + i) * nb + b];
        o.d = in.d[i];
        for (int c = 0; c < 4; ++c) {
          for (int k = 0; k < 4; ++k) o.qs[4 * c + k] = in.qs[c * 32 + i * 4 + k];
        }
      }
    }
  }
  return Status::Ok();
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

const uint8_t* RowMajorBytes(const uint8_t* data, TensorType type, TensorLayout layout, int64_t rows,
                             int64_t K, std::vector<uint8_t>* buf) {
  if (layout != TensorLayout::kQ4x8) return data;
  GEMLET_CHECK(type == TensorType::kQ4 && CanRepackQ4x8(rows, K));
  buf->resize(static_cast<size_t>(rows * (K / kQBlock)) * sizeof(BlockQ4));
  GEMLET_CHECK(UnpackQ4x8(reinterpret_cast<const BlockQ4x8*>(data), rows, K, reinterpret_cast<BlockQ4*>(buf->data()))
                   .ok());
  return buf->data();
}

}  // namespace gemlet::kernels
