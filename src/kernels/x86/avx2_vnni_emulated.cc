// The VNNI kernels' code path (int32 accumulation, no vpmaddwd step) with vpdpbusd emulated
// exactly by AVX2 (the bytes widened to int16, as the q8x8 kernels' u = w + 128 up to 255
// would saturate a vpmaddubsw pair). Not a tier: kernels_test runs it so that the AVX-VNNI /
// AVX-512 code is checked against the scalar twins even on CPUs (like this project's CI)
// without VNNI.
#include <immintrin.h>

#include <cstring>

#include "kernels/x86/x86_kernels.h"

#define GEMLET_DPBUSD(acc, u, s) DpbusdExact(acc, u, s)

namespace gemlet::kernels {
namespace {

// acc + Σ4 u·s per int32 lane (u unsigned, s signed bytes) with no intermediate saturation.
inline __m256i DpbusdExact(__m256i acc, __m256i u, __m256i s) {
  const __m256i z = _mm256_setzero_si256();
  // Per 128-bit lane, bytes 0-7 (lo) and 8-15 (hi) as int16 (s sign-extended).
  const __m256i ulo = _mm256_unpacklo_epi8(u, z), uhi = _mm256_unpackhi_epi8(u, z);
  const __m256i slo = _mm256_srai_epi16(_mm256_unpacklo_epi8(s, s), 8);
  const __m256i shi = _mm256_srai_epi16(_mm256_unpackhi_epi8(s, s), 8);
  // Pair sums (bytes 2k, 2k+1), then hadd makes dword d of each lane bytes 4d..4d+3.
  return _mm256_add_epi32(acc, _mm256_hadd_epi32(_mm256_madd_epi16(ulo, slo), _mm256_madd_epi16(uhi, shi)));
}

#include "kernels/x86/int8_kernels_x86.inc"
#include "kernels/x86/interleaved_kernels_x86.inc"
}  // namespace

const KernelTable& VnniEmulatedKernels() {
  static constexpr KernelTable t = {Tier::kAvx2,       avx2::QuantizeAct, GemvQ4,      GemmQ4,         GemvQ8,
                                    GemmQ8,           GemvQ4x8,          GemmQ4x8,    GemvQ8x8,       GemmQ8x8,
                                    avx2::GemvF,      avx2::GemmF,       avx2::F16ToF32, avx2::F32ToF16, avx2::GemmAccF,
                                    avx2::OnlineSoftmax};
  return t;
}

}  // namespace gemlet::kernels
