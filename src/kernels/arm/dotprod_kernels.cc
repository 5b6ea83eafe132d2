// SDOT int8 kernels and the Tier::kDotprod table (Cortex-A76 / Pi 5).
#include <arm_neon.h>

#include <cmath>
#include <utility>

#include "kernels/arm/arm_kernels.h"

#define GEMLET_SDOT 1

namespace gemlet::kernels {
namespace {
#include "kernels/arm/int8_kernels_arm.inc"
#include "kernels/arm/interleaved_kernels_arm.inc"
}  // namespace

const KernelTable& DotprodKernels() {
  static constexpr KernelTable t = ArmTable(Tier::kDotprod);
  return t;
}

}  // namespace gemlet::kernels
