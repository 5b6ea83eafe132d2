// The scalar twins of the bf16 dot products (kernels.h's Numerics): an emulation of AVX512_BF16's
// vcvtneps2bf16 and vdpbf16ps, as Intel's pseudocode specifies them (checked against the
// hardware by the kernel tests on every CPU that has them).
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "kernels/ref/ref_kernels.h"

namespace gemlet::kernels {

namespace {

// A bf16 input as vdpbf16ps reads it: a subnormal counts as zero (of its sign).
float Bf16In(uint16_t h) {
  if ((h & 0x7f80) == 0) h &= 0x8000;
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

// A sum as vdpbf16ps writes it: a subnormal result flushed to zero (of its sign).
float FlushSubnormal(float v) { return std::fabs(v) < FLT_MIN ? std::copysign(0.0f, v) : v; }

}  // namespace

void F32ToBf16Ref(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = std::bit_cast<uint32_t>(x[i]);
    if ((u & 0x7f800000u) == 0) {  // zero or subnormal: ±0
      y[i] = static_cast<uint16_t>((u >> 16) & 0x8000u);
    } else if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN: quieted, payload truncated
      y[i] = static_cast<uint16_t>((u >> 16) | 0x0040u);
    } else {  // round to nearest even (overflow gives ±inf)
      y[i] = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  }
}

float DotBf16Ref(const uint16_t* w, const uint16_t* x, int64_t K) {
  float a[16] = {};
  for (int64_t g = 0; g < K; g += 32) {
    for (int l = 0; l < 16; ++l) {
      const int64_t i = g + 2 * l;
      // The group's padding reads +0.
      const float x0 = i < K ? Bf16In(x[i]) : 0.0f, w0 = i < K ? Bf16In(w[i]) : 0.0f;
      const float x1 = i + 1 < K ? Bf16In(x[i + 1]) : 0.0f, w1 = i + 1 < K ? Bf16In(w[i + 1]) : 0.0f;
      a[l] = FlushSubnormal(a[l] + x1 * w1);  // the products are exact
      a[l] = FlushSubnormal(a[l] + x0 * w0);
    }
  }
  return SumLanes16(a);
}

void GemmBf16Ref(const uint16_t* w, int64_t rs, int64_t r0, int64_t r1, const uint16_t* x, int64_t xs,
                 int64_t T, int64_t K, float* y, int64_t ldy) {
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t r = r0; r < r1; ++r) y[t * ldy + r] = DotBf16Ref(w + r * rs, x + t * xs, K);
  }
}

void GemmAccBf16Ref(const uint16_t* a, int64_t lda, int64_t M, const uint16_t* b, int64_t bs, int64_t N, int64_t D,
                    float* y, int64_t ldy) {
  GEMLET_CHECK(N % 2 == 0);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t d = 0; d < D; ++d) {
      float acc = y[m * ldy + d];
      for (int64_t j = 0; j < N / 2; ++j) {
        const uint16_t* pair = b + j * bs + 2 * d;
        acc = FlushSubnormal(acc + Bf16In(a[m * lda + 2 * j + 1]) * Bf16In(pair[1]));
        acc = FlushSubnormal(acc + Bf16In(a[m * lda + 2 * j]) * Bf16In(pair[0]));
      }
      y[m * ldy + d] = acc;
    }
  }
}

}  // namespace gemlet::kernels
