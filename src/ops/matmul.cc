#include "ops/matmul.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "ops/activation.h"

namespace gemlet::ops {

namespace {

// Tokens per tile of the exact path: a tile of x stays in cache while every weight row of a
// thread's range passes over it; each row is dequantized once per tile.
constexpr int64_t kTokenTile = 32;
// Output rows per work unit: the kQ4x8 / kQ8x8 group size, so a unit never splits a row group.
constexpr int64_t kUnitRows = 8;
// Tokens quantized per parallel grain.
constexpr int64_t kQuantGrain = 16;

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
        DequantizeWeightRow(w, r, row_buf.data());
        wr = row_buf.data();
      }
      for (int64_t t = t0; t < t1; ++t) y[t * w.rows + r] = DotF32(wr, x + t * w.cols, w.cols);
    }
  }
}

// Rows [r0, r1) of y = x · w^T for a q4 / q8 weight: GEMV for one token, GEMM for several, over
// its row-major blocks or, if w.layout is `interleaved`, its groups of 8 rows.
template <typename Block, typename BlockX8, typename Gemv, typename Gemm, typename GemvX8, typename GemmX8>
void QuantizedRows(const Weight& w, TensorLayout interleaved, Gemv gemv, Gemm gemm, GemvX8 gemv_x8, GemmX8 gemm_x8,
                   const kernels::ActBlock* xq, int64_t T, float* y, int64_t r0, int64_t r1) {
  const int64_t K = w.cols, nb = K / kQBlock, ldy = w.rows;
  if (w.layout == interleaved) {
    const auto* wb = reinterpret_cast<const BlockX8*>(w.data);
    if (T == 1) {
      gemv_x8(wb, nb, r0, r1, xq, K, y);
    } else {
      gemm_x8(wb, nb, r0, r1, xq, nb, T, K, y, ldy);
    }
  } else {
    const auto* wb = reinterpret_cast<const Block*>(w.data);
    if (T == 1) {
      gemv(wb, nb, r0, r1, xq, K, y);
    } else {
      gemm(wb, nb, r0, r1, xq, nb, T, K, y, ldy);
    }
  }
}

// Rows [r0, r1) of y = x · w^T with the kernel table; xq: the int8 blocks of x [T, K/32]
// (only read for q4/q8 weights).
void MatMulFastRows(const kernels::KernelTable& k, const Weight& w, const float* x,
                    const kernels::ActBlock* xq, int64_t T, float* y, int64_t r0, int64_t r1) {
  const int64_t K = w.cols, ldy = w.rows;
  switch (w.type) {
    case TensorType::kQ4:
      QuantizedRows<BlockQ4, BlockQ4x8>(w, TensorLayout::kQ4x8, k.gemv_q4, k.gemm_q4, k.gemv_q4x8, k.gemm_q4x8, xq,
                                        T, y, r0, r1);
      break;
    case TensorType::kQ8:
      QuantizedRows<BlockQ8, BlockQ8x8>(w, TensorLayout::kQ8x8, k.gemv_q8, k.gemm_q8, k.gemv_q8x8, k.gemm_q8x8, xq,
                                        T, y, r0, r1);
      break;
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
      if (T == 1) {
        k.gemv_f(w.type, w.data, K, r0, r1, x, K, y);
      } else {
        // The float GEMM streams every token for each row: blocks of 32 rows (kept in L2)
        // times tiles of ~128 KiB of tokens keep both operands in cache.
        const int64_t tile = std::max<int64_t>(4, (int64_t{128} << 10) / (4 * K) / 4 * 4);
        for (int64_t rb = r0; rb < r1; rb += 32) {
          const int64_t re = std::min(r1, rb + 32);
          for (int64_t t0 = 0; t0 < T; t0 += tile) {
            const int64_t n = std::min(tile, T - t0);
            k.gemm_f(w.type, w.data, K, rb, re, x + t0 * K, K, n, K, y + t0 * ldy, ldy, 0);
          }
        }
      }
      break;
  }
}

}  // namespace

const char* MatMulModeName(MatMulMode mode) { return mode == MatMulMode::kExact ? "exact" : "fast"; }

bool UsesInt8Activations(const Weight& w, MatMulMode mode) {
  return mode == MatMulMode::kFast && (w.type == TensorType::kQ4 || w.type == TensorType::kQ8);
}

float DotF32(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  for (int j = 0; i < n; ++i, ++j) acc[j] += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

namespace {

// The int8 blocks of x [T, K] when some product in `mode` uses them (else nullptr), in the
// calling thread's buffer (the workers only read them inside the caller's MatMul call).
const kernels::ActBlock* QuantizeActivations(const kernels::KernelTable& k, MatMulInput in, int64_t T,
                                             int64_t K, bool int8, ThreadPool* pool) {
  if (!int8) return nullptr;
  if (in.xq != nullptr) return in.xq;  // made by the caller (NormQuantize)
  const float* x = in.x;
  thread_local std::vector<kernels::ActBlock> xq_buf;
  GEMLET_CHECK(K % kQBlock == 0);
  const int64_t nb = K / kQBlock;
  if (static_cast<int64_t>(xq_buf.size()) < T * nb) xq_buf.resize(T * nb);
  kernels::ActBlock* q = xq_buf.data();
  auto quantize = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) k.quantize_act(x + t * K, q + t * nb, K);
  };
  if (pool && T >= 2 * kQuantGrain) {
    pool->ParallelFor(T, quantize, kQuantGrain);
  } else {
    quantize(0, T);
  }
  return q;
}

// run(u0, u1) over the work units [0, units), split across `pool` (may be null) two units or more
// per range.
void RunUnits(int64_t units, ThreadPool* pool, const std::function<void(int64_t, int64_t)>& run) {
  if (pool == nullptr) {
    run(0, units);
  } else {
    pool->ParallelFor(units, run, 2);
  }
}

void ProductRows(const kernels::KernelTable& k, const Weight& w, const float* x, const kernels::ActBlock* xq,
                 int64_t T, float* y, int64_t r0, int64_t r1, MatMulMode mode) {
  if (mode == MatMulMode::kFast) {
    MatMulFastRows(k, w, x, xq, T, y, r0, r1);
  } else {
    MatMulExactRows(w, x, T, y, r0, r1);
  }
}

}  // namespace

void MatMulGeGlu(const Weight& gate, const Weight& up, MatMulInput in, int64_t T, float* gate_y, float* up_y,
                 MatMulMode mode, ThreadPool* pool) {
  if (T <= 0) return;
  GEMLET_CHECK(gate.cols == up.cols && gate.rows == up.rows);
  const int64_t K = gate.cols, I = gate.rows;
  const kernels::KernelTable& k = kernels::ActiveKernels();
  const float* x = in.x;
  const kernels::ActBlock* xq =
      QuantizeActivations(k, in, T, K, UsesInt8Activations(gate, mode) || UsesInt8Activations(up, mode), pool);
  auto run = [&](int64_t u0, int64_t u1) {
    const int64_t r0 = u0 * kUnitRows, r1 = std::min(I, u1 * kUnitRows);
    ProductRows(k, gate, x, xq, T, gate_y, r0, r1, mode);
    ProductRows(k, up, x, xq, T, up_y, r0, r1, mode);
    for (int64_t t = 0; t < T; ++t) GeGlu(gate_y + t * I + r0, up_y + t * I + r0, r1 - r0, gate_y + t * I + r0);
  };
  const int64_t units = (I + kUnitRows - 1) / kUnitRows;
  RunUnits(units, pool, run);
}

void MatMulGeluGated(const Weight& w, MatMulInput in, int64_t T, const float* m, int64_t ldm, float* y,
                     MatMulMode mode, ThreadPool* pool) {
  if (T <= 0 || w.rows <= 0) return;
  const int64_t N = w.rows;
  const kernels::KernelTable& k = kernels::ActiveKernels();
  const kernels::ActBlock* xq = QuantizeActivations(k, in, T, w.cols, UsesInt8Activations(w, mode), pool);
  auto run = [&](int64_t u0, int64_t u1) {
    const int64_t r0 = u0 * kUnitRows, r1 = std::min(N, u1 * kUnitRows);
    ProductRows(k, w, in.x, xq, T, y, r0, r1, mode);
    for (int64_t t = 0; t < T; ++t) GeGlu(y + t * N + r0, m + t * ldm + r0, r1 - r0, y + t * N + r0);
  };
  const int64_t units = (N + kUnitRows - 1) / kUnitRows;
  RunUnits(units, pool, run);
}

void MatMulShared(std::span<const MatMulOut> outs, MatMulInput in, int64_t T, MatMulMode mode,
                  ThreadPool* pool) {
  const float* x = in.x;
  if (T <= 0 || outs.empty()) return;
  const int64_t K = outs[0].w->cols;
  bool int8 = false;
  for (const MatMulOut& o : outs) {
    GEMLET_CHECK(o.w->cols == K);
    int8 = int8 || UsesInt8Activations(*o.w, mode);
  }
  const kernels::KernelTable& k = kernels::ActiveKernels();
  const kernels::ActBlock* xq = QuantizeActivations(k, in, T, K, int8, pool);

  // Work units of kUnitRows output rows, numbered across the products in order.
  constexpr int kMaxOuts = 8;
  GEMLET_CHECK(outs.size() <= kMaxOuts);
  int64_t first_unit[kMaxOuts + 1];
  first_unit[0] = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    first_unit[i + 1] = first_unit[i] + (outs[i].w->rows + kUnitRows - 1) / kUnitRows;
  }
  const int64_t units = first_unit[outs.size()];
  auto run = [&](int64_t u0, int64_t u1) {
    for (size_t i = 0; i < outs.size(); ++i) {
      const int64_t b = std::max(u0, first_unit[i]), e = std::min(u1, first_unit[i + 1]);
      if (b >= e) continue;
      const Weight& w = *outs[i].w;
      const int64_t r0 = (b - first_unit[i]) * kUnitRows;
      const int64_t r1 = std::min(w.rows, (e - first_unit[i]) * kUnitRows);
      ProductRows(k, w, x, xq, T, outs[i].y, r0, r1, mode);
    }
  };
  RunUnits(units, pool, run);
}

void MatMul(const Weight& w, MatMulInput x, int64_t T, float* y, MatMulMode mode, ThreadPool* pool) {
  if (T <= 0 || w.rows <= 0) return;
  const MatMulOut out{&w, y};
  MatMulShared(std::span<const MatMulOut>(&out, 1), x, T, mode, pool);
}

}  // namespace gemlet::ops
