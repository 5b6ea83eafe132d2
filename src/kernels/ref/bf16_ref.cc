// The scalar twins of the bf16 dot products (kernels.h's Numerics): an emulation of AVX512_BF16's
// vcvtneps2bf16 and vdpbf16ps, as Intel's pseudocode specifies them (checked against the
// hardware by the kernel tests on every CPU that has them).
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <vector>

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

// acc + x·w as one step of vdpbf16ps: the product exact (in double, where it cannot underflow:
// a product below f32's range still gives the sum its sign), the sum rounded once to f32 (the
// exact sum fits a double whenever its rounding to f32 could depend on the low bits), then
// flushed.
float AddProduct(float acc, uint16_t x, uint16_t w) {
  return FlushSubnormal(static_cast<float>(static_cast<double>(acc) +
                                           static_cast<double>(Bf16In(x)) * static_cast<double>(Bf16In(w))));
}

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
  float acc = 0.0f;
  for (int64_t i = 0; i < K; i += 2) {
    acc = i + 1 < K ? AddProduct(acc, x[i + 1], w[i + 1]) : AddProduct(acc, 0, 0);  // an odd K's last pairs with +0
    acc = AddProduct(acc, x[i], w[i]);
  }
  return acc;
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
        acc = AddProduct(acc, a[m * lda + 2 * j + 1], pair[1]);
        acc = AddProduct(acc, a[m * lda + 2 * j], pair[0]);
      }
      y[m * ldy + d] = acc;
    }
  }
}

// Each row by OnlineSoftmaxRef on a copy, then rounded: the composition the fused kernels equal.
void OnlineSoftmaxBf16Ref(const float* s, int64_t lds, int64_t R, int64_t n, float* m, float* l, float* corr,
                          uint16_t* p, int64_t ldp) {
  std::vector<float> row(static_cast<size_t>(n));
  for (int64_t r = 0; r < R; ++r) {
    std::copy(s + r * lds, s + r * lds + n, row.begin());
    OnlineSoftmaxRef(row.data(), n, 1, n, m + r, l + r, corr + r);
    F32ToBf16Ref(row.data(), p + r * ldp, n);
    if (n % 2 != 0) p[r * ldp + n] = 0;
  }
}

}  // namespace gemlet::kernels
