// CPU features that select the SIMD kernels at run time (kernels/dispatch.cc). Detection uses
// cpuid + xgetbv on x86-64 (an ISA counts only if the OS saves its register state) and
// getauxval(AT_HWCAP/AT_HWCAP2) on Arm64 Linux. Other architectures report no features and
// run the scalar kernels.
#pragma once

#include <string>

#include "base/status.h"

namespace gemlet {

struct CpuFeatures {
  // x86-64. Each level implies the ones before it (detection clears a level whose
  // prerequisites are missing).
  bool avx2 = false;      // AVX2 + FMA + F16C, OS saves YMM state
  bool avx_vnni = false;  // AVX-VNNI (VEX vpdpbusd), plus avx2
  bool avx512 = false;    // AVX512F/BW/DQ/VL + AVX512_VNNI, OS saves ZMM/opmask state, plus avx2
  bool avx512_bf16 = false;  // AVX512_BF16 (vdpbf16ps), plus avx512
  // Arm64.
  bool neon = false;     // Advanced SIMD (HWCAP_ASIMD; always present on Arm64 Linux)
  bool dotprod = false;  // SDOT/UDOT (HWCAP_ASIMDDP), plus neon
  bool i8mm = false;     // SMMLA/USMMLA (HWCAP2_I8MM), plus neon

  bool operator==(const CpuFeatures&) const = default;
};

// Queries the CPU (uncached; cheap, but prefer HostCpuFeatures()).
CpuFeatures DetectCpuFeatures();
// DetectCpuFeatures() of the first call, then cached. Thread-safe.
const CpuFeatures& HostCpuFeatures();

// Caps `have` at a named level, for forcing a lower kernel tier (env GEMLET_CPU):
//   x86-64: scalar < avx2 < avxvnni < avx512 < avx512bf16     Arm64: scalar < neon < dotprod < i8mm
// The result keeps only features at or below the level (a level above what the CPU has
// leaves `have` unchanged). "native" (or "") returns `have`. A name that is not a level of
// this architecture is an InvalidArgument error naming GEMLET_CPU and the accepted values.
Result<CpuFeatures> CapCpuFeatures(const CpuFeatures& have, const std::string& level);

// "avx2 avxvnni", "avx2 avx512 avx512bf16", "neon dotprod", or "none".
std::string CpuFeaturesString(const CpuFeatures& f);

}  // namespace gemlet
