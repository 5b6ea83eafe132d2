// RMSNorm over the innermost dimension: the weight is used as stored (no
// 1 + w) and eps sits inside the root. Also its fused forms around a block's products: the
// pre-norm fused with the activation quantization of the products that read it, and the
// post-norm fused with the residual add (one pass per row while the row is in cache).
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "ops/matmul.h"

namespace gemlet::ops {

// y[r, :] = x[r, :] · (mean(x[r, :]²) + eps)^−½ · w  for r < rows; `w` [dim] may be null (no
// scale, as for a value norm). x [rows, dim], y [rows, dim]; y == x is allowed.
void RmsNorm(const float* x, const float* w, int64_t rows, int64_t dim, float eps, float* y);

// A block's pre-norm and the int8 quantization of its output for the products that read it:
// a [rows, dim] = RmsNorm(x; w) and, if xq is not null, xq [rows, dim/32] = the kernel table's
// quantize_act of each row of a, made right after the row while it is still in L1 (dim a
// multiple of 32 then). Returns {a, xq} to hand to MatMul / MatMulShared / MatMulGeGlu, which
// then skip their own quantization pass. The same bits as RmsNorm followed by the products
// quantizing a themselves. Rows are split across `pool` (may be null) when there are many.
MatMulInput RmsNormQuantize(const float* x, const float* w, int64_t rows, int64_t dim, float eps, float* a,
                            kernels::ActBlock* xq, ThreadPool* pool);

// The post-norm residual add: x[r, :] = (x[r, :] + RmsNorm(d[r, :]; w)) · scale, one pass per row
// (scale = 1 where there is no layer scalar; a model's per-layer scalar multiplies the whole
// residual after the layer's last block). d is left holding RmsNorm(d; w). The same bits as
// RmsNorm(d), AddInPlace and Scale (ops/activation.h). Rows split across `pool` (may be null).
void AddRmsNorm(float* x, float* d, const float* w, int64_t rows, int64_t dim, float eps, float scale,
                ThreadPool* pool);

}  // namespace gemlet::ops
