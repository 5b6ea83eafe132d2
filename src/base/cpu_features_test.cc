#include "base/cpu_features.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace gemlet {
namespace {

// The flags line of /proc/cpuinfo ("flags" on x86, "Features" on Arm64), as a set.
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

TEST(CpuFeatures, LevelsImplyTheirPrerequisites) {
  const CpuFeatures f = DetectCpuFeatures();
  EXPECT_EQ(f, HostCpuFeatures());
  if (f.avx_vnni || f.avx512) {
    EXPECT_TRUE(f.avx2);
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

// Under an emulator whose /proc/cpuinfo is the host's, the expected features come from the
// environment instead, e.g. GEMLET_EXPECT_CPU_FEATURES="neon dotprod" for qemu -cpu cortex-a76.
TEST(CpuFeatures, AgreesWithProcCpuinfo) {
  if (const char* want = std::getenv("GEMLET_EXPECT_CPU_FEATURES")) {
    EXPECT_EQ(CpuFeaturesString(DetectCpuFeatures()), want);
    return;
  }
  const std::set<std::string> flags = ProcCpuFlags();
  // Empty off Linux, and under qemu-user, which shows the host's /proc/cpuinfo.
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags line for this architecture";
  const CpuFeatures f = DetectCpuFeatures();
  auto has = [&](const char* s) { return flags.count(s) > 0; };
#if defined(__x86_64__)
  EXPECT_EQ(f.avx2, has("avx2") && has("fma") && has("f16c"));
  EXPECT_EQ(f.avx_vnni, f.avx2 && has("avx_vnni"));
  EXPECT_EQ(f.avx512, f.avx2 && has("avx512f") && has("avx512bw") && has("avx512vl") &&
                          has("avx512dq") && has("avx512_vnni"));
#elif defined(__aarch64__)
  EXPECT_EQ(f.neon, has("asimd"));
  EXPECT_EQ(f.dotprod, has("asimddp"));
  EXPECT_EQ(f.i8mm, has("i8mm"));
#endif
}

TEST(CpuFeatures, CapLowersButNeverRaises) {
  CpuFeatures all;
#if defined(__x86_64__)
  all.avx2 = all.avx_vnni = all.avx512 = true;
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
  EXPECT_FALSE(vn->avx512);
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
  CpuFeatures a;
  a.neon = a.dotprod = true;
  EXPECT_EQ(CpuFeaturesString(a), "neon dotprod");
}

}  // namespace
}  // namespace gemlet
