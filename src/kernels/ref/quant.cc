#include "kernels/ref/quant.h"

#include <cmath>
#include <cstring>

#include "base/half.h"

namespace gemlet::kernels {

void QuantizeRowQ8Ref(const float* x, BlockQ8* y, int64_t n) {
  for (int64_t b = 0; b < n / kQBlock; ++b) {
    const float* xb = x + b * kQBlock;
    float amax = 0.0f;
    for (int j = 0; j < kQBlock; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = F32ToF16(d);
    for (int j = 0; j < kQBlock; ++j) {
      const float v = xb[j] * id;  // NaN (a NaN or infinite weight) → 0: converting NaN is undefined
      y[b].qs[j] = static_cast<int8_t>(v == v ? std::roundf(v) : 0.0f);
    }
  }
}

void QuantizeRowQ4Ref(const float* x, BlockQ4* y, int64_t n) {
  for (int64_t b = 0; b < n / kQBlock; ++b) {
    const float* xb = x + b * kQBlock;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQBlock; ++j) {
      if (amax < std::fabs(xb[j])) {
        amax = std::fabs(xb[j]);
        max = xb[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = F32ToF16(d);
    for (int j = 0; j < kQBlock / 2; ++j) {
      float x0 = xb[j] * id, x1 = xb[j + kQBlock / 2] * id;
      x0 = x0 == x0 ? x0 : 0.0f;  // NaN (a NaN or infinite weight) → 0: converting NaN is undefined
      x1 = x1 == x1 ? x1 : 0.0f;
      int q0 = static_cast<int>(static_cast<int8_t>(x0 + 8.5f));
      int q1 = static_cast<int>(static_cast<int8_t>(x1 + 8.5f));
      q0 = q0 > 15 ? 15 : q0;
      q1 = q1 > 15 ? 15 : q1;
      y[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void DequantizeRowRef(TensorType type, const void* src, float* dst, int64_t n) {
  switch (type) {
    case TensorType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    // 16-bit sources may be unaligned (a safetensors data section starts wherever its header
    // ends): read them byte-wise.
    case TensorType::kF16: {
      const uint8_t* s = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, s + 2 * i, 2);
        dst[i] = F16ToF32(h);
      }
      return;
    }
    case TensorType::kBF16: {
      const uint8_t* s = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, s + 2 * i, 2);
        dst[i] = Bf16ToF32(h);
      }
      return;
    }
    case TensorType::kQ8: {
      const BlockQ8* s = static_cast<const BlockQ8*>(src);
      for (int64_t b = 0; b < n / kQBlock; ++b) {
        const float d = F16ToF32(s[b].d);
        for (int j = 0; j < kQBlock; ++j) dst[b * kQBlock + j] = s[b].qs[j] * d;
      }
      return;
    }
    case TensorType::kQ4: {
      const BlockQ4* s = static_cast<const BlockQ4*>(src);
      for (int64_t b = 0; b < n / kQBlock; ++b) {
        const float d = F16ToF32(s[b].d);
        for (int j = 0; j < kQBlock / 2; ++j) {
          dst[b * kQBlock + j] = (static_cast<int>(s[b].qs[j] & 0x0f) - 8) * d;
          dst[b * kQBlock + j + kQBlock / 2] = (static_cast<int>(s[b].qs[j] >> 4) - 8) * d;
        }
      }
      return;
    }
  }
}

}  // namespace gemlet::kernels
