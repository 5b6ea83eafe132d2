// Internal to kernels/: the Arm64 kernel tables and the plain-NEON functions they share. Each
// *_kernels.cc here is compiled with its own -march (kernels/CMakeLists.txt); dispatch.cc
// calls a table's accessor only on a CPU with that feature.
#pragma once

#include <cstdint>

#include "kernels/float_rows.h"
#include "kernels/kernels.h"

namespace gemlet::kernels {

namespace neon {
void QuantizeAct(const float* x, ActBlock* out, int64_t K);
void GemvF(TensorType wtype, const void* w, int64_t row_stride, int64_t r0, int64_t r1,
           const float* x, int64_t K, float* y);
void GemmF(TensorType wtype, const void* w, int64_t row_stride, int64_t r0, int64_t r1,
           const float* x, int64_t x_stride, int64_t T, int64_t K, float* y, int64_t ldy,
           int64_t prefetch);
// f16 <-> f32 rows (FCVTL / FCVTN), bit-identical to F16ToF32Ref / F32ToF16Ref.
void F16ToF32(const uint16_t* x, float* y, int64_t n);
void F32ToF16(const float* x, uint16_t* y, int64_t n);
void GemmAccF(TensorType btype, const float* a, int64_t lda, int64_t M, const void* b,
              int64_t b_stride, int64_t N, int64_t D, float* y, int64_t ldy, int64_t prefetch);
// The online softmax of kernels.h, 4 lanes × 4 (neon_softmax.cc).
void OnlineSoftmax(float* s, int64_t lds, int64_t R, int64_t n, float* m, float* l, float* corr);
}  // namespace neon

const KernelTable& NeonKernels();     // Armv8.0 Advanced SIMD (Cortex-A72)
const KernelTable& DotprodKernels();  // + SDOT (Cortex-A76)
const KernelTable& I8mmKernels();     // + SMMLA for the q4x8 GEMM

}  // namespace gemlet::kernels
