// `gemlet run --verify`: passes on this build and CPU, and fails loudly (exit code 3, FAIL naming
// the kernel) when the test hook GEMLET_VERIFY_INJECT_FAULT breaks any one kernel.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/mapped_file.h"

namespace gemlet::cli {
namespace verify_test {

// Runs `ENV gemlet ARGS`; returns the exit code and the combined output.
int Gemlet(const std::string& env, const std::string& args, std::string* output) {
  const std::string dir = ::testing::TempDir() + "/verify_test." + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string out = dir + "/out";
  const std::string cmd = env + " " + GEMLET_BINARY + " " + args + " >" + out + " 2>&1 </dev/null";
  const int rc = std::system(cmd.c_str());
  auto text = ReadFileToString(out);
  *output = text.ok() ? *text : "";
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(Verify, PassesOnThisMachine) {
  std::string out;
  EXPECT_EQ(Gemlet("", "run --verify", &out), 0) << out;
  EXPECT_NE(out.find("PASS: all"), std::string::npos) << out;
  EXPECT_EQ(out.find("FAIL"), std::string::npos) << out;
  EXPECT_NE(out.find("kernels scalar vs float64 reference"), std::string::npos) << out;
  EXPECT_NE(out.find("model exact: prefill vs token-by-token decode"), std::string::npos) << out;
  EXPECT_NE(out.find("model fast: prefill vs token-by-token decode"), std::string::npos) << out;
#if defined(__x86_64__)
  // Every SIMD tier this CPU runs is checked against the scalar twins.
  if (__builtin_cpu_supports("avx2")) {
    EXPECT_NE(out.find("kernels avx2 vs scalar twins"), std::string::npos) << out;
  }
#endif
}

TEST(Verify, ForcedScalarTierStillChecksEveryTier) {
  std::string out;
  EXPECT_EQ(Gemlet("GEMLET_CPU=scalar", "run --verify --threads 1", &out), 0) << out;
  EXPECT_NE(out.find("kernels in use: scalar"), std::string::npos) << out;
  EXPECT_NE(out.find("PASS: all"), std::string::npos) << out;
}

TEST(Verify, EveryInjectedKernelFaultFailsNamingTheKernel) {
  for (const char* kernel : {"quantize_act", "gemv_q4", "gemm_q4", "gemv_q8", "gemm_q8", "gemv_q4x8", "gemm_q4x8",
                             "gemv_q8x8", "gemm_q8x8", "gemv_f", "gemm_f", "f16_to_f32", "f32_to_f16"}) {
    std::string out;
    EXPECT_EQ(Gemlet(std::string("GEMLET_VERIFY_INJECT_FAULT=") + kernel, "run --verify", &out), 3)
        << kernel << "\n" << out;
    const size_t fail = out.rfind("\nFAIL: ");
    ASSERT_NE(fail, std::string::npos) << kernel << "\n" << out;
    EXPECT_NE(out.find(kernel, fail), std::string::npos) << "the FAIL line does not name " << kernel << "\n" << out;
    EXPECT_EQ(out.find("PASS: all"), std::string::npos) << out;
  }
}

TEST(Verify, MisuseIsReported) {
  std::string out;
  EXPECT_EQ(Gemlet("GEMLET_VERIFY_INJECT_FAULT=nonsense", "run --verify", &out), 2) << out;  // a usage error
  EXPECT_NE(out.find("GEMLET_VERIFY_INJECT_FAULT='nonsense' is not a kernel name"), std::string::npos) << out;
  EXPECT_EQ(Gemlet("", "run --verify -m model.gemlet", &out), 2) << out;
  EXPECT_NE(out.find("--verify takes only --threads"), std::string::npos) << out;
}

}  // namespace verify_test
}  // namespace gemlet::cli
