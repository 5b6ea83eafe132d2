// AVX2 int8 kernels (vpmaddubsw + vpmaddwd) and the Tier::kAvx2 table.
#include <immintrin.h>

#include <cstring>

#include "kernels/x86/x86_kernels.h"

namespace gemlet::kernels {
namespace {
#include "kernels/x86/int8_kernels_x86.inc"
#include "kernels/x86/interleaved_kernels_x86.inc"
}  // namespace

const KernelTable& Avx2Kernels() {
  static constexpr KernelTable t = {Tier::kAvx2,       avx2::QuantizeAct, GemvQ4,      GemmQ4,         GemvQ8,
                                    GemmQ8,           GemvQ4x8,          GemmQ4x8,    GemvQ8x8,       GemmQ8x8,
                                    avx2::GemvF,      avx2::GemmF,       avx2::F16ToF32, avx2::F32ToF16, avx2::GemmAccF,
                                    avx2::OnlineSoftmax};
  return t;
}

}  // namespace gemlet::kernels
