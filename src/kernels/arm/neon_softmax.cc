// NEON online softmax (kernels.h OnlineSoftmaxFn) for every Arm64 table: four q registers hold
// the 16 running sums (score c goes to lane c mod 16), SoftmaxExp on 4 lanes with the same fused
// multiply-adds as the scalar twin (kernels/ref/ref_kernels.h), so the results are
// bit-identical to it; a row's tail (n mod 16 scores) and its correction use the scalar code.
#include <arm_neon.h>

#include "kernels/arm/arm_kernels.h"
#include "kernels/ref/ref_kernels.h"

namespace gemlet::kernels::neon {

namespace {

// SoftmaxExp of 4 lanes, operation for operation (vfmaq_f32(a, b, c) = a + b·c, one rounding).
inline float32x4_t SoftmaxExp4(float32x4_t x) {
  const float32x4_t round = vdupq_n_f32(12582912.0f);
  x = vmaxnmq_f32(x, vdupq_n_f32(-87.0f));  // x > −87 ? x : −87 (quiet NaN → −87)
  const float32x4_t n = vsubq_f32(vfmaq_f32(round, x, vdupq_n_f32(1.44269504088896341f)), round);
  float32x4_t r = vfmaq_f32(x, n, vdupq_n_f32(-0.693359375f));
  r = vfmaq_f32(r, n, vdupq_n_f32(2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
  p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
  p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
  p = vaddq_f32(vfmaq_f32(r, p, vmulq_f32(r, r)), vdupq_n_f32(1.0f));
  const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  return vmulq_f32(p, vreinterpretq_f32_s32(e));
}

}  // namespace

void OnlineSoftmax(float* s, int64_t lds, int64_t R, int64_t n, float* m, float* l, float* corr) {
  const int64_t n16 = n / 16 * 16;
  for (int64_t r = 0; r < R; ++r) {
    float* sr = s + r * lds;
    float32x4_t vmax = vdupq_n_f32(m[r]);
    for (int64_t c = 0; c < n16; c += 4) vmax = vmaxq_f32(vmax, vld1q_f32(sr + c));
    float mt = vmaxvq_f32(vmax);  // (the maximum of finite values, in any order)
    for (int64_t c = n16; c < n; ++c) mt = sr[c] > mt ? sr[c] : mt;
    corr[r] = SoftmaxExp(m[r] - mt);
    m[r] = mt;
    const float32x4_t vm = vdupq_n_f32(mt);
    float32x4_t acc[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    for (int64_t c = 0; c < n16; c += 16) {
      for (int j = 0; j < 4; ++j) {
        const float32x4_t p = SoftmaxExp4(vsubq_f32(vld1q_f32(sr + c + 4 * j), vm));
        vst1q_f32(sr + c + 4 * j, p);
        acc[j] = vaddq_f32(acc[j], p);
      }
    }
    float a[16];
    for (int j = 0; j < 4; ++j) vst1q_f32(a + 4 * j, acc[j]);
    for (int64_t c = n16; c < n; ++c) {
      sr[c] = SoftmaxExp(sr[c] - mt);
      a[c - n16] += sr[c];
    }
    l[r] = l[r] * corr[r] + SumLanes16(a);
  }
}

}  // namespace gemlet::kernels::neon
