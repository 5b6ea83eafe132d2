// f16 <-> f32 rows with F16C (vcvtph2ps / vcvtps2ph), 8 elements at a time; compiled with
// -mavx2 -mfma -mf16c (the "avx2" file rule in src/kernels/CMakeLists.txt). The hardware
// rounds to nearest even like base/half.h; only NaNs differ (the hardware quiets a signalling
// NaN and keeps the payload on narrowing), so blocks holding a NaN are redone in the twin's
// bits — a rare path, checked with one compare per 8 elements.
#include <immintrin.h>

#include "base/half.h"
#include "kernels/x86/x86_kernels.h"

namespace gemlet::kernels::avx2 {

void F16ToF32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    const __m256 f = _mm256_cvtph_ps(h);
    if (_mm256_movemask_ps(_mm256_cmp_ps(f, f, _CMP_UNORD_Q)) != 0) {
      for (int j = 0; j < 8; ++j) y[i + j] = gemlet::F16ToF32(x[i + j]);
      continue;
    }
    _mm256_storeu_ps(y + i, f);
  }
  for (; i < n; ++i) y[i] = gemlet::F16ToF32(x[i]);
}

void F32ToF16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 f = _mm256_loadu_ps(x + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(f, f, _CMP_UNORD_Q)) != 0) {
      for (int j = 0; j < 8; ++j) y[i + j] = gemlet::F32ToF16(x[i + j]);
      continue;
    }
    const __m128i h = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  for (; i < n; ++i) y[i] = gemlet::F32ToF16(x[i]);
}

}  // namespace gemlet::kernels::avx2
