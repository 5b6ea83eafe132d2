// Scalar twins of every SIMD kernel: the executable spec of kernels/kernels.h's Numerics, the
// oracle of the kernel tests, and the kernels of Tier::kScalar. Every SIMD kernel must equal
// its twin here bit for bit (integer block sums and the float results alike).
#pragma once

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

// The Tier::kScalar table (all of the above).
void GemmAccFRef(TensorType btype, const float* a, int64_t lda, int64_t M, const void* b,
                 int64_t b_stride, int64_t N, int64_t D, float* y, int64_t ldy, int64_t prefetch = 0);

const KernelTable& ScalarKernels();

}  // namespace gemlet::kernels
