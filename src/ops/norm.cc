#include "ops/norm.h"

#include <algorithm>
#include <cmath>

namespace gemlet::ops {

namespace {

// Rows per parallel grain of the fused forms; fewer than two grains run on the calling thread.
constexpr int64_t kRowGrain = 8;

void ForRows(int64_t rows, ThreadPool* pool, const std::function<void(int64_t, int64_t)>& fn) {
  ParallelForOrInline(pool, rows, fn, kRowGrain);
}

// Rows whose sums of squares are accumulated side by side.
constexpr int64_t kInterleave = 4;

// ss[j] = Σ_i x[j·dim + i]² in double for the rows j < n ≤ kInterleave, each summed in order
// i = 0, 1, …: the same bits as one row at a time, with the rows' dependent chains of
// additions interleaved so that they overlap.
void SumSquares(const float* x, int64_t n, int64_t dim, double* ss) {
  if (n == kInterleave) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    const float *x0 = x, *x1 = x + dim, *x2 = x + 2 * dim, *x3 = x + 3 * dim;
    for (int64_t i = 0; i < dim; ++i) {
      s0 += static_cast<double>(x0[i]) * x0[i];
      s1 += static_cast<double>(x1[i]) * x1[i];
      s2 += static_cast<double>(x2[i]) * x2[i];
      s3 += static_cast<double>(x3[i]) * x3[i];
    }
    ss[0] = s0, ss[1] = s1, ss[2] = s2, ss[3] = s3;
    return;
  }
  for (int64_t j = 0; j < n; ++j) {
    const float* xr = x + j * dim;
    double s = 0;
    for (int64_t i = 0; i < dim; ++i) s += static_cast<double>(xr[i]) * xr[i];
    ss[j] = s;
  }
}

}  // namespace

void RmsNorm(const float* x, const float* w, int64_t rows, int64_t dim, float eps, float* y) {
  double sums[kInterleave];
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    // The mean square in double: one pass over a few thousand values, exact enough that the
    // norm adds nothing measurable to the f32 error budget.
    if (r % kInterleave == 0) SumSquares(xr, std::min(kInterleave, rows - r), dim, sums);
    const double ss = sums[r % kInterleave];
    const double scale = 1.0 / std::sqrt(ss / static_cast<double>(dim) + static_cast<double>(eps));
    if (w) {
      for (int64_t i = 0; i < dim; ++i) yr[i] = static_cast<float>(xr[i] * scale) * w[i];
    } else {
      for (int64_t i = 0; i < dim; ++i) yr[i] = static_cast<float>(xr[i] * scale);
    }
  }
}

MatMulInput RmsNormQuantize(const float* x, const float* w, int64_t rows, int64_t dim, float eps, float* a,
                            kernels::ActBlock* xq, ThreadPool* pool) {
  const kernels::KernelTable& k = kernels::ActiveKernels();
  if (xq != nullptr) GEMLET_CHECK(dim % kQBlock == 0);
  const int64_t nb = dim / kQBlock;
  ForRows(rows, pool, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r += kInterleave) {  // a few rows at a time, still in L1 when quantized
      const int64_t n = std::min(kInterleave, r1 - r);
      RmsNorm(x + r * dim, w, n, dim, eps, a + r * dim);
      for (int64_t j = r; xq != nullptr && j < r + n; ++j) k.quantize_act(a + j * dim, xq + j * nb, dim);
    }
  });
  return MatMulInput(a, xq);
}

void AddRmsNorm(float* x, float* d, const float* w, int64_t rows, int64_t dim, float eps, float scale,
                ThreadPool* pool) {
  ForRows(rows, pool, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* xr = x + r * dim;
      float* dr = d + r * dim;
      if ((r - r0) % kInterleave == 0) RmsNorm(dr, w, std::min(kInterleave, r1 - r), dim, eps, dr);
      for (int64_t i = 0; i < dim; ++i) xr[i] += dr[i];
      if (scale != 1.0f) {
        for (int64_t i = 0; i < dim; ++i) xr[i] *= scale;
      }
    }
  });
}

}  // namespace gemlet::ops
