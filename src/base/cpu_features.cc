#include "base/cpu_features.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#define GEMLET_X86 1
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define GEMLET_ARM64 1
#endif

namespace gemlet {

#if defined(GEMLET_X86)
namespace {
uint64_t Xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}
bool Bit(uint32_t v, int b) { return (v >> b) & 1u; }
}  // namespace

CpuFeatures DetectCpuFeatures() {
  CpuFeatures f;
  uint32_t a, b, c, d;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(1, 0, a, b, c, d);
  const bool fma = Bit(c, 12), osxsave = Bit(c, 27), avx = Bit(c, 28), f16c = Bit(c, 29);
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = Xgetbv0();
  const bool ymm_os = (xcr0 & 0x6) == 0x6;    // XMM + YMM state
  const bool zmm_os = (xcr0 & 0xe6) == 0xe6;  // + opmask, ZMM_Hi256, Hi16_ZMM
  __cpuid_count(7, 0, a, b, c, d);
  const bool avx2 = Bit(b, 5);
  const bool avx512f = Bit(b, 16), avx512dq = Bit(b, 17), avx512bw = Bit(b, 30),
             avx512vl = Bit(b, 31), avx512vnni = Bit(c, 11);
  uint32_t a1 = 0, b1, c1, d1;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  const bool avxvnni = Bit(a1, 4), avx512bf16 = Bit(a1, 5);
  f.avx2 = avx2 && fma && f16c && ymm_os;
  f.avx_vnni = f.avx2 && avxvnni;
  f.avx512 = f.avx2 && zmm_os && avx512f && avx512dq && avx512bw && avx512vl && avx512vnni;
  f.avx512_bf16 = f.avx512 && avx512bf16;
  return f;
}
#elif defined(GEMLET_ARM64)
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif
CpuFeatures DetectCpuFeatures() {
  CpuFeatures f;
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  f.neon = (hw & HWCAP_ASIMD) != 0;
  f.dotprod = f.neon && (hw & HWCAP_ASIMDDP) != 0;
  f.i8mm = f.neon && (hw2 & HWCAP2_I8MM) != 0;
  return f;
}
#else
CpuFeatures DetectCpuFeatures() { return CpuFeatures(); }
#endif

const CpuFeatures& HostCpuFeatures() {
  static const CpuFeatures f = DetectCpuFeatures();
  return f;
}

Result<CpuFeatures> CapCpuFeatures(const CpuFeatures& have, const std::string& level) {
  if (level.empty() || level == "native") return have;
  CpuFeatures f = have;
#if defined(GEMLET_X86)
  static const char* kLevels = "scalar, avx2, avxvnni, avx512, avx512bf16 or native";
  if (level == "scalar") {
    f.avx2 = f.avx_vnni = f.avx512 = f.avx512_bf16 = false;
  } else if (level == "avx2") {
    f.avx_vnni = f.avx512 = f.avx512_bf16 = false;
  } else if (level == "avxvnni") {
    f.avx512 = f.avx512_bf16 = false;
  } else if (level == "avx512") {
    f.avx512_bf16 = false;
  } else if (level != "avx512bf16") {
    return InvalidArgument("GEMLET_CPU='" + level + "' is not a CPU level of this x86-64 build (" +
                           kLevels + ")");
  }
#elif defined(GEMLET_ARM64)
  static const char* kLevels = "scalar, neon, dotprod, i8mm or native";
  if (level == "scalar") {
    f.neon = f.dotprod = f.i8mm = false;
  } else if (level == "neon") {
    f.dotprod = f.i8mm = false;
  } else if (level == "dotprod") {
    f.i8mm = false;
  } else if (level != "i8mm") {
    return InvalidArgument("GEMLET_CPU='" + level + "' is not a CPU level of this Arm64 build (" +
                           kLevels + ")");
  }
#else
  if (level != "scalar") {
    return InvalidArgument("GEMLET_CPU='" + level +
                           "' is not a CPU level of this build (scalar or native)");
  }
#endif
  return f;
}

std::string CpuFeaturesString(const CpuFeatures& f) {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.avx2, "avx2");
  add(f.avx_vnni, "avxvnni");
  add(f.avx512, "avx512");
  add(f.avx512_bf16, "avx512bf16");
  add(f.neon, "neon");
  add(f.dotprod, "dotprod");
  add(f.i8mm, "i8mm");
  return s.empty() ? "none" : s;
}

}  // namespace gemlet
