// Internal to kernels/x86: the fixed 16-lane tree of kernels.h's float Numerics on a zmm, for
// the AVX-512 float and bf16 kernels (include only from files compiled with AVX-512 flags).
#pragma once

#include <immintrin.h>

namespace gemlet::kernels::avx512 {

// The fixed 16-lane tree of kernels.h: a_l + a_{l+8}, then + a_{l+4}, + a_{l+2}, s_0 + s_1.
inline float Reduce16(__m512 a) {
  const __m256 s = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  b = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(b, _mm_movehdup_ps(b)));
}

// Reduce16 of 16 vectors at once: lane j of the result is Reduce16(a[σ(j)]), σ(4q + p) =
// 4p + q. The same pairs are added at every level of the tree as in Reduce16, 16 vectors
// sharing each shuffle and add, so every lane has Reduce16's bits (addition commutes).
inline __m512 Reduce16x16(const __m512 a[16]) {
  // Level 1, s_l = a_l + a_{l+8}: x[j] holds s of a[2j] in lanes 0..7, of a[2j+1] in 8..15.
  __m512 x[8];
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
    x[j] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * j], a[2 * j + 1], 0x44),
                         _mm512_shuffle_f32x4(a[2 * j], a[2 * j + 1], 0xee));
  }
  // Level 2, b_l = s_l + s_{l+4}: 128-bit chunk q of y[k] holds b of a[4k + q].
  __m512 y[4];
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    y[k] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * k], x[2 * k + 1], 0x88),
                         _mm512_shuffle_f32x4(x[2 * k], x[2 * k + 1], 0xdd));
  }
  // Level 3, c_l = b_l + b_{l+2}: chunk q of z[m] = c_0, c_1 of a[8m + q], then of a[8m + 4 + q].
  __m512 z[2];
#pragma GCC unroll 2
  for (int m = 0; m < 2; ++m) {
    z[m] = _mm512_add_ps(_mm512_shuffle_ps(y[2 * m], y[2 * m + 1], 0x44),
                         _mm512_shuffle_ps(y[2 * m], y[2 * m + 1], 0xee));
  }
  // Level 4, c_0 + c_1: lane p of chunk q holds the sum of a[4p + q].
  return _mm512_add_ps(_mm512_shuffle_ps(z[0], z[1], 0x88), _mm512_shuffle_ps(z[0], z[1], 0xdd));
}

}  // namespace gemlet::kernels::avx512
