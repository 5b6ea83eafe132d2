// RMSNorm over the innermost dimension (Gemma4RMSNorm): the weight is used as stored (no
// 1 + w) and eps sits inside the root.
#pragma once

#include <cstdint>

namespace gemlet::ops {

// y[r, :] = x[r, :] · (mean(x[r, :]²) + eps)^−½ · w  for r < rows; `w` [dim] may be null (no
// scale, like Gemma 4's v_norm). x [rows, dim], y [rows, dim]; y == x is allowed.
void RmsNorm(const float* x, const float* w, int64_t rows, int64_t dim, float eps, float* y);

}  // namespace gemlet::ops
