// `gemlet run --verify`: checks the installed build on this CPU without any downloaded model.
//   1. Every kernel tier this CPU runs (kernels::AvailableTiers()) on random data with odd
//      sizes and tails: each SIMD kernel against its scalar twin (bit for bit, as
//      kernels/kernels.h promises), and the scalar twins against a plain float64
//      dequantize-and-multiply reference (within a rounding tolerance).
//   2. A tiny synthetic model (synthesized and converted in a temporary folder): logits of
//      one prefill over a token sequence against token-by-token decode through the KV cache,
//      within 1e-3, for the exact and the fast matmul paths.
//
// Test hook: the environment variable GEMLET_VERIFY_INJECT_FAULT=NAME (a KernelTable member:
// quantize_act, gemv_q4, gemm_q4, gemv_q8, gemm_q8, gemv_q4x8, gemm_q4x8, gemv_q8x8, gemm_q8x8,
// gemv_f, gemm_f)
// wraps that kernel of every tier under test so that its output is perturbed; verify must then
// FAIL naming it. Only for testing verify itself.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/kernels.h"
#include "tools/cli/command.h"

namespace gemlet::cli {

struct VerifyOptions {
  std::string inject_fault;  // "" or a kernel name (see above)
  int threads = 0;           // engine threads for the model check (0 = all cores)
  bool check_model = true;   // false: the kernel checks only (tests of the fault hook)
  std::FILE* out = stdout;   // one line per check
};

struct VerifyCheck {
  std::string name;    // "kernels avx512 vs scalar", "model exact: prefill vs decode"
  bool pass = false;
  std::string detail;  // the first mismatch on failure; sizes and max differences on success
};

struct VerifyReport {
  std::vector<VerifyCheck> checks;
  bool pass() const;
  // The first failing check, or nullptr.
  const VerifyCheck* first_failure() const;
};

// The kernel function names the fault hook accepts.
const std::vector<std::string>& VerifyKernelNames();

// Runs every check, printing each as it completes. Errors only for setup failures that are
// not verdicts (an unknown fault name, no temporary folder); a wrong result is a failed check.
Result<VerifyReport> RunVerify(const VerifyOptions& options);

// `gemlet run --verify [--threads N]`: RunVerify with the fault hook read from the
// environment; the exit code is kExitOk on PASS, kExitVerifyFailed on FAIL.
int RunVerifyCommand(Flags& flags);

// ---- pieces (verify_kernels.cc, verify_faults.cc) ----

// `table` with kernel `name` (one of VerifyKernelNames()) replaced by a wrapper that spoils
// one of its outputs; "" leaves it as it is. Not thread-safe (one original table at a time).
kernels::KernelTable WithFault(const kernels::KernelTable& table, const std::string& name);

// Checks every kernel of `tier` (which this CPU must run): a SIMD tier against the scalar
// twins bit for bit, the scalar tier against the float64 reference. `inject_fault` as in
// VerifyOptions.
VerifyCheck VerifyKernelTier(kernels::Tier tier, const std::string& inject_fault);

}  // namespace gemlet::cli
