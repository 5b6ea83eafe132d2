// Plain NEON (Armv8.0) int8 kernels and the Tier::kNeon table: the Cortex-A72 / Pi 4 path.
#include <arm_neon.h>

#include <cmath>
#include <utility>

#include "kernels/arm/arm_kernels.h"

namespace gemlet::kernels {
namespace {
#include "kernels/arm/int8_kernels_arm.inc"
#include "kernels/arm/interleaved_kernels_arm.inc"
}  // namespace

const KernelTable& NeonKernels() {
  static constexpr KernelTable t = ArmTable(Tier::kNeon);
  return t;
}

}  // namespace gemlet::kernels
