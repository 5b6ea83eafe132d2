// Plain NEON (Armv8.0) int8 kernels and the Tier::kNeon table: the Cortex-A72 / Pi 4 path.
#include <arm_neon.h>

#include <cmath>

#include "kernels/arm/arm_kernels.h"

namespace gemlet::kernels {
namespace {
#include "kernels/arm/int8_kernels_arm.inc"
}  // namespace

const KernelTable& NeonKernels() {
  static constexpr KernelTable t = {
      Tier::kNeon, neon::QuantizeAct, GemvQ4,   GemmQ4,      GemvQ8,
      GemmQ8,      GemvQ4x8,          GemmQ4x8, neon::GemvF, neon::GemmF,
      neon::F16ToF32, neon::F32ToF16, neon::GemmAccF, neon::OnlineSoftmax};
  return t;
}

}  // namespace gemlet::kernels
