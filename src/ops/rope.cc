#include "ops/rope.h"

#include <cmath>

namespace gemlet::ops {

std::vector<double> RopeInvFreq(int64_t head_dim, double theta, int64_t pairs) {
  const int64_t half = head_dim / 2;
  std::vector<double> inv(half, 0.0);
  for (int64_t i = 0; i < pairs && i < half; ++i) {
    inv[i] = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(head_dim));
  }
  return inv;
}

void RopeAngles(const std::vector<double>& inv_freq, const int64_t* pos, int64_t T, float* cos, float* sin) {
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double a = static_cast<double>(pos[t]) * inv_freq[i];
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
