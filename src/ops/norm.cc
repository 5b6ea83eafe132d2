#include "ops/norm.h"

#include <cmath>

namespace gemlet::ops {

namespace {

// Rows per parallel grain of the fused forms; fewer than two grains run on the calling thread.
constexpr int64_t kRowGrain = 8;

void ForRows(int64_t rows, ThreadPool* pool, const std::function<void(int64_t, int64_t)>& fn) {
  if (pool != nullptr && pool->num_threads() > 1 && rows >= 2 * kRowGrain) {
    pool->ParallelFor(rows, fn, kRowGrain);
  } else {
    fn(0, rows);
  }
}

}  // namespace

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

MatMulInput RmsNormQuantize(const float* x, const float* w, int64_t rows, int64_t dim, float eps, float* a,
                            kernels::ActBlock* xq, ThreadPool* pool) {
  const kernels::KernelTable& k = kernels::ActiveKernels();
  if (xq != nullptr) GEMLET_CHECK(dim % kQBlock == 0);
  const int64_t nb = dim / kQBlock;
  ForRows(rows, pool, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      RmsNorm(x + r * dim, w, 1, dim, eps, a + r * dim);
      if (xq != nullptr) k.quantize_act(a + r * dim, xq + r * nb, dim);
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
      RmsNorm(dr, w, 1, dim, eps, dr);
      for (int64_t i = 0; i < dim; ++i) xr[i] += dr[i];
      if (scale != 1.0f) {
        for (int64_t i = 0; i < dim; ++i) xr[i] *= scale;
      }
    }
  });
}

}  // namespace gemlet::ops
