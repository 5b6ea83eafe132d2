#include "ops/matmul.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include "ops/activation.h"

namespace gemlet::ops {

namespace {

// Tokens per tile of the exact path: a tile of x stays in cache while every weight row of a
// thread's range passes over it; each row is dequantized once per tile.
constexpr int64_t kTokenTile = 32;
// Output rows per work unit: the kQ4x8 / kQ8x8 group size, so a unit never splits a row group.
constexpr int64_t kUnitRows = 8;
// Floats of MatMulGeGlu's up tile per thread (256 KiB, in L2 when GeGlu reads it back): E2B
// at T = 512 tiles of 128 output rows; a decode step (T = 1) takes its whole range at once.
constexpr int64_t kGeGluTileFloats = int64_t{1} << 16;
// Its tiles are whole multiples of these rows: the bf16 GEMM's panels (kernels: 32 rows), also
// whole groups of the interleaved layouts. A vision tower's 2,520 patches get 32-row tiles
// (320 KiB), not 24-row ones that would leave a quarter of each panel's lanes empty.
constexpr int64_t kGeGluTileRows = 32;
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
// (only read for q4/q8 weights); xb: x rounded to bf16 [T, K] (only read for bf16 weights, and
// then used when not null: the bf16 dot products).
void MatMulFastRows(const kernels::KernelTable& k, const Weight& w, const float* x,
                    const kernels::ActBlock* xq, const uint16_t* xb, int64_t T, float* y, int64_t r0, int64_t r1) {
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
    case TensorType::kBF16:
      if (xb != nullptr) {
        // The kernel packs its rows into panels that every token passes over (cache-sized).
        k.gemm_bf16(reinterpret_cast<const uint16_t*>(w.data), K, r0, r1, xb, K, T, K, y, ldy);
        break;
      }
      [[fallthrough]];
    case TensorType::kF32:
    case TensorType::kF16:
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

const char* MatMulModeName(MatMulMode mode) {
  switch (mode) {
    case MatMulMode::kExact:
      return "exact";
    case MatMulMode::kFast:
      return "fast";
    case MatMulMode::kFastBf16:
      return "fast-bf16";
  }
  return "unknown";
}

bool UsesInt8Activations(const Weight& w, MatMulMode mode) {
  return mode != MatMulMode::kExact && (w.type == TensorType::kQ4 || w.type == TensorType::kQ8);
}

bool UsesBf16Activations(const Weight& w, MatMulMode mode) {
  return mode == MatMulMode::kFastBf16 && w.type == TensorType::kBF16 && kernels::ActiveKernels().gemm_bf16 != nullptr;
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

// Row t of the input as the products read it: x's own row, or clamped into `row` [K].
const float* InputRow(const MatMulInput& in, int64_t t, int64_t K, float* row) {
  const float* xr = in.x + t * K;
  if (!in.clamp.active()) return xr;
  Clamp(xr, K, in.clamp, row);
  return row;
}

// A row of K floats per thread for InputRow.
float* RowScratch(int64_t K) {
  thread_local std::vector<float> row;
  if (static_cast<int64_t>(row.size()) < K) row.resize(K);
  return row.data();
}

// The calling thread's activation buffers come in kSlots sets, so that one call can prepare
// two inputs (MatMulGeGlu's gate and up under different clamps), each in its own slot.
constexpr int kSlots = 2;

// The int8 blocks of x [T, K] when some product in `mode` uses them (else nullptr), in the
// calling thread's buffer `slot` (the workers only read them inside the caller's MatMul call).
const kernels::ActBlock* QuantizeActivations(const kernels::KernelTable& k, const MatMulInput& in, int64_t T,
                                             int64_t K, bool int8, ThreadPool* pool, int slot) {
  if (!int8) return nullptr;
  if (in.xq != nullptr) return in.xq;  // made by the caller (NormQuantize)
  thread_local std::vector<kernels::ActBlock> xq_bufs[kSlots];
  std::vector<kernels::ActBlock>& xq_buf = xq_bufs[slot];
  GEMLET_CHECK(K % kQBlock == 0);
  const int64_t nb = K / kQBlock;
  if (static_cast<int64_t>(xq_buf.size()) < T * nb) xq_buf.resize(T * nb);
  kernels::ActBlock* q = xq_buf.data();
  auto quantize = [&](int64_t t0, int64_t t1) {
    float* row = in.clamp.active() ? RowScratch(K) : nullptr;
    for (int64_t t = t0; t < t1; ++t) k.quantize_act(InputRow(in, t, K, row), q + t * nb, K);
  };
  if (pool && T >= 2 * kQuantGrain) {
    pool->ParallelFor(T, quantize, kQuantGrain);
  } else {
    quantize(0, T);
  }
  return q;
}

// x [T, K] rounded to bf16 when some product in `mode` uses the bf16 dot products (else
// nullptr), in the calling thread's buffer (as QuantizeActivations').
const uint16_t* RoundActivations(const kernels::KernelTable& k, const MatMulInput& in, int64_t T, int64_t K,
                                 bool bf16, ThreadPool* pool, int slot) {
  if (!bf16) return nullptr;
  thread_local std::vector<uint16_t> xb_bufs[kSlots];
  std::vector<uint16_t>& xb_buf = xb_bufs[slot];
  if (static_cast<int64_t>(xb_buf.size()) < T * K) xb_buf.resize(T * K);
  uint16_t* xb = xb_buf.data();
  auto round = [&](int64_t t0, int64_t t1) {
    if (!in.clamp.active()) {
      k.f32_to_bf16(in.x + t0 * K, xb + t0 * K, (t1 - t0) * K);
      return;
    }
    float* row = RowScratch(K);
    for (int64_t t = t0; t < t1; ++t) k.f32_to_bf16(InputRow(in, t, K, row), xb + t * K, K);
  };
  if (pool && T >= 2 * kQuantGrain) {
    pool->ParallelFor(T, round, kQuantGrain);
  } else {
    round(0, T);
  }
  return xb;
}

// x [T, K] clamped, for the products that read it as floats, in the calling thread's buffer;
// x itself when the input has no clamp or no product reads floats.
const float* FloatActivations(const MatMulInput& in, int64_t T, int64_t K, bool floats, ThreadPool* pool,
                              int slot) {
  if (!floats || !in.clamp.active()) return in.x;
  thread_local std::vector<float> xc_bufs[kSlots];
  std::vector<float>& xc_buf = xc_bufs[slot];
  if (static_cast<int64_t>(xc_buf.size()) < T * K) xc_buf.resize(T * K);
  float* xc = xc_buf.data();
  ParallelForOrInline(pool, T, [&](int64_t t0, int64_t t1) {
    Clamp(in.x + t0 * K, (t1 - t0) * K, in.clamp, xc + t0 * K);
  }, kQuantGrain);
  return xc;
}

// y[t·ldy + r] clamped for t < T, r in [r0, r1) (a work unit's rows, right after its product).
void ClampRows(float* y, int64_t T, int64_t ldy, int64_t r0, int64_t r1, ClampRange c) {
  if (!c.active()) return;
  for (int64_t t = 0; t < T; ++t) Clamp(y + t * ldy + r0, r1 - r0, c, y + t * ldy + r0);
}

// The activations of one MatMul call in the forms its products read.
struct Activations {
  const float* x;
  const kernels::ActBlock* xq;  // int8 blocks (q4/q8 weights in kFast), or nullptr
  const uint16_t* xb;           // bf16 (bf16 weights in kFast on a CPU with the bf16 dot products), or nullptr
};

// run(u0, u1) over the work units [0, units), split across `pool` (may be null) two units or more
// per range.
void RunUnits(int64_t units, ThreadPool* pool, const std::function<void(int64_t, int64_t)>& run) {
  if (pool == nullptr) {
    run(0, units);
  } else {
    pool->ParallelFor(units, run, 2);
  }
}

void ProductRows(const kernels::KernelTable& k, const Weight& w, const Activations& a, int64_t T, float* y,
                 int64_t r0, int64_t r1, MatMulMode mode) {
  if (mode != MatMulMode::kExact) {
    MatMulFastRows(k, w, a.x, a.xq, a.xb, T, y, r0, r1);
  } else {
    MatMulExactRows(w, a.x, T, y, r0, r1);
  }
}

// The activations of x [T, K] that the products of `ws` read in `mode`, in buffer set `slot`.
Activations Prepare(const kernels::KernelTable& k, const MatMulInput& in, int64_t T, int64_t K,
                    std::span<const Weight* const> ws, MatMulMode mode, ThreadPool* pool, int slot = 0) {
  GEMLET_CHECK_MSG(in.xq == nullptr || !in.clamp.active(), "a clamped input's int8 blocks are made by MatMul");
  bool int8 = false, bf16 = false, floats = false;
  for (const Weight* w : ws) {
    const bool w_int8 = UsesInt8Activations(*w, mode), w_bf16 = UsesBf16Activations(*w, mode);
    int8 = int8 || w_int8;
    bf16 = bf16 || w_bf16;
    floats = floats || (!w_int8 && !w_bf16);
  }
  return {FloatActivations(in, T, K, floats, pool, slot), QuantizeActivations(k, in, T, K, int8, pool, slot),
          RoundActivations(k, in, T, K, bf16, pool, slot)};
}

}  // namespace

void MatMulGeGlu(const Weight& gate, const Weight& up, MatMulInput in, int64_t T, float* gate_y, MatMulMode mode,
                 ThreadPool* pool, ClampRange gate_out, ClampRange up_out, std::optional<ClampRange> up_in) {
  if (T <= 0) return;
  GEMLET_CHECK(gate.cols == up.cols && gate.rows == up.rows);
  const int64_t K = gate.cols, I = gate.rows;
  const kernels::KernelTable& k = kernels::ActiveKernels();
  const Weight* const ws[] = {&gate, &up};
  // up under a clamp of its own: its activations prepared apart, in the second buffer set.
  const bool own_up = up_in.has_value() && (up_in->lo != in.clamp.lo || up_in->hi != in.clamp.hi);
  const std::span<const Weight* const> all(ws);
  const Activations a = Prepare(k, in, T, K, own_up ? all.first(1) : all, mode, pool);
  Activations au = a;
  if (own_up) {
    MatMulInput up_x = in;
    up_x.clamp = *up_in;
    au = Prepare(k, up_x, T, K, all.last(1), mode, pool, /*slot=*/1);
  }
  const bool clamped = gate_out.active() || up_out.active();
  auto run = [&](int64_t u0, int64_t u1) {
    thread_local std::vector<float> up_tile;  // [T, n] of the tile's up product
    const int64_t r0 = u0 * kUnitRows, r1 = std::min(I, u1 * kUnitRows);
    const int64_t tile = std::max(kGeGluTileRows, kGeGluTileFloats / T / kGeGluTileRows * kGeGluTileRows);
    const int64_t most = T * std::min(tile, r1 - r0);  // the largest tile's floats
    if (static_cast<int64_t>(up_tile.size()) < most) up_tile.resize(most);
    float* u = up_tile.data();
    for (int64_t c0 = r0; c0 < r1; c0 += tile) {
      const int64_t n = std::min(tile, r1 - c0);
      ProductRows(k, gate, a, T, gate_y, c0, c0 + n, mode);
      // Rows [c0, c0 + n) of up as a weight of n rows: its products land in u [T, n].
      ProductRows(k, RowRange(up, c0, n), au, T, u, 0, n, mode);
      for (int64_t t = 0; t < T; ++t) {
        float* g = gate_y + t * I + c0;
        if (clamped) {
          GeGlu(g, u + t * n, n, g, gate_out, up_out);
        } else {
          GeGlu(g, u + t * n, n, g);
        }
      }
    }
  };
  const int64_t units = (I + kUnitRows - 1) / kUnitRows;
  RunUnits(units, pool, run);
}

void MatMulGeluGated(const Weight& w, MatMulInput in, int64_t T, const float* m, int64_t ldm, float* y,
                     MatMulMode mode, ThreadPool* pool) {
  if (T <= 0 || w.rows <= 0) return;
  const int64_t N = w.rows;
  const kernels::KernelTable& k = kernels::ActiveKernels();
  const Weight* const ws[] = {&w};
  const Activations a = Prepare(k, in, T, w.cols, ws, mode, pool);
  auto run = [&](int64_t u0, int64_t u1) {
    const int64_t r0 = u0 * kUnitRows, r1 = std::min(N, u1 * kUnitRows);
    ProductRows(k, w, a, T, y, r0, r1, mode);
    for (int64_t t = 0; t < T; ++t) GeGlu(y + t * N + r0, m + t * ldm + r0, r1 - r0, y + t * N + r0);
  };
  const int64_t units = (N + kUnitRows - 1) / kUnitRows;
  RunUnits(units, pool, run);
}

void MatMulShared(std::span<const MatMulOut> outs, MatMulInput in, int64_t T, MatMulMode mode,
                  ThreadPool* pool) {
  if (T <= 0 || outs.empty()) return;
  const int64_t K = outs[0].w->cols;
  constexpr int kMaxOuts = 8;
  GEMLET_CHECK(outs.size() <= kMaxOuts);
  const Weight* ws[kMaxOuts];
  for (size_t i = 0; i < outs.size(); ++i) {
    GEMLET_CHECK(outs[i].w->cols == K);
    ws[i] = outs[i].w;
  }
  const kernels::KernelTable& k = kernels::ActiveKernels();
  const Activations a = Prepare(k, in, T, K, std::span<const Weight* const>(ws, outs.size()), mode, pool);

  // Work units of kUnitRows output rows, numbered across the products in order.
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
      ProductRows(k, w, a, T, outs[i].y, r0, r1, mode);
      ClampRows(outs[i].y, T, w.rows, r0, r1, outs[i].clamp);
    }
  };
  RunUnits(units, pool, run);
}

void MatMul(const Weight& w, MatMulInput x, int64_t T, float* y, MatMulMode mode, ThreadPool* pool,
            ClampRange out_clamp) {
  if (T <= 0 || w.rows <= 0) return;
  const MatMulOut out{&w, y, out_clamp};
  MatMulShared(std::span<const MatMulOut>(&out, 1), x, T, mode, pool);
}

}  // namespace gemlet::ops
