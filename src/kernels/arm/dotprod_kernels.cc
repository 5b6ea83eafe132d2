// SDOT int8 kernels and the Tier::kDotprod table (Cortex-A76 / Pi 5).
#include <arm_neon.h>

#include <cmath>

#include "kernels/arm/arm_kernels.h"

#define GEMLET_SDOT 1

namespace gemlet::kernels {
namespace {
#include "kernels/arm/int8_kernels_arm.inc"
}  // namespace

const KernelTable& DotprodKernels() {
  static constexpr KernelTable t = {
      Tier::kDotprod, neon::QuantizeAct, GemvQ4,   GemmQ4,      GemvQ8,
      GemmQ8,         GemvQ4x8,          GemmQ4x8, neon::GemvF, neon::GemmF,
      neon::F16ToF32, neon::F32ToF16, neon::GemmAccF, neon::OnlineSoftmax};
  return t;
}

}  // namespace gemlet::kernels
