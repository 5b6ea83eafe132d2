// Chooses the kernel table from the CPU's features, once.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/cpu_features.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#if defined(__x86_64__)
#include "kernels/x86/x86_kernels.h"
#elif defined(__aarch64__)
#include "kernels/arm/arm_kernels.h"
#endif

namespace gemlet::kernels {

const char* TierName(Tier t) {
  switch (t) {
    case Tier::kScalar:
      return "scalar";
    case Tier::kAvx2:
      return "avx2";
    case Tier::kAvxVnni:
      return "avxvnni";
    case Tier::kAvx512:
      return "avx512";
    case Tier::kAvx512Bf16:
      return "avx512bf16";
    case Tier::kNeon:
      return "neon";
    case Tier::kDotprod:
      return "dotprod";
    case Tier::kI8mm:
      return "i8mm";
  }
  return "unknown";
}

namespace {

// The table of tier t if `f` has its features (and this build has its code), else nullptr.
const KernelTable* TableFor(Tier t, const CpuFeatures& f) {
  switch (t) {
    case Tier::kScalar:
      return &ScalarKernels();
#if defined(__x86_64__)
    case Tier::kAvx2:
      return f.avx2 ? &Avx2Kernels() : nullptr;
    case Tier::kAvxVnni:
      return f.avx_vnni ? &AvxVnniKernels() : nullptr;
    case Tier::kAvx512:
      return f.avx512 ? &Avx512Kernels() : nullptr;
    case Tier::kAvx512Bf16:
      return f.avx512 && f.avx512_bf16 ? &Avx512Bf16Kernels() : nullptr;
#elif defined(__aarch64__)
    case Tier::kNeon:
      return f.neon ? &NeonKernels() : nullptr;
    case Tier::kDotprod:
      return f.dotprod ? &DotprodKernels() : nullptr;
    case Tier::kI8mm:
      return f.i8mm && f.dotprod ? &I8mmKernels() : nullptr;
#endif
    default:
      return nullptr;
  }
}

// Best first: AVX-512 (512-bit int8 and float kernels) before AVX-VNNI (256-bit).
constexpr Tier kPreference[] = {Tier::kAvx512Bf16, Tier::kAvx512, Tier::kAvxVnni, Tier::kAvx2,  Tier::kI8mm,
                                Tier::kDotprod, Tier::kNeon,   Tier::kScalar};

}  // namespace

const KernelTable& SelectKernels(const CpuFeatures& have, const char* gemlet_cpu) {
  CpuFeatures f = have;
  if (gemlet_cpu != nullptr && *gemlet_cpu != '\0') {
    Result<CpuFeatures> capped = CapCpuFeatures(have, gemlet_cpu);
    if (capped.ok()) {
      f = *capped;
    } else {
      std::fprintf(stderr, "gemlet: ignoring %s\n", capped.status().message().c_str());
    }
  }
  for (Tier t : kPreference) {
    if (const KernelTable* k = TableFor(t, f)) return *k;
  }
  return ScalarKernels();
}

const KernelTable& ActiveKernels() {
  static const KernelTable& k = SelectKernels(HostCpuFeatures(), std::getenv("GEMLET_CPU"));
  return k;
}

const KernelTable* KernelsForTier(Tier t) { return TableFor(t, HostCpuFeatures()); }

std::vector<Tier> AvailableTiers() {
  std::vector<Tier> out;
  for (Tier t : {Tier::kScalar, Tier::kAvx2, Tier::kAvxVnni, Tier::kAvx512, Tier::kAvx512Bf16, Tier::kNeon,
                 Tier::kDotprod, Tier::kI8mm}) {
    if (TableFor(t, HostCpuFeatures()) != nullptr) out.push_back(t);
  }
  return out;
}

}  // namespace gemlet::kernels
