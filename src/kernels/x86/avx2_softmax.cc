// AVX2 + FMA online softmax (kernels.h OnlineSoftmaxFn) for the AVX2 and AVX-VNNI tables: two
// ymm hold the 16 running sums (lanes 0-7, 8-15: score c goes to lane c mod 16), SoftmaxExp on
// 8 lanes with the same fused multiply-adds as the scalar twin (kernels/ref/ref_kernels.h), so
// the results are bit-identical to it; a row's tail (n mod 16 scores) and its correction use
// the scalar code.
#include <immintrin.h>

#include "kernels/ref/ref_kernels.h"
#include "kernels/x86/x86_kernels.h"

namespace gemlet::kernels::avx2 {

namespace {

// SoftmaxExp of 8 lanes, operation for operation.
inline __m256 SoftmaxExp8(__m256 x) {
  const __m256 round = _mm256_set1_ps(12582912.0f);
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));  // x > −87 ? x : −87 (NaN → −87)
  const __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), round), round);
  __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-0.693359375f), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

}  // namespace

void OnlineSoftmax(float* s, int64_t lds, int64_t R, int64_t n, float* m, float* l, float* corr) {
  const int64_t n16 = n / 16 * 16;
  for (int64_t r = 0; r < R; ++r) {
    float* sr = s + r * lds;
    __m256 vmax = _mm256_set1_ps(m[r]);
    for (int64_t c = 0; c < n16; c += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(sr + c));
    float mx[8];
    _mm256_storeu_ps(mx, vmax);
    float mt = m[r];  // (the maximum of finite values, in any order)
    for (float v : mx) mt = v > mt ? v : mt;
    for (int64_t c = n16; c < n; ++c) mt = sr[c] > mt ? sr[c] : mt;
    corr[r] = SoftmaxExp(m[r] - mt);
    m[r] = mt;
    const __m256 vm = _mm256_set1_ps(mt);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t c = 0; c < n16; c += 16) {
      const __m256 p0 = SoftmaxExp8(_mm256_sub_ps(_mm256_loadu_ps(sr + c), vm));
      const __m256 p1 = SoftmaxExp8(_mm256_sub_ps(_mm256_loadu_ps(sr + c + 8), vm));
      _mm256_storeu_ps(sr + c, p0);
      _mm256_storeu_ps(sr + c + 8, p1);
      acc0 = _mm256_add_ps(acc0, p0);
      acc1 = _mm256_add_ps(acc1, p1);
    }
    float a[16];
    _mm256_storeu_ps(a, acc0);
    _mm256_storeu_ps(a + 8, acc1);
    for (int64_t c = n16; c < n; ++c) {
      sr[c] = SoftmaxExp(sr[c] - mt);
      a[c - n16] += sr[c];
    }
    l[r] = l[r] * corr[r] + SumLanes16(a);
  }
}

}  // namespace gemlet::kernels::avx2
