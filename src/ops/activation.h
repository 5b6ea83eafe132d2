// Element-wise activations: tanh-approximated GELU (PyTorch gelu(approximate="tanh"), HF
// "gelu_pytorch_tanh"), the GeGLU gate, and the final logit soft cap.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace gemlet::ops {

// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). Not the erf GELU.
inline float GeluTanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

// GeluTanh with tanh from a branch-free exp polynomial (absolute error of tanh ≤ ~2e-7), the
// form the array functions below use so that their loops vectorize.
float GeluTanhFast(float x);

// x[i] = e^x[i] (≤ 2 ulp; below −87 gives e^−87 ≈ 1.6e-38, above 88 gives e^88; NaN stays NaN).
// Vectorized; used for softmax-style weights (the sampler).
void ExpInPlace(float* x, int64_t n);

// x[i] = GeluTanhFast(x[i]) for i < n.
void GeluTanhInPlace(float* x, int64_t n);
// out[i] = GeluTanhFast(gate[i]) · up[i] for i < n (a gated MLP: act(gate_proj(x)) * up_proj(x)).
// out may alias gate or up.
void GeGlu(const float* gate, const float* up, int64_t n, float* out);
// x[i] = cap · tanh(x[i] / cap) (the fast tanh); cap <= 0 leaves x unchanged.
void Softcap(float* x, int64_t n, float cap);
// x[i] *= s.
void Scale(float* x, int64_t n, float s);
// y[i] += x[i].
void AddInPlace(float* y, const float* x, int64_t n);

// The closed range values are clamped to (a clipped linear's input or output bounds); the
// default clamps nothing.
struct ClampRange {
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
  // False if clamping changes no value (both bounds infinite).
  bool active() const { return !(std::isinf(lo) && lo < 0 && std::isinf(hi) && hi > 0); }
};
// y[i] = min(max(x[i], r.lo), r.hi) (NaN stays NaN); y == x is allowed.
void Clamp(const float* x, int64_t n, ClampRange r, float* y);
// GeGlu of the clamped products (a clipped gate and up): out[i] = GeluTanhFast(clamp(gate[i],
// g)) · clamp(up[i], u), the same bits as Clamp then GeGlu, in one pass. out may alias either.
void GeGlu(const float* gate, const float* up, int64_t n, float* out, ClampRange g, ClampRange u);

}  // namespace gemlet::ops
