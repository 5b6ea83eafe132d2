// `gemlet run --verify` in-process (tools/cli/verify.h), so it also runs on Arm64 under qemu in
// the aarch64 test stage: every kernel tier of this CPU and the tiny model pass, and a broken
// kernel fails naming itself. (tools/cli/verify_test.cc drives the binary and its exit codes.)
#include "tools/cli/verify.h"

#include "base/status.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace gemlet::cli {
namespace verify_test {

std::string Read(std::FILE* f) {
  std::string s;
  std::rewind(f);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) s.append(buf, n);
  return s;
}

TEST(VerifyInProcess, EveryTierOfThisCpuAndTheTinyModelPass) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  VerifyOptions o;
  o.out = out;
  o.threads = 2;
  auto report = RunVerify(o);
  const std::string text = Read(out);
  std::fclose(out);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->pass()) << text;
  for (kernels::Tier t : kernels::AvailableTiers()) {
    EXPECT_NE(text.find(std::string("kernels ") + kernels::TierName(t)), std::string::npos) << text;
  }
  // Kernel tiers, the synthetic model, and prefill vs decode on both paths.
  EXPECT_EQ(report->checks.size(), kernels::AvailableTiers().size() + 3) << text;
  EXPECT_NE(text.find("PASS: all"), std::string::npos) << text;
}

// The kernel checks alone (no model) with `kernel` broken; its printed report in *text.
auto RunWithFault(const char* kernel, std::string* text) {
  std::FILE* out = std::tmpfile();
  GEMLET_CHECK(out != nullptr);
  VerifyOptions o;
  o.out = out;
  o.inject_fault = kernel;
  o.check_model = false;
  auto report = RunVerify(o);
  *text = Read(out);
  std::fclose(out);
  return report;
}

TEST(VerifyInProcess, ABrokenKernelFailsNamingIt) {
  for (const char* kernel : {"gemv_q4x8", "gemm_f", "f32_to_f16"}) {
    std::string text;
    const auto report = RunWithFault(kernel, &text);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_FALSE(report->pass()) << text;
    ASSERT_NE(report->first_failure(), nullptr);
    EXPECT_NE(report->first_failure()->detail.find(kernel), std::string::npos) << text;
    for (const auto& c : report->checks) {
      if (c.name.rfind("kernels ", 0) == 0) {
        EXPECT_FALSE(c.pass) << c.name << " missed the broken " << kernel;
      }
    }
    EXPECT_NE(text.find("FAIL: "), std::string::npos) << text;
  }
}

// The bf16 dot products exist on one tier (AVX512_BF16): a fault there fails that tier's
// check, naming the kernel, and no other.
TEST(VerifyInProcess, ABrokenBf16KernelFailsItsTier) {
  const kernels::KernelTable* bf = kernels::KernelsForTier(kernels::Tier::kAvx512Bf16);
  if (bf == nullptr) GTEST_SKIP() << "this CPU has no bf16 dot products";
  for (const char* kernel : {"gemm_bf16", "f32_to_bf16", "gemm_acc_bf16", "online_softmax_bf16"}) {
    std::string text;
    const auto report = RunWithFault(kernel, &text);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_FALSE(report->pass()) << text;
    for (const auto& c : report->checks) {
      if (c.name.rfind("kernels ", 0) != 0) continue;
      const bool bf16_tier = c.name.find("avx512bf16") != std::string::npos;
      EXPECT_EQ(c.pass, !bf16_tier) << c.name << ": " << c.detail;
      if (bf16_tier) {
        EXPECT_NE(c.detail.find(kernel), std::string::npos) << c.detail;
      }
    }
  }
}

}  // namespace verify_test
}  // namespace gemlet::cli
