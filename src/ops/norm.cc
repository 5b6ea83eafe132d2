#include "ops/norm.h"

#include <cmath>

namespace gemlet::ops {

void RmsNorm(const float* x, const float* w, int64_t rows, int64_t dim, float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    // The mean square in double: one pass over a few thousand values, exact enough that the
    // norm adds nothing measurable to the f32 error budget.
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const double scale = 1.0 / std::sqrt(ss / static_cast<double>(dim) + static_cast<double>(eps));
    if (w) {
      for (int64_t i = 0; i < dim; ++i) yr[i] = static_cast<float>(xr[i] * scale) * w[i];
    } else {
      for (int64_t i = 0; i < dim; ++i) yr[i] = static_cast<float>(xr[i] * scale);
    }
  }
}

}  // namespace gemlet::ops
