// AVX-512 VNNI int8 kernels and the Tier::kAvx512 table: the 256-bit kernels with the EVEX
// vpdpbusd (AVX512_VNNI + AVX512VL), for CPUs with AVX-512 VNNI but no AVX-VNNI (Ice Lake,
// Zen 4). Quantization and float products are the AVX2 ones.
#include <immintrin.h>

#include <cstring>

#include "kernels/x86/x86_kernels.h"

#define GEMLET_DPBUSD(acc, u, s) _mm256_dpbusd_epi32(acc, u, s)

namespace gemlet::kernels {
namespace {
#include "kernels/x86/int8_kernels_x86.inc"
}  // namespace

const KernelTable& Avx512Kernels() {
  static constexpr KernelTable t = {
      Tier::kAvx512, avx2::QuantizeAct, GemvQ4,   GemmQ4,      GemvQ8,
      GemmQ8,        GemvQ4x8,          GemmQ4x8, avx2::GemvF, avx2::GemmF,
      avx2::F16ToF32, avx2::F32ToF16};
  return t;
}

}  // namespace gemlet::kernels
