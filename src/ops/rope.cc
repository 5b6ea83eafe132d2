#include "ops/rope.h"

#include <cmath>

namespace gemlet::ops {

std::vector<float> RopeInvFreq(int64_t head_dim, double theta, int64_t pairs) {
  const int64_t half = head_dim / 2;
  std::vector<float> inv(half, 0.0f);
  const float base = static_cast<float>(theta);
  for (int64_t i = 0; i < pairs && i < half; ++i) {
    // torch.arange(0, dim, 2).float() / dim: a float32 division.
    const float e = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    // base ** e in float32: the double pow of the float32 operands, rounded once (correctly
    // rounded but for ties closer than double precision can tell).
    const float p = static_cast<float>(std::pow(static_cast<double>(base), static_cast<double>(e)));
    inv[i] = 1.0f / p;  // float32 division
  }
  return inv;
}

void RopeAngles(const std::vector<float>& inv_freq, const int64_t* pos, int64_t T, float* cos, float* sin) {
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      // The float32 angle, then cos/sin accurate to float32 (evaluated in double, rounded once).
      const double a = static_cast<double>(RopeAngle(inv_freq[i], pos[t]));
      cos[t * half + i] = static_cast<float>(std::cos(a));
      sin[t * half + i] = static_cast<float>(std::sin(a));
    }
  }
}

void ApplyRope(float* x, int64_t T, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin) {
  const int64_t half = head_dim / 2;
  for (int64_t t = 0; t < T; ++t) {
    const float* c = cos + t * half;
    const float* s = sin + t * half;
    for (int64_t h = 0; h < n_heads; ++h) {
      float* v = x + (t * n_heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * c[i] - b * s[i];
        v[i + half] = b * c[i] + a * s[i];
      }
    }
  }
}

}  // namespace gemlet::ops

namespace gemlet::ops {

void ApplyRopeSections(float* x, int64_t T, int64_t n_heads, int64_t head_dim, int n_sections,
                       const float* const* cos, const float* const* sin) {
  const int64_t sec = head_dim / n_sections, half = sec / 2;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < n_heads; ++h) {
      for (int s = 0; s < n_sections; ++s) {
        float* p = x + (t * n_heads + h) * head_dim + s * sec;
        const float* c = cos[s] + t * half;
        const float* n = sin[s] + t * half;
        for (int64_t i = 0; i < half; ++i) {
          const float a = p[i], b = p[i + half];
          p[i] = a * c[i] - b * n[i];
          p[i + half] = b * c[i] + a * n[i];
        }
      }
    }
  }
}

}  // namespace gemlet::ops
