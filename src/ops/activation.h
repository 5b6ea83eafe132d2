// Element-wise activations: tanh-approximated GELU (PyTorch gelu(approximate="tanh"), HF
// "gelu_pytorch_tanh"), the GeGLU gate, and the final logit soft cap.
#pragma once

#include <cmath>
#include <cstdint>

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

}  // namespace gemlet::ops
