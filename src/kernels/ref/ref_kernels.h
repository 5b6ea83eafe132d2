// Scalar twins of every SIMD kernel: the executable spec of kernels/kernels.h's Numerics, the
// oracle of the kernel tests, and the kernels of Tier::kScalar. Every SIMD kernel must equal
// its twin here bit for bit (integer block sums and the float results alike).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/kernels.h"

namespace gemlet::kernels {

void QuantizeActRef(const float* x, ActBlock* out, int64_t K);

// Exact integer block sums Σ w_j·q_j (w_j = nibble − 8 for q4).
int32_t BlockDotQ4(const BlockQ4& w, const ActBlock& x);
int32_t BlockDotQ8(const BlockQ8& w, const ActBlock& x);
// One row of a q4x8 group (row i < 8 of the group, block column given by w).
int32_t BlockDotQ4x8(const BlockQ4x8& w, int i, const ActBlock& x);
int32_t BlockDotQ8x8(const BlockQ8x8& w, int i, const ActBlock& x);

void GemvQ4Ref(const BlockQ4* w, int64_t row_stride_blocks, int64_t r0, int64_t r1,
               const ActBlock* x, int64_t K, float* y);
void GemmQ4Ref(const BlockQ4* w, int64_t row_stride_blocks, int64_t r0, int64_t r1,
               const ActBlock* x, int64_t x_stride_blocks, int64_t T, int64_t K, float* y,
               int64_t ldy);
void GemvQ8Ref(const BlockQ8* w, int64_t row_stride_blocks, int64_t r0, int64_t r1,
               const ActBlock* x, int64_t K, float* y);
void GemmQ8Ref(const BlockQ8* w, int64_t row_stride_blocks, int64_t r0, int64_t r1,
               const ActBlock* x, int64_t x_stride_blocks, int64_t T, int64_t K, float* y,
               int64_t ldy);
void GemvQ4x8Ref(const BlockQ4x8* w, int64_t group_stride_blocks, int64_t r0, int64_t r1,
                 const ActBlock* x, int64_t K, float* y);
void GemmQ4x8Ref(const BlockQ4x8* w, int64_t group_stride_blocks, int64_t r0, int64_t r1,
                 const ActBlock* x, int64_t x_stride_blocks, int64_t T, int64_t K, float* y,
                 int64_t ldy);
void GemvQ8x8Ref(const BlockQ8x8* w, int64_t group_stride_blocks, int64_t r0, int64_t r1,
                 const ActBlock* x, int64_t K, float* y);
void GemmQ8x8Ref(const BlockQ8x8* w, int64_t group_stride_blocks, int64_t r0, int64_t r1,
                 const ActBlock* x, int64_t x_stride_blocks, int64_t T, int64_t K, float* y,
                 int64_t ldy);

// base/half.h per element (kernels.h's Numerics).
void F16ToF32Ref(const uint16_t* x, float* y, int64_t n);
void F32ToF16Ref(const float* x, uint16_t* y, int64_t n);

// Float weights: the 16-lane dot of kernels.h's Numerics.
float DotFRef(TensorType wtype, const void* w_row, const float* x, int64_t K);
void GemvFRef(TensorType wtype, const void* w, int64_t row_stride, int64_t r0, int64_t r1,
              const float* x, int64_t K, float* y);
// (`prefetch`, a hint of kernels.h, is not used: the twins never prefetch.)
void GemmFRef(TensorType wtype, const void* w, int64_t row_stride, int64_t r0, int64_t r1,
              const float* x, int64_t x_stride, int64_t T, int64_t K, float* y, int64_t ldy,
              int64_t prefetch = 0);

// bf16 dot products (kernels.h's Numerics): the spec of AVX512_BF16's vdpbf16ps, emulated.
void F32ToBf16Ref(const float* x, uint16_t* y, int64_t n);
float DotBf16Ref(const uint16_t* w_row, const uint16_t* x, int64_t K);
void GemmBf16Ref(const uint16_t* w, int64_t row_stride, int64_t r0, int64_t r1, const uint16_t* x,
                 int64_t x_stride, int64_t T, int64_t K, float* y, int64_t ldy);
void GemmAccBf16Ref(const uint16_t* a, int64_t lda, int64_t M, const uint16_t* b, int64_t b_stride, int64_t N,
                    int64_t D, float* y, int64_t ldy);
void OnlineSoftmaxBf16Ref(const float* s, int64_t lds, int64_t R, int64_t n, float* m, float* l, float* corr,
                          uint16_t* p, int64_t ldp);

void GemmAccFRef(TensorType btype, const float* a, int64_t lda, int64_t M, const void* b,
                 int64_t b_stride, int64_t N, int64_t D, float* y, int64_t ldy, int64_t prefetch = 0);

// kernels.h's online softmax: SoftmaxExp, the 16-lane sum's tree, and the kernel.
// SoftmaxExp and SumLanes16 are inline so that the SIMD tiers use them for their scalar parts
// (a row's correction, tails): compiled with or without FMA instructions, fmaf rounds once.
inline float SoftmaxExp(float x) {
  x = x > -87.0f ? x : -87.0f;  // (NaN → −87, as x86 max_ps and Arm fmaxnm)
  constexpr float kRound = 12582912.0f;  // 1.5·2^23: adding it rounds to an integer
  const float n = std::fmaf(x, 1.44269504088896341f, kRound) - kRound;  // round(x·log2 e), exactly
  float r = std::fmaf(n, -0.693359375f, x);  // x − n·ln 2, ln 2 in two parts
  r = std::fmaf(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = std::fmaf(p, r, 1.3981999507e-3f);
  p = std::fmaf(p, r, 8.3334519073e-3f);
  p = std::fmaf(p, r, 4.1665795894e-2f);
  p = std::fmaf(p, r, 1.6666665459e-1f);
  p = std::fmaf(p, r, 5.0000001201e-1f);
  p = std::fmaf(p, r * r, r) + 1.0f;  // e^r = 1 + r + r²·P(r)
  return p * std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);  // · 2^n (n ≥ −126)
}
// The fixed tree of kernels.h over 16 lane sums (a is overwritten).
inline float SumLanes16(float a[16]) {
  for (int l = 0; l < 8; ++l) a[l] += a[l + 8];
  for (int l = 0; l < 4; ++l) a[l] += a[l + 4];
  for (int l = 0; l < 2; ++l) a[l] += a[l + 2];
  return a[0] + a[1];
}
void OnlineSoftmaxRef(float* s, int64_t lds, int64_t R, int64_t n, float* m, float* l, float* corr);

// The Tier::kScalar table (all of the above).
const KernelTable& ScalarKernels();

}  // namespace gemlet::kernels
