// Tests only: attention in double with an explicit score matrix, the reference of the
// attention tests (ops/attention_test.cc, ops/attention_q8_test.cc).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/attention.h"

namespace gemlet::ops::testing {

// Naive attention in double with an explicit [T, N] score matrix: queries at positions
// N−T … N−1 over keys at positions 0 … N−1.
inline std::vector<double> NaiveAttention(const AttentionShape& s, const std::vector<float>& q,
                                          const std::vector<float>& k, const std::vector<float>& v, int64_t T,
                                          int64_t N) {
  const int64_t H = s.n_heads, Hkv = s.n_kv_heads, hd = s.head_dim;
  std::vector<double> out(T * H * hd, 0.0);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t qp = N - T + t;
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / Hkv);
      std::vector<double> sc(N, -std::numeric_limits<double>::infinity());
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t u = 0; u < N; ++u) {
        const bool allowed = u <= qp && (s.window == 0 || u > qp - s.window);
        if (!allowed) continue;
        double d = 0;
        for (int64_t i = 0; i < hd; ++i) d += double(q[(t * H + h) * hd + i]) * k[(u * Hkv + g) * hd + i];
        sc[u] = d * s.scale;
        mx = std::max(mx, sc[u]);
      }
      double sum = 0;
      for (int64_t u = 0; u < N; ++u) sum += std::isinf(sc[u]) ? 0.0 : std::exp(sc[u] - mx);
      for (int64_t u = 0; u < N; ++u) {
        if (std::isinf(sc[u])) continue;
        const double p = std::exp(sc[u] - mx) / sum;
        for (int64_t i = 0; i < hd; ++i) out[(t * H + h) * hd + i] += p * v[(u * Hkv + g) * hd + i];
      }
    }
  }
  return out;
}

}  // namespace gemlet::ops::testing
