// Matrix products against stored weights: y[T, out] = x[T, in] · W[out, in]^T.
//
// This is the seam between the model and the kernels: the model calls MatMul for every
// projection and never touches weight bytes itself, so faster kernels slot in here.
//   kExact: f32 activations, each weight row dequantized to f32 on the fly (any TensorType),
//           f32 accumulation. Results are independent of the thread count and of how the
//           tokens are batched (each y[t, r] is one dot product in a fixed order).
//   kFast:  reserved for the int8 kernels of src/kernels (activations quantized per block);
//           until they are wired in it computes exactly like kExact.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "ops/weight.h"

namespace gemlet::ops {

enum class MatMulMode { kExact, kFast };
const char* MatMulModeName(MatMulMode mode);  // "exact", "fast"

// y [T, w.rows] = x [T, w.cols] · w^T. x and y must not overlap. `pool` may be null (serial).
void MatMul(const Weight& w, const float* x, int64_t T, float* y, MatMulMode mode, ThreadPool* pool);

// Σ a[i]·b[i] in f32 with 8 interleaved partial sums (fixed order).
float DotF32(const float* a, const float* b, int64_t n);

}  // namespace gemlet::ops
