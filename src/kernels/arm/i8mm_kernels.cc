// I8MM: the q4x8 GEMM with SMMLA (2 rows × 2 tokens × 8 values per instruction, twice the
// multiply-adds of SDOT), and the Tier::kI8mm table; everything else is the SDOT code.
#include <arm_neon.h>

#include <cmath>

#include "kernels/arm/arm_kernels.h"

#define GEMLET_SDOT 1

namespace gemlet::kernels {
namespace {
#include "kernels/arm/int8_kernels_arm.inc"

// One row group × NP token pairs. xt[2j], xt[2j+1] are pair j's tokens (a padded pair repeats
// a token). acc[j][p] lanes: (row 2p, tok 2j), (2p, 2j+1), (2p+1, 2j), (2p+1, 2j+1).
template <int NP>
inline void TileMmla(const BlockQ4x8* w, const ActBlock* const* xt, int64_t nb,
                     float32x4_t (&acc)[NP][4]) {
  for (int j = 0; j < NP; ++j)
    for (int p = 0; p < 4; ++p) acc[j][p] = vdupq_n_f32(0.0f);
  const uint8x16_t m0f = vdupq_n_u8(0x0f);
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ4x8& wb = w[b];
    // wl/wh[p][m]: rows 2p, 2p+1 × values 8m..8m+7 (low nibbles) / 16+8m.. (high nibbles).
    int8x16_t wl[4][2], wh[4][2];
    for (int h = 0; h < 2; ++h) {
      for (int m = 0; m < 2; ++m) {
        const uint32x4_t c0 = vreinterpretq_u32_u8(vld1q_u8(wb.qs + 32 * (2 * m) + 16 * h));
        const uint32x4_t c1 = vreinterpretq_u32_u8(vld1q_u8(wb.qs + 32 * (2 * m + 1) + 16 * h));
        const uint8x16_t z0 = vreinterpretq_u8_u32(vzip1q_u32(c0, c1));
        const uint8x16_t z1 = vreinterpretq_u8_u32(vzip2q_u32(c0, c1));
        wl[2 * h][m] = vreinterpretq_s8_u8(vandq_u8(z0, m0f));
        wh[2 * h][m] = vreinterpretq_s8_u8(vshrq_n_u8(z0, 4));
        wl[2 * h + 1][m] = vreinterpretq_s8_u8(vandq_u8(z1, m0f));
        wh[2 * h + 1][m] = vreinterpretq_s8_u8(vshrq_n_u8(z1, 4));
      }
    }
    const uint16x8_t d16 = vld1q_u16(wb.d);
    const float32x4_t d03 = vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(d16)));
    const float32x4_t d47 = vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(d16)));
    const float32x4_t dwp[4] = {vzip1q_f32(d03, d03), vzip2q_f32(d03, d03), vzip1q_f32(d47, d47),
                                vzip2q_f32(d47, d47)};
    for (int j = 0; j < NP; ++j) {
      const ActBlock& x0 = xt[2 * j][b];
      const ActBlock& x1 = xt[2 * j + 1][b];
      int8x16_t a[4];
      for (int m = 0; m < 4; ++m) a[m] = vcombine_s8(vld1_s8(x0.q + 8 * m), vld1_s8(x1.q + 8 * m));
      const int32_t o0 = 8 * x0.sum, o1 = 8 * x1.sum;
      const int32x4_t off = {o0, o1, o0, o1};
      const float32x4_t dx = {x0.d, x1.d, x0.d, x1.d};
      for (int p = 0; p < 4; ++p) {
        int32x4_t is = vmmlaq_s32(vdupq_n_s32(0), wl[p][0], a[0]);
        is = vmmlaq_s32(is, wl[p][1], a[1]);
        is = vmmlaq_s32(is, wh[p][0], a[2]);
        is = vmmlaq_s32(is, wh[p][1], a[3]);
        acc[j][p] = vfmaq_f32(acc[j][p], vmulq_f32(dwp[p], dx), vcvtq_f32_s32(vsubq_s32(is, off)));
      }
    }
  }
}

void GemmQ4x8Mmla(const BlockQ4x8* w, int64_t gs, int64_t r0, int64_t r1, const ActBlock* x,
                  int64_t xs, int64_t T, int64_t K, float* y, int64_t ldy) {
  GEMLET_CHECK_MSG(r0 % 8 == 0 && r1 % 8 == 0, "q4x8 kernels take whole groups of 8 rows");
  constexpr int NP = 2;
  const int64_t nb = K / kQBlock;
  for (int64_t g = r0 / 8; g < r1 / 8; ++g) {
    for (int64_t t0 = 0; t0 < T; t0 += 2 * NP) {
      const ActBlock* xt[2 * NP];
      for (int i = 0; i < 2 * NP; ++i) xt[i] = x + (t0 + i < T ? t0 + i : T - 1) * xs;
      float32x4_t acc[NP][4];
      TileMmla<NP>(w + g * gs, xt, nb, acc);
      for (int j = 0; j < NP; ++j) {
        for (int p = 0; p < 4; ++p) {
          float v[4];
          vst1q_f32(v, acc[j][p]);
          for (int l = 0; l < 4; ++l) {
            const int64_t t = t0 + 2 * j + (l & 1), r = 8 * g + 2 * p + (l >> 1);
            if (t < T) y[t * ldy + r] = v[l];
          }
        }
      }
    }
  }
}

}  // namespace

const KernelTable& I8mmKernels() {
  static constexpr KernelTable t = {
      Tier::kI8mm, neon::QuantizeAct, GemvQ4,       GemmQ4,      GemvQ8,
      GemmQ8,      GemvQ4x8,          GemmQ4x8Mmla, neon::GemvF, neon::GemmF,
      neon::F16ToF32, neon::F32ToF16, neon::GemmAccF, neon::OnlineSoftmax};
  return t;
}

}  // namespace gemlet::kernels
