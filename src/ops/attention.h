// Scaled dot-product attention with MQA/GQA, a causal mask and an optional sliding window,
// over keys and values that live in several segments (a KV cache ring's past, contiguous
// storage, the current chunk's fresh rows). A tiled online softmax in f32: scores are computed
// one query row and one tile of 64 keys at a time, never stored as a [T, T] matrix.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace gemlet::ops {

// Keys and values of the consecutive positions [pos0, pos0 + count). The row of position
// pos0 + i starts at k + i·stride (and v + i·stride) and holds [n_kv_heads, head_dim] floats.
struct KvSegment {
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t stride = 0;  // floats between consecutive positions' rows
  int64_t pos0 = 0;
  int64_t count = 0;
};

struct AttentionShape {
  int64_t n_heads = 0;     // H query heads
  int64_t n_kv_heads = 0;  // Hkv; query head h reads KV head h / (H / Hkv)
  int64_t head_dim = 0;
  int64_t window = 0;  // 0: causal (u <= t); W > 0: sliding (t − W < u <= t)
  float scale = 1.0f;  // multiplies q·k
};

// out[t, h, :] = Σ_u softmax_u(scale · q[t, h, :]·K[u, g, :]) · V[u, g, :], g = h / (H / Hkv),
// over the keys u of every segment that the mask allows for the query position q_pos[t].
// q, out: [T, H, head_dim] (must not overlap the segments). A query that sees no key gets
// zeros. Segments may come in any order and must not overlap; keys are visited in increasing
// position order, so the result's bits do not depend on how the keys are split into segments.
void Attention(const AttentionShape& shape, const float* q, const int64_t* q_pos, int64_t T,
               const KvSegment* segments, int n_segments, float* out, ThreadPool* pool);

}  // namespace gemlet::ops
