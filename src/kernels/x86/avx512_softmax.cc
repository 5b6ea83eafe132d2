// AVX-512 online softmax (kernels.h OnlineSoftmaxFn) for the Tier::kAvx512 table: one zmm holds
// the 16 running sums (lane j takes scores c ≡ j mod 16), SoftmaxExp on 16 lanes with the same
// fused multiply-adds as the scalar twin (kernels/ref/ref_kernels.h), so the results are
// bit-identical to it; a row's tail (n mod 16 scores) runs masked on the same lanes
// (avx512_softmax_row.h).
// GCC 12 warns that the masked builtins behind _mm512_reduce_max_ps read their
// _mm512_undefined_* pass-through: a known false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/x86/avx512_softmax_row.h"
#include "kernels/x86/x86_kernels.h"

namespace gemlet::kernels::avx512 {

void OnlineSoftmax(float* s, int64_t lds, int64_t R, int64_t n, float* m, float* l, float* corr) {
  for (int64_t r = 0; r < R; ++r) {
    float* sr = s + r * lds;
    SoftmaxRow(sr, n, m + r, l + r, corr + r,
               [sr](int64_t c, __m512 e, __mmask16 k) { _mm512_mask_storeu_ps(sr + c, k, e); });
  }
}

}  // namespace gemlet::kernels::avx512
