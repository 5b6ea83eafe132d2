#include "base/cpu_features.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace gemlet {
namespace cpu_features_test {

// The flags line of /proc/cpuinfo ("flags" on x86, "Features" on Arm64), as a set; empty if
// there is none (under qemu-user the file is the host's, whose x86 "flags" line does not
// count for an Arm64 binary).
std::set<std::string> ProcCpuFlags() {
#if defined(__aarch64__)
  const char* key = "Features";
#else
  const char* key = "flags";
#endif
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      std::istringstream ss(line.substr(line.find(':') + 1));
      std::set<std::string> out;
      std::string w;
      while (ss >> w) out.insert(w);
      return out;
    }
  }
  return {};
}

#if defined(__x86_64__)
// The x86 features from cpuid and xgetbv, read here without the code under test: the bit
// positions are those of the Intel SDM (vol. 2A, CPUID) and XCR0 (vol. 1, 13.1).
CpuFeatures CpuidFeatures() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  CpuFeatures f;
  if (!__get_cpuid_count(1, 0, &a, &b, &c, &d)) return f;
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28),
             f16c = c & (1u << 29);
  if (!osxsave || !avx) return f;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const bool ymm = (lo & 0x6) == 0x6, zmm = (lo & 0xe6) == 0xe6;
  unsigned b7 = 0, c7 = 0, a71 = 0;
  if (__get_cpuid_count(7, 0, &a, &b7, &c7, &d)) {
    __get_cpuid_count(7, 1, &a71, &b, &c, &d);
  }
  f.avx2 = (b7 & (1u << 5)) && fma && f16c && ymm;
  f.avx_vnni = f.avx2 && (a71 & (1u << 4));
  const unsigned avx512_fdqbwvl = (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);
  f.avx512 = f.avx2 && zmm && (b7 & avx512_fdqbwvl) == avx512_fdqbwvl && (c7 & (1u << 11));
  f.avx512_bf16 = f.avx512 && (a71 & (1u << 5));
  return f;
}
#endif

// The features a tier name stands for (GEMLET_EXPECT_CPU_TIER): each tier has the ones below.
CpuFeatures TierFeatures(const std::string& tier) {
  CpuFeatures f;
#if defined(__aarch64__)
  f.neon = tier == "neon" || tier == "dotprod" || tier == "i8mm";
  f.dotprod = tier == "dotprod" || tier == "i8mm";
  f.i8mm = tier == "i8mm";
  EXPECT_TRUE(f.neon) << "GEMLET_EXPECT_CPU_TIER=" << tier << " is not neon, dotprod or i8mm";
#else
  f.avx2 = tier == "avx2" || tier == "avxvnni";
  f.avx_vnni = tier == "avxvnni";
  EXPECT_TRUE(f.avx2) << "GEMLET_EXPECT_CPU_TIER=" << tier << " is not avx2 or avxvnni";
#endif
  return f;
}

TEST(CpuFeatures, LevelsImplyTheirPrerequisites) {
  const CpuFeatures f = DetectCpuFeatures();
  EXPECT_EQ(f, HostCpuFeatures());
  if (f.avx_vnni || f.avx512) {
    EXPECT_TRUE(f.avx2);
  }
  if (f.avx512_bf16) {
    EXPECT_TRUE(f.avx512);
  }
  if (f.dotprod || f.i8mm) {
    EXPECT_TRUE(f.neon);
  }
#if defined(__x86_64__)
  EXPECT_FALSE(f.neon || f.dotprod || f.i8mm);
#elif defined(__aarch64__)
  EXPECT_TRUE(f.neon);  // Advanced SIMD is mandatory on Arm64 Linux
  EXPECT_FALSE(f.avx2 || f.avx_vnni || f.avx512);
#endif
}

// The features detected are the ones this CPU has:
//  * GEMLET_EXPECT_CPU_TIER set (the aarch64 stage of scripts/test.sh and the cross
//    toolchain's ctest emulator: cortex-a72 -> neon, cortex-a76 -> dotprod, max -> i8mm):
//    exactly that tier's features. qemu-user emulates the auxiliary vector (AT_HWCAP,
//    AT_HWCAP2) that detection reads per -cpu model, but not /proc/cpuinfo.
//  * else on x86-64: the features cpuid and xgetbv report, read independently above, and
//    the kernel's /proc/cpuinfo flags.
//  * else on Arm64: /proc/cpuinfo's Features line; there is none under qemu-user, and
//    then the test fails: a qemu run must say which tier it emulates.
TEST(CpuFeatures, DetectsWhatTheCpuHas) {
  const CpuFeatures f = DetectCpuFeatures();
  const char* want = std::getenv("GEMLET_EXPECT_CPU_TIER");
  if (want != nullptr && *want != '\0') {
    EXPECT_EQ(CpuFeaturesString(f), CpuFeaturesString(TierFeatures(want))) << "GEMLET_EXPECT_CPU_TIER=" << want;
#if defined(__x86_64__)
    EXPECT_FALSE(f.avx512) << "an AVX-512 CPU has no single tier name here: leave GEMLET_EXPECT_CPU_TIER unset";
#endif
    return;
  }
  const std::set<std::string> flags = ProcCpuFlags();
  auto has = [&](const char* s) { return flags.count(s) > 0; };
#if defined(__x86_64__)
  EXPECT_EQ(f, CpuidFeatures()) << "detected " << CpuFeaturesString(f) << ", cpuid says "
                                << CpuFeaturesString(CpuidFeatures());
  ASSERT_FALSE(flags.empty()) << "no flags line in /proc/cpuinfo";
  EXPECT_EQ(f.avx2, has("avx2") && has("fma") && has("f16c"));
  EXPECT_EQ(f.avx_vnni, f.avx2 && has("avx_vnni"));
  EXPECT_EQ(f.avx512, f.avx2 && has("avx512f") && has("avx512bw") && has("avx512vl") &&
                          has("avx512dq") && has("avx512_vnni"));
  EXPECT_EQ(f.avx512_bf16, f.avx512 && has("avx512_bf16"));
#elif defined(__aarch64__)
  ASSERT_FALSE(flags.empty()) << "no Features line in /proc/cpuinfo (qemu-user?): set GEMLET_EXPECT_CPU_TIER "
                                 "to the tier the emulated CPU has (neon, dotprod or i8mm)";
  EXPECT_EQ(f.neon, has("asimd"));
  EXPECT_EQ(f.dotprod, has("asimddp"));
  EXPECT_EQ(f.i8mm, has("i8mm"));
#else
  EXPECT_EQ(f, CpuFeatures());
  (void)has;
#endif
}

TEST(CpuFeatures, CapLowersButNeverRaises) {
  CpuFeatures all;
#if defined(__x86_64__)
  all.avx2 = all.avx_vnni = all.avx512 = all.avx512_bf16 = true;
  auto s = CapCpuFeatures(all, "scalar");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, CpuFeatures());
  auto a2 = CapCpuFeatures(all, "avx2");
  ASSERT_TRUE(a2.ok());
  EXPECT_TRUE(a2->avx2);
  EXPECT_FALSE(a2->avx_vnni || a2->avx512);
  auto vn = CapCpuFeatures(all, "avxvnni");
  ASSERT_TRUE(vn.ok());
  EXPECT_TRUE(vn->avx2 && vn->avx_vnni);
  EXPECT_FALSE(vn->avx512 || vn->avx512_bf16);
  auto a5 = CapCpuFeatures(all, "avx512");
  ASSERT_TRUE(a5.ok());
  EXPECT_TRUE(a5->avx512);
  EXPECT_FALSE(a5->avx512_bf16);
  auto bf = CapCpuFeatures(all, "avx512bf16");
  ASSERT_TRUE(bf.ok());
  EXPECT_EQ(*bf, all);
  CpuFeatures only_avx2;
  only_avx2.avx2 = true;
  auto capped = CapCpuFeatures(only_avx2, "avx512");  // asks above what the CPU has
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(*capped, only_avx2);
  const char* foreign = "dotprod";
#elif defined(__aarch64__)
  all.neon = all.dotprod = all.i8mm = true;
  auto s = CapCpuFeatures(all, "scalar");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, CpuFeatures());
  auto n = CapCpuFeatures(all, "neon");
  ASSERT_TRUE(n.ok());
  EXPECT_TRUE(n->neon);
  EXPECT_FALSE(n->dotprod || n->i8mm);
  auto d = CapCpuFeatures(all, "dotprod");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->neon && d->dotprod);
  EXPECT_FALSE(d->i8mm);
  CpuFeatures a72;
  a72.neon = true;
  auto capped = CapCpuFeatures(a72, "i8mm");
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ(*capped, a72);
  const char* foreign = "avx2";
#else
  const char* foreign = "avx2";
#endif
  auto native = CapCpuFeatures(all, "native");
  ASSERT_TRUE(native.ok());
  EXPECT_EQ(*native, all);
  for (const char* bad : {foreign, "AVX2", "fast", " scalar"}) {
    auto r = CapCpuFeatures(all, bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("GEMLET_CPU"), std::string::npos) << r.status().message();
  }
}

TEST(CpuFeatures, String) {
  EXPECT_EQ(CpuFeaturesString(CpuFeatures()), "none");
  CpuFeatures f;
  f.avx2 = f.avx512 = true;
  EXPECT_EQ(CpuFeaturesString(f), "avx2 avx512");
  f.avx512_bf16 = true;
  EXPECT_EQ(CpuFeaturesString(f), "avx2 avx512 avx512bf16");
  CpuFeatures a;
  a.neon = a.dotprod = true;
  EXPECT_EQ(CpuFeaturesString(a), "neon dotprod");
}

}  // namespace cpu_features_test
}  // namespace gemlet
