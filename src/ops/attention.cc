#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/kernels.h"
#include "ops/matmul.h"

namespace gemlet::ops {

namespace {

// Keys per tile of the online softmax.
constexpr int64_t kKeyTile = 64;

// The element-wise loops below get an AVX2 clone on x86-64 (chosen at load time). The file is
// compiled with -ffp-contract=off (src/ops/CMakeLists.txt), so every clone rounds each
// multiply and add alike: the results are bit-identical whichever clone runs.
// ("avx2", not "arch=haswell": an arch= clone is chosen by CPU model, so AMD and newer Intel
// CPUs got the baseline code.)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GEMLET_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define GEMLET_SIMD_CLONES
#endif

// out[d] += p0·v0[d] + p1·v1[d]
GEMLET_SIMD_CLONES void Axpy2(float* __restrict out, const float* __restrict v0, const float* __restrict v1,
                              float p0, float p1, int64_t n) {
  for (int64_t d = 0; d < n; ++d) out[d] += p0 * v0[d] + p1 * v1[d];
}

// out[d] += p·v[d]
GEMLET_SIMD_CLONES void Axpy1(float* __restrict out, const float* __restrict v, float p, int64_t n) {
  for (int64_t d = 0; d < n; ++d) out[d] += p * v[d];
}

// out[d] *= c
GEMLET_SIMD_CLONES void ScaleRow(float* __restrict out, float c, int64_t n) {
  for (int64_t d = 0; d < n; ++d) out[d] *= c;
}

// Query heads [h0, h0 + nh) of one query row, which all read KV head g (eager_attention_forward
// for those (t, h)), as a tiled online softmax: for one tile of keys at a time, the scores of
// every head (the kernel table's float GEMM: keys as rows, the heads' queries as tokens), then
// per head a running maximum m and sum l, the output rescaled when m grows, and the weighted
// values. Each K/V tile is read from memory once for all the heads of the group (GQA/MQA) and
// stays in cache while they use it. Tiles are aligned to absolute key positions (multiples of
// kKeyTile) and gathered across segments, so the operations, and the bits of each head's
// result, depend neither on how the keys are split into segments (prefill, chunked prefill and
// decode agree exactly) nor on which other heads share the call. At most one tile of scores
// per head is stored.
void AttendHeads(const kernels::KernelTable& kt, const AttentionShape& s, const float* q, int64_t nh, int64_t qp,
                 int64_t g, const KvSegment* segs, int n_segs, float* out) {
  const int64_t hd = s.head_dim;
  const int64_t lo = s.window > 0 ? qp - s.window + 1 : 0;  // positions are >= 0
  int64_t first = qp + 1;  // lowest visible key position present in any segment
  for (int i = 0; i < n_segs; ++i) {
    if (segs[i].count > 0) first = std::min(first, std::max(lo, segs[i].pos0));
  }
  thread_local std::vector<float> state;  // [nh, kKeyTile] scores, then m [nh], l [nh]
  if (static_cast<int64_t>(state.size()) < nh * (kKeyTile + 2)) state.resize(nh * (kKeyTile + 2));
  thread_local std::vector<float> wide;  // f16 segments: the tile's K [kKeyTile, hd], then V
  bool any_f16 = false;
  for (int i = 0; i < n_segs; ++i) any_f16 |= segs[i].type == TensorType::kF16;
  if (any_f16 && static_cast<int64_t>(wide.size()) < 2 * kKeyTile * hd) wide.resize(2 * kKeyTile * hd);
  float* sc = state.data();
  float* m = sc + nh * kKeyTile;
  float* l = m + nh;
  const float* vp[kKeyTile];
  for (int64_t h = 0; h < nh; ++h) {
    m[h] = -std::numeric_limits<float>::infinity();
    l[h] = 0;
  }
  std::fill(out, out + nh * hd, 0.0f);
  for (int64_t t0 = first / kKeyTile * kKeyTile; t0 <= qp; t0 += kKeyTile) {
    const int64_t a = std::max(t0, lo), z = std::min(t0 + kKeyTile, qp + 1);  // tile keys [a, z)
    // Gather the tile's keys in position order from the segments that hold them.
    int64_t n = 0;
    for (int64_t u = a; u < z;) {
      const KvSegment* sg = nullptr;
      for (int i = 0; i < n_segs; ++i) {
        if (u >= segs[i].pos0 && u < segs[i].pos0 + segs[i].count) sg = &segs[i];
      }
      if (sg == nullptr) {  // a gap: skip to the next segment start in the tile
        int64_t next = z;
        for (int i = 0; i < n_segs; ++i) {
          if (segs[i].count > 0 && segs[i].pos0 > u) next = std::min(next, segs[i].pos0);
        }
        u = next;
        continue;
      }
      const int64_t e = std::min(z, sg->pos0 + sg->count);
      const int64_t r = u - sg->pos0;
      const float* k;
      int64_t k_stride;
      if (sg->type == TensorType::kF16) {  // widen this run's rows of head g into the tile buffer
        float* kw = wide.data() + n * hd;
        float* vw = wide.data() + (kKeyTile + n) * hd;
        const uint16_t* k16 = static_cast<const uint16_t*>(sg->k) + r * sg->stride + g * hd;
        const uint16_t* v16 = static_cast<const uint16_t*>(sg->v) + r * sg->stride + g * hd;
        if (sg->stride == hd) {  // one KV head: the run is contiguous
          kt.f16_to_f32(k16, kw, (e - u) * hd);
          kt.f16_to_f32(v16, vw, (e - u) * hd);
        } else {
          for (int64_t j = 0; j < e - u; ++j) {
            kt.f16_to_f32(k16 + j * sg->stride, kw + j * hd, hd);
            kt.f16_to_f32(v16 + j * sg->stride, vw + j * hd, hd);
          }
        }
        k = kw;
        k_stride = hd;
        for (int64_t j = 0; j < e - u; ++j) vp[n + j] = vw + j * hd;
      } else {
        GEMLET_CHECK(sg->type == TensorType::kF32);
        k = static_cast<const float*>(sg->k) + r * sg->stride + g * hd;
        k_stride = sg->stride;
        const float* v = static_cast<const float*>(sg->v) + r * sg->stride + g * hd;
        for (int64_t j = 0; j < e - u; ++j) vp[n + j] = v + j * sg->stride;
      }
      if (nh == 1) {
        kt.gemv_f(TensorType::kF32, k, k_stride, 0, e - u, q, hd, sc + n);
      } else {  // sc[h * kKeyTile + n + j] = q_h · k_j (same bits as the GEMV per head)
        kt.gemm_f(TensorType::kF32, k, k_stride, 0, e - u, q, hd, nh, hd, sc + n, kKeyTile);
      }
      n += e - u;
      u = e;
    }
    if (n == 0) continue;
    for (int64_t h = 0; h < nh; ++h) {
      float* sh = sc + h * kKeyTile;
      float* oh = out + h * hd;
      float mt = m[h];
      for (int64_t j = 0; j < n; ++j) {
        sh[j] *= s.scale;
        mt = std::max(mt, sh[j]);
      }
      if (mt > m[h]) {  // rescale what was accumulated under the old maximum
        const float corr = std::exp(m[h] - mt);
        l[h] *= corr;
        ScaleRow(oh, corr, hd);
        m[h] = mt;
      }
      int64_t j = 0;
      for (; j + 2 <= n; j += 2) {
        const float p0 = std::exp(sh[j] - m[h]), p1 = std::exp(sh[j + 1] - m[h]);
        l[h] += p0;
        l[h] += p1;
        const float* v0 = vp[j];
        const float* v1 = vp[j + 1];
        Axpy2(oh, v0, v1, p0, p1, hd);
      }
      for (; j < n; ++j) {
        const float p = std::exp(sh[j] - m[h]);
        l[h] += p;
        const float* v = vp[j];
        Axpy1(oh, v, p, hd);
      }
    }
  }
  for (int64_t h = 0; h < nh; ++h) {
    if (l[h] == 0) continue;  // no key visible: zeros
    const float inv = 1.0f / l[h];
    ScaleRow(out + h * hd, inv, hd);
  }
}

}  // namespace

void Attention(const AttentionShape& s, const float* q, const int64_t* q_pos, int64_t T,
               const KvSegment* segments, int n_segments, float* out, ThreadPool* pool) {
  const int64_t H = s.n_heads, hd = s.head_dim, Hkv = s.n_kv_heads;
  const int64_t group = H / Hkv;
  const kernels::KernelTable& kt = kernels::ActiveKernels();
  // Work units: (query row, KV head, slice of its query heads). Whole groups read each K/V
  // tile once; when there are fewer rows × KV heads than threads (decode), the group's heads
  // are split into one slice per thread, so every thread gets work and each K/V byte is read
  // once per thread.
  const int64_t threads = pool ? pool->num_threads() : 1;
  int64_t slices = 1;
  if (T * Hkv < threads) slices = std::min<int64_t>(group, (threads + T * Hkv - 1) / (T * Hkv));
  const int64_t per = (group + slices - 1) / slices;
  slices = (group + per - 1) / per;
  auto run = [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i / (Hkv * slices), g = i / slices % Hkv, sl = i % slices;
      const int64_t h0 = g * group + sl * per, nh = std::min(per, group - sl * per);
      AttendHeads(kt, s, q + (t * H + h0) * hd, nh, q_pos[t], g, segments, n_segments, out + (t * H + h0) * hd);
    }
  };
  const int64_t units = T * Hkv * slices;
  if (pool) {
    pool->ParallelFor(units, run);
  } else {
    run(0, units);
  }
}

void RoundToF16(float* x, int64_t n) {
  const kernels::KernelTable& kt = kernels::ActiveKernels();
  constexpr int64_t kChunk = 512;
  uint16_t h[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    kt.f32_to_f16(x + i, h, m);
    kt.f16_to_f32(h, x + i, m);
  }
}

}  // namespace gemlet::ops
