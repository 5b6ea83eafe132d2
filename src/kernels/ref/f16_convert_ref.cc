// Scalar twins of the f16 <-> f32 row conversions: base/half.h per element.
#include "base/half.h"
#include "kernels/ref/ref_kernels.h"

namespace gemlet::kernels {

void F16ToF32Ref(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = F16ToF32(x[i]);
}

void F32ToF16Ref(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = F32ToF16(x[i]);
}

}  // namespace gemlet::kernels
