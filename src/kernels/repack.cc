#include "kernels/repack.h"

#include <string>

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

}  // namespace gemlet::kernels
