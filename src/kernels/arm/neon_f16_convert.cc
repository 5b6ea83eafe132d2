// f16 <-> f32 rows with Armv8.0 FCVTL / FCVTN (vcvt_f32_f16 / vcvt_f16_f32), 4 elements at a
// time. With the default FPCR (round to nearest even, no flush to zero) the hardware gives
// base/half.h's bits except for NaNs (quieted, payload kept on narrowing), so blocks holding
// a NaN are redone in the twin's bits — a rare path, checked with one compare per 4 elements.
#include <arm_neon.h>

#include "base/half.h"
#include "kernels/arm/arm_kernels.h"

namespace gemlet::kernels::neon {

void F16ToF32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t f = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(x + i)));
    if (vmaxvq_u32(vmvnq_u32(vceqq_f32(f, f))) != 0) {
      for (int j = 0; j < 4; ++j) y[i + j] = gemlet::F16ToF32(x[i + j]);
      continue;
    }
    vst1q_f32(y + i, f);
  }
  for (; i < n; ++i) y[i] = gemlet::F16ToF32(x[i]);
}

void F32ToF16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t f = vld1q_f32(x + i);
    if (vmaxvq_u32(vmvnq_u32(vceqq_f32(f, f))) != 0) {
      for (int j = 0; j < 4; ++j) y[i + j] = gemlet::F32ToF16(x[i + j]);
      continue;
    }
    vst1_u16(y + i, vreinterpret_u16_f16(vcvt_f16_f32(f)));
  }
  for (; i < n; ++i) y[i] = gemlet::F32ToF16(x[i]);
}

}  // namespace gemlet::kernels::neon
