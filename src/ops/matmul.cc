#include "ops/matmul.h"

#include <algorithm>
#include <vector>

#include "kernels/ref/quant.h"

namespace gemlet::ops {

namespace {

// Tokens per tile: a tile of x stays in cache while every weight row of a thread's range
// passes over it; each row is dequantized once per tile.
constexpr int64_t kTokenTile = 32;
// Weight rows per ParallelFor grain.
constexpr int64_t kRowGrain = 16;

void MatMulExactRows(const Weight& w, const float* x, int64_t T, float* y, int64_t r0, int64_t r1) {
  thread_local std::vector<float> row_buf;
  const bool is_f32 = w.type == TensorType::kF32;
  if (!is_f32 && static_cast<int64_t>(row_buf.size()) < w.cols) row_buf.resize(w.cols);
  for (int64_t t0 = 0; t0 < T; t0 += kTokenTile) {
    const int64_t t1 = std::min(T, t0 + kTokenTile);
    for (int64_t r = r0; r < r1; ++r) {
      const float* wr;
      if (is_f32) {
        wr = reinterpret_cast<const float*>(w.row(r));
      } else {
        kernels::DequantizeRowRef(w.type, w.row(r), row_buf.data(), w.cols);
        wr = row_buf.data();
      }
      for (int64_t t = t0; t < t1; ++t) y[t * w.rows + r] = DotF32(wr, x + t * w.cols, w.cols);
    }
  }
}

}  // namespace

const char* MatMulModeName(MatMulMode mode) { return mode == MatMulMode::kExact ? "exact" : "fast"; }

float DotF32(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  for (int j = 0; i < n; ++i, ++j) acc[j] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

void MatMul(const Weight& w, const float* x, int64_t T, float* y, MatMulMode mode, ThreadPool* pool) {
  if (T <= 0 || w.rows <= 0) return;
  // kFast: the int8 kernels (src/kernels) will be dispatched here; exact math until then.
  (void)mode;
  if (pool == nullptr) {
    MatMulExactRows(w, x, T, y, 0, w.rows);
    return;
  }
  pool->ParallelFor(
      w.rows, [&](int64_t r0, int64_t r1) { MatMulExactRows(w, x, T, y, r0, r1); }, kRowGrain);
}

}  // namespace gemlet::ops
