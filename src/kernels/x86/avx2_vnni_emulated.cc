// The VNNI kernels' code path (int32 accumulation, no vpmaddwd step) with vpdpbusd emulated
// by AVX2 — exact here because no u8×s8 pair of these kernels reaches int16 saturation. Not a
// tier: kernels_test runs it so that the AVX-VNNI / AVX-512 code is checked against the scalar
// twins even on CPUs (like this project's CI) without VNNI.
#include <immintrin.h>

#include <cstring>

#include "kernels/x86/x86_kernels.h"

#define GEMLET_DPBUSD(acc, u, s) \
  _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)))

namespace gemlet::kernels {
namespace {
#include "kernels/x86/int8_kernels_x86.inc"
}  // namespace

const KernelTable& VnniEmulatedKernels() {
  static constexpr KernelTable t = {
      Tier::kAvx2, avx2::QuantizeAct, GemvQ4,   GemmQ4,      GemvQ8,
      GemmQ8,      GemvQ4x8,          GemmQ4x8, avx2::GemvF, avx2::GemmF,
      avx2::F16ToF32, avx2::F32ToF16, avx2::GemmAccF, avx2::OnlineSoftmax};
  return t;
}

}  // namespace gemlet::kernels
