// Matrix products against stored weights: y[T, out] = x[T, in] · W[out, in]^T.
//
// This is the seam between the model and the kernels: the model calls MatMul for every
// projection and never touches weight bytes itself.
//   kExact: f32 activations, each weight row dequantized to f32 on the fly (any TensorType,
//           any layout), f32 accumulation in a fixed order (DotF32).
//   kFast:  the kernel table of this CPU (kernels/kernels.h, ActiveKernels()). q4 / q8
//           weights: the activations are quantized to int8 per block of 32 (once per input,
//           shared by every matrix that reads it) and multiplied with int32 accumulation —
//           GEMV for one token, GEMM for several; interleaved q4 / q8 (TensorLayout::kQ4x8,
//           kQ8x8) use the x8 kernels. f32 / f16 weights: the float kernels (f32 activations).
//   kFastBf16: kFast, except that bf16 weights, on a CPU with bf16 dot products
//           (KernelTable::gemm_bf16, AVX512_BF16), multiply the activations rounded to bf16
//           (once per input), two products per lane and instruction; elsewhere as kFast. For
//           callers whose tier allows bf16 activations (the vision tower): it is not
//           kFast's default because it moves a bf16 text model or drafter past the text
//           oracle's approximate tier.
// In both modes each y[t, r] is computed in one fixed order that depends on neither the
// thread count nor the other tokens of the batch, so results are bit-identical for every
// thread count and batch composition (the server's batched decode relies on it). kFast is
// also bit-identical across the kernel tiers (the kernels equal their scalar twins); so is
// kFastBf16 except for bf16 weights between a tier with the bf16 dot products and one without.
//
// Threads split the output rows (in groups of 8, the kQ4x8 / kQ8x8 granularity), so each weight byte
// is read by one thread once per call.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "ops/activation.h"
#include "ops/weight.h"

namespace gemlet::ops {

enum class MatMulMode { kExact, kFast, kFastBf16 };
const char* MatMulModeName(MatMulMode mode);  // "exact", "fast", "fast-bf16"

// The input x [T, K] of one or more products, optionally with its int8 blocks already made
// (xq [T, K/32], kernels::KernelTable::quantize_act of each row, e.g. by NormQuantize in
// ops/norm.h while the row was in cache). xq == nullptr: the product quantizes x itself when
// it needs the blocks. Implicit from a bare `const float*`.
// `clamp`: the products read clamp(x) instead of x (a clipped linear's input bound), clamped
// row by row as the activations are quantized or rounded (no separate pass over x; a float
// product reads a clamped copy). Not with xq.
struct MatMulInput {
  MatMulInput(const float* x_in, const kernels::ActBlock* xq_in = nullptr) : x(x_in), xq(xq_in) {}  // NOLINT
  MatMulInput(const float* x_in, ClampRange clamp_in) : x(x_in), xq(nullptr), clamp(clamp_in) {}
  const float* x;
  const kernels::ActBlock* xq;
  ClampRange clamp;
};

// y [T, w.rows] = clamp(x [T, w.cols] · w^T, out) (`out` clamps each work unit's rows right
// after its product). x and y must not overlap. `pool` may be null (serial).
void MatMul(const Weight& w, MatMulInput x, int64_t T, float* y, MatMulMode mode, ThreadPool* pool,
            ClampRange out = {});

// One product of MatMulShared: y [T, w->rows] = clamp(x · w^T, clamp).
struct MatMulOut {
  const Weight* w;
  float* y;
  ClampRange clamp = {};
};

// Several products of the same input x [T, K] (every w->cols == K), e.g. q/k/v or gate/up:
// in kFast the activations are quantized once, and all products share one parallel region
// (one thread wake-up per call instead of one per matrix). Each y equals MatMul(*w, x, ...).
void MatMulShared(std::span<const MatMulOut> outs, MatMulInput x, int64_t T, MatMulMode mode,
                  ThreadPool* pool);

// The gated GELU product of a feed-forward block, fused: gate_y [T, I] = GELU_tanh(x · gate^T) ⊙
// (x · up^T). One parallel region; each thread takes its output rows a tile at a time: the
// up product of a tile goes to the thread's own buffer (256 KiB) and is combined with the
// gate's right away, so no [T, I] scratch holds it (E2B at T = 512: 12 MiB) and no second
// pass reads it back. The same bits as the two products followed by GeGlu
// (ops/activation.h). gate_out / up_out clamp each product's tile before the GeGLU; up_in, when
// given, is up's own input clamp (x.clamp is then gate's; clipped linears may bound the same x
// differently), and where it differs the activations are prepared once for each.
void MatMulGeGlu(const Weight& gate, const Weight& up, MatMulInput x, int64_t T, float* gate_y,
                 MatMulMode mode, ThreadPool* pool, ClampRange gate_out = {}, ClampRange up_out = {},
                 std::optional<ClampRange> up_in = std::nullopt);

// A product gated by a given tensor, fused the same way: y [T, w.rows] = GELU_tanh(x · w^T) ⊙ m,
// m[t, r] at m[t·ldm + r] (e.g. a per-layer-input gate times that layer's slice of the
// per-layer inputs). Each work unit gates its own rows right after computing them. The same
// bits as MatMul, GeluTanhInPlace and the multiplication (ops/activation.h's GeGlu order).
void MatMulGeluGated(const Weight& w, MatMulInput x, int64_t T, const float* m, int64_t ldm, float* y,
                     MatMulMode mode, ThreadPool* pool);

// True if MatMul in `mode` quantizes the activations for `w` (kFast or kFastBf16, and a q4/q8 weight).
bool UsesInt8Activations(const Weight& w, MatMulMode mode);
// True if MatMul in `mode` rounds the activations to bf16 for `w` (kFastBf16, a bf16 weight,
// and the active kernel table has the bf16 dot products).
bool UsesBf16Activations(const Weight& w, MatMulMode mode);

// Σ a[i]·b[i] in f32 with 8 interleaved partial sums (fixed order).
float DotF32(const float* a, const float* b, int64_t n);

}  // namespace gemlet::ops
