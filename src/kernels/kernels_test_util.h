// Helpers shared by the kernel tests (kernels_test.cc, interleaved_kernels_test.cc): random
// weights and activations, bit-exact comparison, and the kernel tables under test.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#if defined(__x86_64__)
#include "kernels/x86/x86_kernels.h"
#endif

namespace gemlet::kernels::kernels_test {

inline constexpr float kSentinel = -12345.0f;
inline constexpr int64_t kKs[] = {32, 64, 96, 4096 + 32};
inline constexpr int64_t kRows[] = {1, 3, 7, 33};
inline constexpr int64_t kTokens[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 17};

inline bool SameFloat(float a, float b) {
  uint32_t ua, ub;
  std::memcpy(&ua, &a, 4);
  std::memcpy(&ub, &b, 4);
  return ua == ub || (std::isnan(a) && std::isnan(b));
}

// Asserts the two output buffers are bit-identical; `what` names the case on failure.
inline void ExpectSame(const std::vector<float>& want, const std::vector<float>& got,
                const std::string& what) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (!SameFloat(want[i], got[i])) {
      FAIL() << what << ": element " << i << " scalar " << want[i] << " simd " << got[i];
    }
  }
}

inline std::vector<float> RandomFloats(std::mt19937& rng, int64_t n, float scale) {
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

inline std::vector<BlockQ4> RandomQ4(std::mt19937& rng, int64_t n_blocks) {
  std::vector<BlockQ4> w(n_blocks);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> sc(0.001f, 0.05f);
  for (auto& b : w) {
    b.d = F32ToF16(byte(rng) & 1 ? sc(rng) : -sc(rng));
    for (auto& q : b.qs) q = static_cast<uint8_t>(byte(rng));
  }
  return w;
}

inline std::vector<BlockQ8> RandomQ8(std::mt19937& rng, int64_t n_blocks) {
  std::vector<BlockQ8> w(n_blocks);
  std::uniform_int_distribution<int> byte(-128, 127);
  std::uniform_real_distribution<float> sc(0.0005f, 0.01f);
  for (auto& b : w) {
    b.d = F32ToF16(sc(rng));
    for (auto& q : b.qs) q = static_cast<int8_t>(byte(rng));
  }
  return w;
}

// T tokens of K activations, quantized by the scalar twin, x_stride blocks apart.
inline std::vector<ActBlock> RandomAct(std::mt19937& rng, int64_t T, int64_t K, int64_t x_stride) {
  std::vector<ActBlock> x(T * x_stride);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> f = RandomFloats(rng, K, t % 3 == 0 ? 1.0f : 30.0f);
    QuantizeActRef(f.data(), x.data() + t * x_stride, K);
  }
  return x;
}

// A kernel table under test: every tier this CPU runs, plus (x86 with AVX2) the VNNI code
// path with an emulated vpdpbusd, so that code is checked even without VNNI hardware.
struct KernelCase {
  std::string name;
  const KernelTable* table;
};

inline std::vector<KernelCase> KernelCases() {
  std::vector<KernelCase> out;
  for (Tier t : AvailableTiers()) out.push_back({TierName(t), KernelsForTier(t)});
#if defined(__x86_64__)
  if (KernelsForTier(Tier::kAvx2) != nullptr)
    out.push_back({"vnni_emulated", &VnniEmulatedKernels()});
#endif
  return out;
}

inline void PrintTo(const KernelCase& c, std::ostream* os) { *os << c.name; }

inline std::string CaseName(const ::testing::TestParamInfo<KernelCase>& info) { return info.param.name; }

}  // namespace gemlet::kernels::kernels_test
