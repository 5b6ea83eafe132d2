#include "ops/activation.h"

namespace gemlet::ops {

void GeluTanhInPlace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = GeluTanh(x[i]);
}

void GeGlu(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = GeluTanh(gate[i]) * up[i];
}

void Softcap(float* x, int64_t n, float cap) {
  if (!(cap > 0)) return;
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

void Scale(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void AddInPlace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace gemlet::ops
