#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/matmul.h"

namespace gemlet::ops {

namespace {

// One query row of one head (eager_attention_forward for a single (t, h)).
void AttendOne(const AttentionShape& s, const float* q, int64_t qp, int64_t g, const KvSegment* segs,
               int n_segs, float* out) {
  thread_local std::vector<float> scores;
  const int64_t hd = s.head_dim;
  const int64_t lo = s.window > 0 ? qp - s.window + 1 : 0;  // positions are >= 0
  int64_t n = 0;
  for (int i = 0; i < n_segs; ++i) n += segs[i].count;
  if (static_cast<int64_t>(scores.size()) < n) scores.resize(n);

  // Pass 1: masked scores and their maximum.
  float mx = -std::numeric_limits<float>::infinity();
  int64_t m = 0;
  for (int i = 0; i < n_segs; ++i) {
    const KvSegment& sg = segs[i];
    const int64_t b = std::max<int64_t>(0, lo - sg.pos0);
    const int64_t e = std::min<int64_t>(sg.count, qp - sg.pos0 + 1);
    for (int64_t u = b; u < e; ++u) {
      const float sc = DotF32(q, sg.k + u * sg.stride + g * hd, hd) * s.scale;
      scores[m++] = sc;
      mx = std::max(mx, sc);
    }
  }
  std::fill(out, out + hd, 0.0f);
  if (m == 0) return;
  // Pass 2: probabilities (unnormalised) and the weighted sum of values.
  float sum = 0;
  for (int64_t j = 0; j < m; ++j) {
    scores[j] = std::exp(scores[j] - mx);
    sum += scores[j];
  }
  m = 0;
  for (int i = 0; i < n_segs; ++i) {
    const KvSegment& sg = segs[i];
    const int64_t b = std::max<int64_t>(0, lo - sg.pos0);
    const int64_t e = std::min<int64_t>(sg.count, qp - sg.pos0 + 1);
    for (int64_t u = b; u < e; ++u) {
      const float p = scores[m++];
      const float* v = sg.v + u * sg.stride + g * hd;
      for (int64_t d = 0; d < hd; ++d) out[d] += p * v[d];
    }
  }
  const float inv = 1.0f / sum;
  for (int64_t d = 0; d < hd; ++d) out[d] *= inv;
}

}  // namespace

void Attention(const AttentionShape& s, const float* q, const int64_t* q_pos, int64_t T,
               const KvSegment* segments, int n_segments, float* out, ThreadPool* pool) {
  const int64_t H = s.n_heads, hd = s.head_dim;
  const int64_t group = H / s.n_kv_heads;
  auto run = [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i / H, h = i % H;
      AttendOne(s, q + (t * H + h) * hd, q_pos[t], h / group, segments, n_segments, out + (t * H + h) * hd);
    }
  };
  if (pool) {
    pool->ParallelFor(T * H, run);
  } else {
    run(0, T * H);
  }
}

}  // namespace gemlet::ops
