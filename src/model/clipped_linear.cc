#include "model/clipped_linear.h"

#include <algorithm>
#include <cmath>

#include "model/tensor_binding.h"

namespace gemlet::model {

Result<bool> SetClipBound(const TensorView& t, const std::string& bound, const std::string& what, ClippedLinear* cl) {
  float* dst = bound == "input_min"    ? &cl->in_min
               : bound == "input_max"  ? &cl->in_max
               : bound == "output_min" ? &cl->out_min
               : bound == "output_max" ? &cl->out_max
                                       : nullptr;
  if (!dst) return false;
  const float v = ToF32(t)[0];
  if (!std::isfinite(v)) return Corrupt(what + ": clip bound '" + bound + "' is not finite");
  *dst = v;
  return true;
}

Status CheckClipBounds(const ClippedLinear& cl, const std::string& what) {
  if (!(cl.in_min <= cl.in_max) || !(cl.out_min <= cl.out_max)) {
    return Corrupt(what + ": a clip bound has min above max");
  }
  return Status::Ok();
}

void ClampValues(const float* x, int64_t n, float lo, float hi, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(x[i], lo), hi);
}

namespace {

// True if clamping to [lo, hi] changes no value (no bound: ±infinity; NaN stays NaN either way).
bool Unbounded(float lo, float hi) { return std::isinf(lo) && lo < 0 && std::isinf(hi) && hi > 0; }

// ClampValues over the pool's threads when there are many values (each value alone: the same bits).
void ClampOnPool(const float* x, int64_t n, float lo, float hi, float* y, ThreadPool* pool) {
  ParallelForOrInline(
      pool, n, [&](int64_t i0, int64_t i1) { ClampValues(x + i0, i1 - i0, lo, hi, y + i0); }, int64_t{1} << 14);
}

}  // namespace

void ClippedMatMul(const ClippedLinear& L, const float* x, int64_t T, float* xc, float* y, ops::MatMulMode mode,
                   ThreadPool* pool) {
  const float* in = x;
  if (!Unbounded(L.in_min, L.in_max)) {
    ClampOnPool(x, T * L.w.cols, L.in_min, L.in_max, xc, pool);
    in = xc;
  }
  ops::MatMul(L.w, in, T, y, mode, pool);
  if (!Unbounded(L.out_min, L.out_max)) ClampOnPool(y, T * L.w.rows, L.out_min, L.out_max, y, pool);
}

}  // namespace gemlet::model
