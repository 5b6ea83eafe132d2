// Gemma4ClippableLinear (HF modeling_gemma4.py), shared by the vision and audio towers:
// y = clamp(clamp(x, in_min, in_max) · Wᵀ, out_min, out_max).
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include "base/status.h"
#include "base/thread_pool.h"
#include "format/gemlet_file.h"
#include "ops/matmul.h"
#include "ops/weight.h"

namespace gemlet::model {

// A bound the file lacks is ±infinity (HF's buffer defaults).
struct ClippedLinear {
  ops::Weight w;  // [out, in]
  float in_min = -std::numeric_limits<float>::infinity(), in_max = std::numeric_limits<float>::infinity();
  float out_min = -std::numeric_limits<float>::infinity(), out_max = std::numeric_limits<float>::infinity();
  ops::ClampRange input() const { return {in_min, in_max}; }
  ops::ClampRange output() const { return {out_min, out_max}; }
};

// Sets the bound named `bound` ("input_min", "input_max", "output_min", "output_max") from a
// [1] tensor; false if the name is none of those. A non-finite bound is an error naming `what`.
Result<bool> SetClipBound(const TensorView& t, const std::string& bound, const std::string& what, ClippedLinear* cl);
// Errors (naming `what`) when a min lies above its max.
Status CheckClipBounds(const ClippedLinear& cl, const std::string& what);

// y [T, L.w.rows] = L(x [T, L.w.cols]), the clamps inside the product (ops::MatMul's input and
// output ranges: the input clamped as it is quantized or rounded, each work unit's output rows
// right after their product).
void ClippedMatMul(const ClippedLinear& L, const float* x, int64_t T, float* y, ops::MatMulMode mode,
                   ThreadPool* pool);

}  // namespace gemlet::model
