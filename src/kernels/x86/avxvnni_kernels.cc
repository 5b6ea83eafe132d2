// AVX-VNNI int8 kernels (VEX vpdpbusd) and the Tier::kAvxVnni table; quantization and float
// products are the AVX2 ones.
#include <immintrin.h>

#include <cstring>

#include "kernels/x86/x86_kernels.h"

#define GEMLET_DPBUSD(acc, u, s) _mm256_dpbusd_avx_epi32(acc, u, s)

namespace gemlet::kernels {
namespace {
#include "kernels/x86/int8_kernels_x86.inc"
#include "kernels/x86/interleaved_kernels_x86.inc"
}  // namespace

const KernelTable& AvxVnniKernels() {
  static constexpr KernelTable t = {Tier::kAvxVnni,       avx2::QuantizeAct, GemvQ4,      GemmQ4,         GemvQ8,
                                    GemmQ8,           GemvQ4x8,          GemmQ4x8,    GemvQ8x8,       GemmQ8x8,
                                    avx2::GemvF,      avx2::GemmF,       avx2::F16ToF32, avx2::F32ToF16, avx2::GemmAccF,
                                    avx2::OnlineSoftmax};
  return t;
}

}  // namespace gemlet::kernels
