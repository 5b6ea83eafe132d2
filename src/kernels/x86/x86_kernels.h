// Internal to kernels/: the x86-64 kernel tables and the AVX2 functions they share. Each
// *_kernels.cc here is compiled with its own ISA flags (kernels/CMakeLists.txt); dispatch.cc
// calls a table's accessor only on a CPU with that ISA.
#pragma once

#include <cstdint>

#include "kernels/float_rows.h"
#include "kernels/kernels.h"

namespace gemlet::kernels {

namespace avx2 {
void QuantizeAct(const float* x, ActBlock* out, int64_t K);
void GemvF(TensorType wtype, const void* w, int64_t row_stride, int64_t r0, int64_t r1,
           const float* x, int64_t K, float* y);
void GemmF(TensorType wtype, const void* w, int64_t row_stride, int64_t r0, int64_t r1,
           const float* x, int64_t x_stride, int64_t T, int64_t K, float* y, int64_t ldy,
           int64_t prefetch);
// f16 <-> f32 rows (F16C), bit-identical to F16ToF32Ref / F32ToF16Ref.
void F16ToF32(const uint16_t* x, float* y, int64_t n);
void F32ToF16(const float* x, uint16_t* y, int64_t n);
void GemmAccF(TensorType btype, const float* a, int64_t lda, int64_t M, const void* b,
              int64_t b_stride, int64_t N, int64_t D, float* y, int64_t ldy, int64_t prefetch);
// The online softmax of kernels.h, 8 lanes (avx2_softmax.cc).
void OnlineSoftmax(float* s, int64_t lds, int64_t R, int64_t n, float* m, float* l, float* corr);
}  // namespace avx2

// 512-bit float kernels (avx512_float.cc), bit-identical to the scalar twins.
namespace avx512 {
void GemvF(TensorType wtype, const void* w, int64_t row_stride, int64_t r0, int64_t r1,
           const float* x, int64_t K, float* y);
void GemmF(TensorType wtype, const void* w, int64_t row_stride, int64_t r0, int64_t r1,
           const float* x, int64_t x_stride, int64_t T, int64_t K, float* y, int64_t ldy,
           int64_t prefetch);
void GemmAccF(TensorType btype, const float* a, int64_t lda, int64_t M, const void* b,
              int64_t b_stride, int64_t N, int64_t D, float* y, int64_t ldy, int64_t prefetch);
// The online softmax of kernels.h, 16 lanes (avx512_softmax.cc).
void OnlineSoftmax(float* s, int64_t lds, int64_t R, int64_t n, float* m, float* l, float* corr);
}  // namespace avx512

const KernelTable& Avx2Kernels();     // AVX2 + FMA + F16C
const KernelTable& AvxVnniKernels();  // + AVX-VNNI
const KernelTable& Avx512Kernels();   // AVX-512 F/BW/DQ/VL + VNNI (512-bit q4x8 kernels)
const KernelTable& Avx512Bf16Kernels();  // + AVX512_BF16 (the bf16 dot products)
// For tests: the VNNI code path with vpdpbusd emulated by AVX2 (needs AVX2 only).
const KernelTable& VnniEmulatedKernels();

}  // namespace gemlet::kernels
