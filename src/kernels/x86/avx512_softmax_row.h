// One row of the AVX-512 online softmax (kernels.h OnlineSoftmaxFn), shared by online_softmax
// (avx512_softmax.cc) and online_softmax_bf16 (avx512bf16_kernels.cc), which differ only in
// where the weights go. Bit-identical to the scalar twin (kernels/ref): SoftmaxExp16 is
// SoftmaxExp operation for operation, and lane j sums the weights c ≡ j (mod 16) in order.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/ref/ref_kernels.h"

namespace gemlet::kernels::avx512 {

// SoftmaxExp of 16 lanes.
inline __m512 SoftmaxExp16(__m512 x) {
  const __m512 round = _mm512_set1_ps(12582912.0f);
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));  // x > −87 ? x : −87 (NaN → −87)
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), round), round);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693359375f), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

// Row sr [n] with its running maximum *m, sum *l and correction *corr: the weights go to
// store(c, e, mask), 16 at a time (lanes outside mask: a row's tail, not to be stored).
template <typename Store>
inline void SoftmaxRow(const float* sr, int64_t n, float* m, float* l, float* corr, Store store) {
  const int64_t n16 = n / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((uint32_t{1} << (n - n16)) - 1);
  __m512 vmax = _mm512_set1_ps(*m);
  for (int64_t c = 0; c < n16; c += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(sr + c));
  float mt = _mm512_reduce_max_ps(vmax);  // (the maximum of finite values, in any order)
  for (int64_t c = n16; c < n; ++c) mt = sr[c] > mt ? sr[c] : mt;
  *corr = SoftmaxExp(*m - mt);
  *m = mt;
  const __m512 vm = _mm512_set1_ps(mt);
  __m512 acc = _mm512_setzero_ps();
  for (int64_t c = 0; c < n16; c += 16) {
    const __m512 e = SoftmaxExp16(_mm512_sub_ps(_mm512_loadu_ps(sr + c), vm));
    store(c, e, __mmask16{0xffff});
    acc = _mm512_add_ps(acc, e);
  }
  if (tail != 0) {
    const __m512 e = SoftmaxExp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, sr + n16), vm));
    store(n16, e, tail);
    acc = _mm512_mask_add_ps(acc, tail, acc, e);
  }
  float a[16];
  _mm512_storeu_ps(a, acc);
  *l = *l * *corr + SumLanes16(a);
}

}  // namespace gemlet::kernels::avx512
