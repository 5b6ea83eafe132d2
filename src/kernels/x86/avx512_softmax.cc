// AVX-512 online softmax (kernels.h OnlineSoftmaxFn) for the Tier::kAvx512 table: one zmm holds
// the 16 running sums (lane j takes scores c ≡ j mod 16), SoftmaxExp on 16 lanes with the same
// fused multiply-adds as the scalar twin (kernels/ref/ref_kernels.h), so the results are
// bit-identical to it; a row's tail (n mod 16 scores) and its correction use the scalar code.
// GCC 12 warns that the masked builtins behind _mm512_reduce_max_ps read their
// _mm512_undefined_* pass-through: a known false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/ref/ref_kernels.h"
#include "kernels/x86/x86_kernels.h"

namespace gemlet::kernels::avx512 {

namespace {

// SoftmaxExp of 16 lanes, operation for operation.
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

}  // namespace

void OnlineSoftmax(float* s, int64_t lds, int64_t R, int64_t n, float* m, float* l, float* corr) {
  const int64_t n16 = n / 16 * 16;
  for (int64_t r = 0; r < R; ++r) {
    float* sr = s + r * lds;
    __m512 vmax = _mm512_set1_ps(m[r]);
    for (int64_t c = 0; c < n16; c += 16) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(sr + c));
    float mt = _mm512_reduce_max_ps(vmax);  // (the maximum of finite values, in any order)
    for (int64_t c = n16; c < n; ++c) mt = sr[c] > mt ? sr[c] : mt;
    corr[r] = SoftmaxExp(m[r] - mt);
    m[r] = mt;
    const __m512 vm = _mm512_set1_ps(mt);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t c = 0; c < n16; c += 16) {
      const __m512 p = SoftmaxExp16(_mm512_sub_ps(_mm512_loadu_ps(sr + c), vm));
      _mm512_storeu_ps(sr + c, p);
      acc = _mm512_add_ps(acc, p);
    }
    float a[16];
    _mm512_storeu_ps(a, acc);
    for (int64_t c = n16; c < n; ++c) {
      sr[c] = SoftmaxExp(sr[c] - mt);
      a[c - n16] += sr[c];
    }
    l[r] = l[r] * corr[r] + SumLanes16(a);
  }
}

}  // namespace gemlet::kernels::avx512
