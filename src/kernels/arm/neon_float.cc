// Plain NEON: activation quantization and float-weight products, shared by every Arm64
// table. Bit-identical to kernels/ref/ref_kernels.cc.
#include <arm_neon.h>

#include <cmath>
#include <cstring>

#include "base/half.h"
#include "kernels/arm/arm_kernels.h"

namespace gemlet::kernels::neon {

void QuantizeAct(const float* x, ActBlock* out, int64_t K) {
  GEMLET_CHECK_MSG(K % kQBlock == 0, "quantize_act takes whole blocks of 32");
  for (int64_t b = 0; b < K / kQBlock; ++b) {
    const float* xb = x + b * kQBlock;
    float32x4_t v[8];
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int i = 0; i < 8; ++i) {
      v[i] = vld1q_f32(xb + 4 * i);
      m = vmaxq_f32(m, vabsq_f32(v[i]));
    }
    const float amax = vmaxvq_f32(m);
    float d = 0.0f, id = 0.0f;
    if (amax >= 0x1p-100f) {
      d = amax / 127.0f;
      id = 127.0f / amax;
    }
    int32x4_t sum = vdupq_n_s32(0);
    int16x8_t h[4];
    for (int i = 0; i < 4; ++i) {
      int32x4_t q2[2];
      for (int j = 0; j < 2; ++j) {
        float32x4_t s = vmulq_n_f32(v[2 * i + j], id);
        s = vmaxnmq_f32(s, vdupq_n_f32(-127.0f));  // NaN → −127, like the scalar twin
        s = vminnmq_f32(s, vdupq_n_f32(127.0f));
        q2[j] = vcvtnq_s32_f32(s);  // round half to even
        sum = vaddq_s32(sum, q2[j]);
      }
      h[i] = vcombine_s16(vmovn_s32(q2[0]), vmovn_s32(q2[1]));
    }
    vst1q_s8(out[b].q, vcombine_s8(vmovn_s16(h[0]), vmovn_s16(h[1])));
    vst1q_s8(out[b].q + 16, vcombine_s8(vmovn_s16(h[2]), vmovn_s16(h[3])));
    out[b].d = d;
    out[b].sum = vaddvq_s32(sum);
  }
}

namespace {

// kQ8 (i a multiple of 4): the int8 values of i's block times its scale, exact.
template <TensorType T>
inline float32x4_t Load4(const void* w, int64_t i) {
  if constexpr (T == TensorType::kQ8) {
    const BlockQ8& blk = static_cast<const BlockQ8*>(w)[i / kQBlock];
    int32_t v;
    std::memcpy(&v, blk.qs + i % kQBlock, 4);
    const int16x4_t q = vget_low_s16(vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(v))));
    const float d = vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(blk.d))), 0);
    return vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(q)), d);
  } else if constexpr (T == TensorType::kF32) {
    return vld1q_f32(static_cast<const float*>(w) + i);
  } else if constexpr (T == TensorType::kF16) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(static_cast<const uint16_t*>(w) + i)));
  } else {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(static_cast<const uint16_t*>(w) + i), 16));
  }
}

template <TensorType T>
inline float Load1(const void* w, int64_t i) {
  if constexpr (T == TensorType::kF32) {
    return static_cast<const float*>(w)[i];
  } else {
    const uint16_t h = static_cast<const uint16_t*>(w)[i];
    if constexpr (T == TensorType::kF16) {
      return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
    } else {
      const uint32_t u = static_cast<uint32_t>(h) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
  }
}

// The fixed 16-lane tree of kernels.h: a[0] lanes 0-3, a[1] 4-7, a[2] 8-11, a[3] 12-15.
inline float Reduce16(const float32x4_t a[4]) {
  const float32x4_t b = vaddq_f32(vaddq_f32(a[0], a[2]), vaddq_f32(a[1], a[3]));
  const float32x2_t c = vadd_f32(vget_low_f32(b), vget_high_f32(b));
  return vget_lane_f32(c, 0) + vget_lane_f32(c, 1);
}

// `ahead`: bytes from each row to the row it prefetches, line by line as this row is read (0:
// none).
template <TensorType T, int NR, int NT>
inline void DotTile(const void* const* rows, const float* const* xs, int64_t K, float out[NR][NT],
                    int64_t ahead = 0) {
  float32x4_t acc[NR][NT][4];
  for (int r = 0; r < NR; ++r)
    for (int t = 0; t < NT; ++t)
      for (int l = 0; l < 4; ++l) acc[r][t][l] = vdupq_n_f32(0.0f);
  const int64_t K16 = K / 16 * 16;
  for (int64_t i = 0; i < K16; i += 16) {
    if (ahead != 0 && (i * ElemBytes(T)) % 64 == 0) {
      for (int r = 0; r < NR; ++r) PrefetchAhead(rows[r], ahead, i * ElemBytes(T));
    }
    float32x4_t w[NR][4];
    for (int r = 0; r < NR; ++r)
      for (int l = 0; l < 4; ++l) w[r][l] = Load4<T>(rows[r], i + 4 * l);
    for (int t = 0; t < NT; ++t) {
      for (int l = 0; l < 4; ++l) {
        const float32x4_t xv = vld1q_f32(xs[t] + i + 4 * l);
        for (int r = 0; r < NR; ++r) acc[r][t][l] = vfmaq_f32(acc[r][t][l], xv, w[r][l]);
      }
    }
  }
  for (int r = 0; r < NR; ++r) {
    for (int t = 0; t < NT; ++t) {
      float s = Reduce16(acc[r][t]);
      for (int64_t i = K16; i < K; ++i) s = std::fmaf(xs[t][i], Load1<T>(rows[r], i), s);
      out[r][t] = s;
    }
  }
}

template <TensorType T>
void GemmT(const void* w, int64_t rs, int64_t r0, int64_t r1, const float* x, int64_t xs,
           int64_t T_, int64_t K, float* y, int64_t ldy, int64_t prefetch) {
  const int64_t eb = ElemBytes(T);
  // Each row is prefetched by the pass that first reads it (its first tile of tokens).
  const int64_t ahead = prefetch * rs * eb;
  auto row = [&](int64_t r) {
    return static_cast<const void*>(static_cast<const uint8_t*>(w) + r * rs * eb);
  };
  if (T_ == 1) {
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) {
      const void* rows[4] = {row(r), row(r + 1), row(r + 2), row(r + 3)};
      float out[4][1];
      DotTile<T, 4, 1>(rows, &x, K, out, ahead);
      for (int i = 0; i < 4; ++i) y[r + i] = out[i][0];
    }
    for (; r < r1; ++r) {
      const void* rows[1] = {row(r)};
      float out[1][1];
      DotTile<T, 1, 1>(rows, &x, K, out, ahead);
      y[r] = out[0][0];
    }
    return;
  }
  for (int64_t r = r0; r < r1; ++r) {
    const void* rows[1] = {row(r)};
    int64_t t = 0;
    for (; t + 4 <= T_; t += 4) {
      const float* xt[4] = {x + t * xs, x + (t + 1) * xs, x + (t + 2) * xs, x + (t + 3) * xs};
      float out[1][4];
      DotTile<T, 1, 4>(rows, xt, K, out, t == 0 ? ahead : 0);
      for (int i = 0; i < 4; ++i) y[(t + i) * ldy + r] = out[0][i];
    }
    for (; t < T_; ++t) {
      const float* xt[1] = {x + t * xs};
      float out[1][1];
      DotTile<T, 1, 1>(rows, xt, K, out, t == 0 ? ahead : 0);
      y[t * ldy + r] = out[0][0];
    }
  }
}

}  // namespace

// `prefetch` as on x86 (PRFM PLDL2KEEP, one line per 64 bytes of a row as it is read): measured
// for speed on x86 only, tested for correctness under qemu (no Arm machine here).
void GemmF(TensorType wt, const void* w, int64_t rs, int64_t r0, int64_t r1, const float* x,
           int64_t xs, int64_t T, int64_t K, float* y, int64_t ldy, int64_t prefetch) {
  switch (wt) {
    case TensorType::kF16:
      return GemmT<TensorType::kF16>(w, rs, r0, r1, x, xs, T, K, y, ldy, prefetch);
    case TensorType::kBF16:
      return GemmT<TensorType::kBF16>(w, rs, r0, r1, x, xs, T, K, y, ldy, prefetch);
    default:
      return GemmT<TensorType::kF32>(w, rs, r0, r1, x, xs, T, K, y, ldy, prefetch);
  }
}

void GemvF(TensorType wt, const void* w, int64_t rs, int64_t r0, int64_t r1, const float* x,
           int64_t K, float* y) {
  GemmF(wt, w, rs, r0, r1, x, K, 1, K, y, 0, 0);
}

namespace {

// GemmAccF for MB rows of a (MB ≤ 4) and 16 columns d0..d0+15: 4·MB accumulators.
// `ahead`: bytes from each B row to the row to prefetch (0: none), a line per 64 bytes of d0.
template <TensorType T, int MB>
inline void AccTile16(const float* a, int64_t lda, const void* b, int64_t bs, int64_t N,
                      int64_t d0, float* y, int64_t ldy, int64_t ahead) {
  float32x4_t acc[MB][4];
  for (int m = 0; m < MB; ++m)
    for (int i = 0; i < 4; ++i) acc[m][i] = vld1q_f32(y + m * ldy + d0 + 4 * i);
  const int64_t row_bytes = RowBytes<T>(bs);
  const uint8_t* bp = static_cast<const uint8_t*>(b);
  for (int64_t n = 0; n < N; ++n) {
    const void* row = bp + n * row_bytes;
    if constexpr (T == TensorType::kQ8) {
      if (ahead != 0 && d0 % kQBlock == 0) PrefetchBlockAhead(row, ahead, d0);
    } else if (ahead != 0 && (d0 * ElemBytes(T)) % 64 == 0) {
      PrefetchAhead(row, ahead, d0 * ElemBytes(T));
    }
    float32x4_t bv[4];
    for (int i = 0; i < 4; ++i) bv[i] = Load4<T>(row, d0 + 4 * i);
    for (int m = 0; m < MB; ++m) {
      const float32x4_t am = vdupq_n_f32(a[m * lda + n]);
      for (int i = 0; i < 4; ++i) acc[m][i] = vfmaq_f32(acc[m][i], am, bv[i]);
    }
  }
  for (int m = 0; m < MB; ++m)
    for (int i = 0; i < 4; ++i) vst1q_f32(y + m * ldy + d0 + 4 * i, acc[m][i]);
}

template <TensorType T, int MB>
inline void AccRows(const float* a, int64_t lda, const void* b, int64_t bs, int64_t N, int64_t D,
                    float* y, int64_t ldy, int64_t ahead) {
  int64_t d = 0;
  for (; d + 16 <= D; d += 16) AccTile16<T, MB>(a, lda, b, bs, N, d, y, ldy, ahead);
  // (q8 rows have D % 32 == 0: no tail.)
  const uint8_t* bp = static_cast<const uint8_t*>(b);
  for (int m = 0; m < MB; ++m) {  // the last D mod 16 columns, one at a time
    for (int64_t dd = d; dd < D; ++dd) {
      float acc = y[m * ldy + dd];
      for (int64_t n = 0; n < N; ++n) {
        const void* row = bp + n * RowBytes<T>(bs);
        const float bv = T == TensorType::kF32 ? static_cast<const float*>(row)[dd]
                                               : gemlet::F16ToF32(static_cast<const uint16_t*>(row)[dd]);
        acc = std::fmaf(a[m * lda + n], bv, acc);
      }
      y[m * ldy + dd] = acc;
    }
  }
}

template <TensorType T>
void GemmAccT(const float* a, int64_t lda, int64_t M, const void* b, int64_t bs, int64_t N,
              int64_t D, float* y, int64_t ldy, int64_t prefetch) {
  // The B rows are prefetched by the first pass over them (the one that reads them from memory).
  const int64_t ahead = prefetch * RowBytes<T>(bs);
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) AccRows<T, 4>(a + m * lda, lda, b, bs, N, D, y + m * ldy, ldy, m == 0 ? ahead : 0);
  const int64_t pf = m == 0 ? ahead : 0;
  switch (M - m) {
    case 3:
      return AccRows<T, 3>(a + m * lda, lda, b, bs, N, D, y + m * ldy, ldy, pf);
    case 2:
      return AccRows<T, 2>(a + m * lda, lda, b, bs, N, D, y + m * ldy, ldy, pf);
    case 1:
      return AccRows<T, 1>(a + m * lda, lda, b, bs, N, D, y + m * ldy, ldy, pf);
    default:
      return;
  }
}

}  // namespace

void GemmAccF(TensorType bt, const float* a, int64_t lda, int64_t M, const void* b, int64_t bs,
              int64_t N, int64_t D, float* y, int64_t ldy, int64_t prefetch) {
  CheckAccRows(bt, bs, D);
  if (bt == TensorType::kF16) return GemmAccT<TensorType::kF16>(a, lda, M, b, bs, N, D, y, ldy, prefetch);
  if (bt == TensorType::kQ8) return GemmAccT<TensorType::kQ8>(a, lda, M, b, bs, N, D, y, ldy, prefetch);
  GemmAccT<TensorType::kF32>(a, lda, M, b, bs, N, D, y, ldy, prefetch);
}

}  // namespace gemlet::kernels::neon
