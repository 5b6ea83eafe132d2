#include "model/clipped_linear.h"

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

void ClippedMatMul(const ClippedLinear& L, const float* x, int64_t T, float* y, ops::MatMulMode mode,
                   ThreadPool* pool) {
  ops::MatMul(L.w, ops::MatMulInput(x, L.input()), T, y, mode, pool, L.output());
}

}  // namespace gemlet::model
