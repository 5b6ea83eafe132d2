#include "format/gguf_kquants.h"

#include "base/half.h"

namespace gemlet {

namespace {

// Scale and min of sub-block j (0..7) from the 12 packed bytes (ggml get_scale_min_k4):
// j < 4: low 6 bits of bytes j and j+4; j >= 4: low/high nibble of byte j+4 with the top two
// bits of bytes j−4 and j as bits 4..5.
void ScaleMin(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

}  // namespace

void DequantizeRowQ4K(const BlockQ4K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = F16ToF32(x[b].d), dmin = F16ToF32(x[b].dmin);
    const uint8_t* q = x[b].qs;
    for (int g = 0; g < 4; ++g) {  // 64 values per group: two sub-blocks
      int sc0, m0, sc1, m1;
      ScaleMin(2 * g, x[b].scales, &sc0, &m0);
      ScaleMin(2 * g + 1, x[b].scales, &sc1, &m1);
      const float d0 = d * sc0, mm0 = dmin * m0, d1 = d * sc1, mm1 = dmin * m1;
      for (int l = 0; l < 32; ++l) *y++ = d0 * (q[l] & 0x0f) - mm0;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] >> 4) - mm1;
      q += 32;
    }
  }
}

void DequantizeRowQ5K(const BlockQ5K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = F16ToF32(x[b].d), dmin = F16ToF32(x[b].dmin);
    const uint8_t* ql = x[b].qs;
    const uint8_t* qh = x[b].qh;
    for (int g = 0; g < 4; ++g) {
      int sc0, m0, sc1, m1;
      ScaleMin(2 * g, x[b].scales, &sc0, &m0);
      ScaleMin(2 * g + 1, x[b].scales, &sc1, &m1);
      const float d0 = d * sc0, mm0 = dmin * m0, d1 = d * sc1, mm1 = dmin * m1;
      const uint8_t u0 = static_cast<uint8_t>(1u << (2 * g)), u1 = static_cast<uint8_t>(2u << (2 * g));
      for (int l = 0; l < 32; ++l) *y++ = d0 * ((ql[l] & 0x0f) + ((qh[l] & u0) ? 16 : 0)) - mm0;
      for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] >> 4) + ((qh[l] & u1) ? 16 : 0)) - mm1;
      ql += 32;
    }
  }
}

void DequantizeRowQ6K(const BlockQ6K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = F16ToF32(x[b].d);
    const uint8_t* ql = x[b].ql;
    const uint8_t* qh = x[b].qh;
    const int8_t* sc = x[b].scales;
    for (int half = 0; half < 2; ++half) {  // 128 values: ql[0..63], qh[0..31], sc[0..7]
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * sc[is] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

}  // namespace gemlet
