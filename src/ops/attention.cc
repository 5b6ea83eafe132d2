#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "base/half.h"
#include "kernels/kernels.h"
#include "kernels/ref/quant.h"
#include "ops/activation.h"

namespace gemlet::ops {

namespace {

// Keys per tile of the online softmax.
constexpr int64_t kKeyTile = 64;
// Query rows per work unit: they share each K/V tile (and the kernels' loads of it).
constexpr int64_t kRowBlock = 4;
// Keys per softmax chunk: each chunk's state is computed alone and the chunks are merged in
// key order, on every path, so decode can share one query's chunks out between threads.
constexpr int64_t kChunk = 256;

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

// out[d] *= c
GEMLET_SIMD_CLONES void ScaleRow(float* __restrict out, float c, int64_t n) {
  for (int64_t d = 0; d < n; ++d) out[d] *= c;
}

// s[j] = s[j]·scale; returns max(m, max_j s[j]).
GEMLET_SIMD_CLONES float ScaleAndMax(float* __restrict s, int64_t n, float scale, float m) {
  for (int64_t j = 0; j < n; ++j) {
    s[j] *= scale;
    m = s[j] > m ? s[j] : m;
  }
  return m;
}

// o[d] = o[d]·a + oc[d]·b
GEMLET_SIMD_CLONES void Combine(float* __restrict o, float a, const float* __restrict oc, float b, int64_t n) {
  for (int64_t d = 0; d < n; ++d) o[d] = o[d] * a + oc[d] * b;
}

// s[j] = s[j] − m
GEMLET_SIMD_CLONES void SubScalar(float* __restrict s, int64_t n, float m) {
  for (int64_t j = 0; j < n; ++j) s[j] -= m;
}

// dst[b·32 + j] = qs[j]·d of `blocks` q8 blocks (RoundToKvType). Exact (an int8 times an f16 scale needs at
// most 18 significant bits), so every clone gives the bits of kernels::DequantizeRowRef.
GEMLET_SIMD_CLONES void DequantQ8(const BlockQ8* __restrict src, int64_t blocks, float* __restrict dst) {
  for (int64_t b = 0; b < blocks; ++b) {
    const float d = F16ToF32(src[b].d);
    const int8_t* qs = src[b].qs;
    float* o = dst + b * kQBlock;
    for (int j = 0; j < kQBlock; ++j) o[j] = static_cast<float>(qs[j]) * d;
  }
}

// Asks for the `bytes` bytes from `p` on to come into cache; p may lie past the rows (the
// address is computed as an integer, and a prefetch never faults). Changes no result.
void PrefetchBytes(const void* p, int64_t bytes) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  for (uintptr_t l = a / 64 * 64; l < a + bytes; l += 64) __builtin_prefetch(reinterpret_cast<const void*>(l), 0, 2);
}

// The address of element `e` of a segment's K or V stream (for kQ8, e is a multiple of 32).
const uint8_t* ElementAt(const void* base, TensorType type, int64_t e) {
  const uint8_t* p = static_cast<const uint8_t*>(base);
  switch (type) {
    case TensorType::kF16:
      return p + e * 2;
    case TensorType::kQ8:
      return p + e / kQBlock * static_cast<int64_t>(sizeof(BlockQ8));
    default:
      return p + e * 4;
  }
}

// One run of a tile's keys: n consecutive rows of one segment, their values from row `v` on.
struct Run {
  const void* v;
  int64_t stride;
  int64_t n;
  int64_t c0;    // its first key's column in the tile
  int64_t pos0;  // its first key's position
  TensorType type;
  int64_t prefetch;  // the kernels' prefetch hint (kernels.h), in rows
};

// The keys the queries of a block may see: [lo, hi] (hi < lo: none).
struct KeySpan {
  int64_t lo = 0, hi = -1;
};
KeySpan VisibleKeys(const AttentionShape& s, const int64_t* qp, int64_t R, const KvSegment* segs, int n_segs) {
  KeySpan k{std::numeric_limits<int64_t>::max(), -1};
  for (int64_t r = 0; r < R; ++r) {
    const int64_t lo = s.window > 0 ? qp[r] - s.window + 1 : 0;  // positions are >= 0
    for (int i = 0; i < n_segs; ++i) {
      if (segs[i].count > 0 && segs[i].pos0 <= qp[r]) k.lo = std::min(k.lo, std::max(lo, segs[i].pos0));
    }
    k.hi = std::max(k.hi, qp[r]);
  }
  if (k.hi < k.lo) return KeySpan{};
  return k;
}

// The softmax state of M queries over some keys, not yet normalized: o [M, hd] = Σ_j e^(s_j − m)·V_j,
// m [M] the largest score, l [M] = Σ_j e^(s_j − m).
struct SoftmaxState {
  float* o;
  float* m;
  float* l;
};

// A block's queries, [M, hd] contiguous: f32, and (when a segment is q8) their int8 blocks
// [M, hd / 32] by the kernel table's quantize_act.
struct BlockQueries {
  const float* f;
  const kernels::ActBlock* q8;
};

// The state of a block of queries that share one KV head g — R query rows (positions qp[r]) ×
// nh heads, qb [R·nh, hd] — over the keys of chunk [k0, k0 + kChunk), as a tiled online
// softmax (eager_attention_forward for each (row, head)). For one tile of keys at a time: the
// scores of every query (keys as rows and the queries as tokens, on the cache's rows in
// place: the kernel table's float GEMM on f16 or f32 rows, its int8 GEMM on q8 rows with the
// int8 queries), per query a running maximum m and sum l, its output rescaled when m grows,
// and the weighted values (the kernel table's accumulating GEMM, every query at once, on
// f32, f16 or q8 rows in place). Each K/V tile is read once for all the queries of the block (the heads of a GQA/MQA
// group, and neighbouring prompt rows) and stays in cache while they use it. Keys a query may not see (after its position, before its window) get
// weight exactly 0, and tiles are aligned to absolute key positions (multiples of kKeyTile) and
// gathered across segments; since every kernel computes each (query, key) and (query, column)
// element alone in a fixed order, the bits of a query's state depend neither on how the keys
// are split into segments nor on which queries share the block.
void AttendChunk(const kernels::KernelTable& kt, const AttentionShape& s, BlockQueries qb, const int64_t* qp,
                 int64_t R, int64_t nh, int64_t g, const KvSegment* segs, int n_segs, KeySpan keys, int64_t k0,
                 SoftmaxState st) {
  const int64_t hd = s.head_dim, M = R * nh;
  for (int64_t i = 0; i < M; ++i) {
    st.m[i] = -std::numeric_limits<float>::infinity();
    st.l[i] = 0;
  }
  std::fill(st.o, st.o + M * hd, 0.0f);
  const int64_t t_lo = std::max(keys.lo, k0), t_hi = std::min(keys.hi, k0 + kChunk - 1);
  thread_local std::vector<float> scores;  // [M, kKeyTile]
  if (static_cast<int64_t>(scores.size()) < M * kKeyTile) scores.resize(M * kKeyTile);
  float* sc = scores.data();
  thread_local std::vector<Run> runs;
  for (int64_t t0 = t_lo / kKeyTile * kKeyTile; t0 <= t_hi; t0 += kKeyTile) {
    const int64_t a = std::max(t0, t_lo), z = std::min(t0 + kKeyTile, t_hi + 1);  // tile keys [a, z)
    // Gather the tile's keys in position order from the segments that hold them.
    int64_t n = 0;
    runs.clear();
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
      GEMLET_CHECK(sg->type == TensorType::kF32 || sg->type == TensorType::kF16 || sg->type == TensorType::kQ8);
      const int64_t e = std::min(z, sg->pos0 + sg->count);
      const int64_t elem = (u - sg->pos0) * sg->stride + g * hd;
      // sc[i * kKeyTile + n + j] = q_i · k_j (the same bits whichever queries and keys share the
      // call: both GEMMs compute each (key, query) element alone, in a fixed order).
      if (sg->type == TensorType::kQ8) {
        // Rows and heads start at block boundaries (attention.h). The int8 GEMM reads the K
        // blocks in place; the accumulating GEMM reads the V blocks in place too, each value
        // exactly qs·d (kernels.h), so as if dequantized to f32 first.
        GEMLET_CHECK(sg->stride % kQBlock == 0 && hd % kQBlock == 0 && qb.q8 != nullptr);
        const auto* kb = reinterpret_cast<const BlockQ8*>(ElementAt(sg->k, TensorType::kQ8, elem));
        // The K rows of the tile one on are asked for meanwhile (the cache's rows are out of the
        // CPU caches; V's come by the kernel's prefetch hint, as for f16, kernels.h).
        const int64_t rs = sg->stride / kQBlock, row_bytes = hd / kQBlock * static_cast<int64_t>(sizeof(BlockQ8));
        for (int64_t r = 0; r < e - u; ++r) PrefetchBytes(kb + (r + kKeyTile) * rs, row_bytes);
        kt.gemm_q8(kb, rs, 0, e - u, qb.q8, hd / kQBlock, M, hd, sc + n, kKeyTile);
        runs.push_back(Run{ElementAt(sg->v, TensorType::kQ8, elem), sg->stride, e - u, n, u, TensorType::kQ8, kKeyTile});
      } else {
        // Rows in place: the kernels prefetch the rows one tile on (the next tile's, when the
        // segment goes on), so the next tile's K and V come in while this one is computed.
        kt.gemm_f(sg->type, ElementAt(sg->k, sg->type, elem), sg->stride, 0, e - u, qb.f, hd, M, hd, sc + n,
                  kKeyTile, kKeyTile);
        runs.push_back(Run{ElementAt(sg->v, sg->type, elem), sg->stride, e - u, n, u, sg->type, kKeyTile});
      }
      n += e - u;
      u = e;
    }
    if (n == 0) continue;
    for (int64_t r = 0; r < R; ++r) {
      const int64_t lo = s.window > 0 ? qp[r] - s.window + 1 : 0;
      // The columns [c_lo, c_hi) of this tile row r may see: keys in [lo, qp[r]], which are
      // contiguous in the run order (positions increase along the tile).
      int64_t c_lo = n, c_hi = 0;
      for (const Run& run : runs) {
        const int64_t p0 = std::max(run.pos0, lo), p1 = std::min(run.pos0 + run.n, qp[r] + 1);
        if (p0 < p1) {
          c_lo = std::min(c_lo, run.c0 + p0 - run.pos0);
          c_hi = std::max(c_hi, run.c0 + p1 - run.pos0);
        }
      }
      for (int64_t h = 0; h < nh; ++h) {
        const int64_t i = r * nh + h;
        float* si = sc + i * kKeyTile;
        if (c_lo >= c_hi) {  // nothing visible in this tile: weight 0 everywhere
          std::fill(si, si + n, 0.0f);
          continue;
        }
        std::fill(si, si + c_lo, 0.0f);
        std::fill(si + c_hi, si + n, 0.0f);
        float* sv = si + c_lo;
        const int64_t nv = c_hi - c_lo;
        const float mt = ScaleAndMax(sv, nv, s.scale, st.m[i]);
        if (mt > st.m[i]) {  // rescale what was accumulated under the old maximum
          const float corr = std::exp(st.m[i] - mt);
          st.l[i] *= corr;
          ScaleRow(st.o + i * hd, corr, hd);
          st.m[i] = mt;
        }
        SubScalar(sv, nv, st.m[i]);
        ExpInPlace(sv, nv);  // p_j = e^(s_j − m)
        // l += Σ p_j in a fixed order: 8 running sums by key position mod 8, then a tree (so
        // the bits do not depend on the tile's other keys).
        float part[8] = {};
        for (const Run& run : runs) {
          const int64_t p0 = std::max(run.pos0, lo), p1 = std::min(run.pos0 + run.n, qp[r] + 1);
          for (int64_t p = p0; p < p1; ++p) part[p % 8] += si[run.c0 + p - run.pos0];
        }
        st.l[i] += ((part[0] + part[4]) + (part[2] + part[6])) + ((part[1] + part[5]) + (part[3] + part[7]));
      }
    }
    // o[i, :] += Σ_j p[i, j] · V_j for every query, one run of rows at a time.
    for (const Run& r : runs) {
      kt.gemm_acc_f(r.type, sc + r.c0, kKeyTile, M, r.v, r.stride, r.n, hd, st.o, hd, r.prefetch);
    }
  }
}

// acc ← the state over acc's keys and then c's (the chunks in increasing key order).
void Merge(SoftmaxState acc, SoftmaxState c, int64_t M, int64_t hd) {
  for (int64_t i = 0; i < M; ++i) {
    if (c.m[i] == -std::numeric_limits<float>::infinity()) continue;  // c saw no key
    float* o = acc.o + i * hd;
    const float* oc = c.o + i * hd;
    if (acc.m[i] == -std::numeric_limits<float>::infinity()) {
      std::copy(oc, oc + hd, o);
      acc.m[i] = c.m[i];
      acc.l[i] = c.l[i];
      continue;
    }
    const float mn = std::max(acc.m[i], c.m[i]);
    const float a = std::exp(acc.m[i] - mn), b = std::exp(c.m[i] - mn);
    acc.l[i] = acc.l[i] * a + c.l[i] * b;
    acc.m[i] = mn;
    Combine(o, a, oc, b, hd);
  }
}

// out rows ← o / l (a query that saw no key gets zeros).
void Finish(SoftmaxState st, int64_t R, int64_t nh, int64_t hd, float* out, int64_t out_row) {
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t h = 0; h < nh; ++h) {
      const int64_t i = r * nh + h;
      float* dst = out + r * out_row + h * hd;
      if (st.l[i] == 0) {
        std::fill(dst, dst + hd, 0.0f);
        continue;
      }
      std::copy(st.o + i * hd, st.o + (i + 1) * hd, dst);
      ScaleRow(dst, 1.0f / st.l[i], hd);
    }
  }
}

// Per-thread buffers of one block: queries [M, hd] (and their int8 blocks [M, hd / 32] when
// `q8`), then two states (running, chunk).
struct BlockBuffers {
  float* qf;
  kernels::ActBlock* q8;
  SoftmaxState run, chunk;
};
BlockBuffers Buffers(int64_t M, int64_t hd, bool q8) {
  thread_local std::vector<float> buf;
  thread_local std::vector<kernels::ActBlock> qbuf;
  const int64_t need = 3 * M * hd + 4 * M;
  if (static_cast<int64_t>(buf.size()) < need) buf.resize(need);
  if (q8 && static_cast<int64_t>(qbuf.size()) < M * hd / kQBlock) qbuf.resize(M * hd / kQBlock);
  float* p = buf.data();
  BlockBuffers b;
  b.qf = p;
  b.q8 = q8 ? qbuf.data() : nullptr;
  b.run = {p + M * hd, p + 3 * M * hd, p + 3 * M * hd + M};
  b.chunk = {p + 2 * M * hd, p + 3 * M * hd + 2 * M, p + 3 * M * hd + 3 * M};
  return b;
}

// Whether any segment holds q8 rows.
bool AnyQ8(const KvSegment* segs, int n_segs) {
  for (int i = 0; i < n_segs; ++i) {
    if (segs[i].type == TensorType::kQ8) return true;
  }
  return false;
}

// Copies R rows of nh·hd queries (row r at q + r·q_row) into qf [R·nh, hd] and, if q8 is not
// null, quantizes them into it (hd a multiple of 32). quantize_act treats each block of 32
// alone, so a query's int8 blocks are the same whichever block of queries, thread or path
// (prefill, decode, the decode's key split) it is gathered in.
BlockQueries GatherQueries(const kernels::KernelTable& kt, const float* q, int64_t q_row, int64_t R, int64_t nh,
                           int64_t hd, float* qf, kernels::ActBlock* q8) {
  for (int64_t r = 0; r < R; ++r) std::copy(q + r * q_row, q + r * q_row + nh * hd, qf + r * nh * hd);
  if (q8 != nullptr) kt.quantize_act(qf, q8, R * nh * hd);
  return BlockQueries{qf, q8};
}

// The whole attention of one block: every chunk in order, merged.
void AttendBlock(const kernels::KernelTable& kt, const AttentionShape& s, const float* q, int64_t q_row,
                 const int64_t* qp, int64_t R, int64_t nh, int64_t g, const KvSegment* segs, int n_segs,
                 bool q8, float* out, int64_t out_row) {
  const int64_t hd = s.head_dim, M = R * nh;
  const BlockBuffers b = Buffers(M, hd, q8);
  const BlockQueries qb = GatherQueries(kt, q, q_row, R, nh, hd, b.qf, b.q8);
  const KeySpan keys = VisibleKeys(s, qp, R, segs, n_segs);
  for (int64_t i = 0; i < M; ++i) {
    b.run.m[i] = -std::numeric_limits<float>::infinity();
    b.run.l[i] = 0;
  }
  for (int64_t k0 = keys.lo / kChunk * kChunk; k0 <= keys.hi; k0 += kChunk) {
    AttendChunk(kt, s, qb, qp, R, nh, g, segs, n_segs, keys, k0, b.chunk);
    Merge(b.run, b.chunk, M, hd);
  }
  Finish(b.run, R, nh, hd, out, out_row);
}

}  // namespace

void Attention(const AttentionShape& s, const float* q, const int64_t* q_pos, int64_t T,
               const KvSegment* segments, int n_segments, float* out, ThreadPool* pool) {
  const int64_t H = s.n_heads, hd = s.head_dim, Hkv = s.n_kv_heads;
  const int64_t group = H / Hkv;
  const kernels::KernelTable& kt = kernels::ActiveKernels();
  const bool q8 = AnyQ8(segments, n_segments);  // then the queries are quantized too
  GEMLET_CHECK_MSG(hd % kQBlock == 0 || !q8, "q8 KV segments need head_dim % 32 == 0");
  const int64_t threads = pool ? pool->num_threads() : 1;
  const int64_t blocks = (T + kRowBlock - 1) / kRowBlock;
  auto parallel = [&](int64_t units, const std::function<void(int64_t, int64_t)>& fn) {
    if (pool) {
      pool->ParallelFor(units, fn);
    } else {
      fn(0, units);
    }
  };

  // Few queries (decode): the keys' chunks are shared out between the threads, each with
  // every head of a KV head's group (so each K/V byte is read once), and their states merged
  // in key order — the same operations, so the same bits, as one thread doing every chunk.
  if (blocks == 1 && threads > 1) {
    const KeySpan keys = VisibleKeys(s, q_pos, T, segments, n_segments);
    const int64_t c0 = keys.lo / kChunk, nc = keys.hi < keys.lo ? 0 : keys.hi / kChunk - c0 + 1;
    if (nc * Hkv >= threads) {
      const int64_t M = T * group, per_state = M * hd + 2 * M;
      thread_local std::vector<float> states;  // [Hkv, nc] states
      if (static_cast<int64_t>(states.size()) < Hkv * nc * per_state) states.resize(Hkv * nc * per_state);
      float* const base = states.data();  // (workers see their own thread_local `states`)
      auto state = [base, M, hd, per_state](int64_t i) {
        float* p = base + i * per_state;
        return SoftmaxState{p, p + M * hd, p + M * hd + M};
      };
      // Each KV head's queries [M, hd] (and int8 blocks), gathered once for all its chunks.
      thread_local std::vector<float> queries;
      thread_local std::vector<kernels::ActBlock> queries_q8;
      if (static_cast<int64_t>(queries.size()) < Hkv * M * hd) queries.resize(Hkv * M * hd);
      if (q8 && static_cast<int64_t>(queries_q8.size()) < Hkv * M * hd / kQBlock) {
        queries_q8.resize(Hkv * M * hd / kQBlock);
      }
      // KV head g's part of each buffer (workers see their own thread_local buffers).
      float* const qf = queries.data();
      kernels::ActBlock* const qa = q8 ? queries_q8.data() : nullptr;
      auto qf_of = [qf, M, hd](int64_t g) { return qf + g * M * hd; };
      auto qa_of = [qa, M, hd](int64_t g) { return qa != nullptr ? qa + g * M * hd / kQBlock : nullptr; };
      for (int64_t g = 0; g < Hkv; ++g) GatherQueries(kt, q + g * group * hd, H * hd, T, group, hd, qf_of(g), qa_of(g));
      parallel(Hkv * nc, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t g = i / nc, c = i % nc;
          AttendChunk(kt, s, BlockQueries{qf_of(g), qa_of(g)}, q_pos, T, group, g, segments, n_segments, keys, (c0 + c) * kChunk,
                      state(i));
        }
      });
      for (int64_t g = 0; g < Hkv; ++g) {
        for (int64_t c = 1; c < nc; ++c) Merge(state(g * nc), state(g * nc + c), M, hd);
        Finish(state(g * nc), T, group, hd, out + g * group * hd, H * hd);
      }
      return;
    }
  }

  // Work units: (block of kRowBlock query rows, KV head, slice of its query heads). A block's
  // queries share every K/V tile; when there are fewer blocks × KV heads than threads, the
  // group's heads are split into one slice per thread, so every thread gets work.
  int64_t slices = 1;
  if (blocks * Hkv < threads) slices = std::min<int64_t>(group, (threads + blocks * Hkv - 1) / (blocks * Hkv));
  const int64_t per = (group + slices - 1) / slices;
  slices = (group + per - 1) / per;
  parallel(blocks * Hkv * slices, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      // Blocks alternate from both ends (0, last, 1, last − 1, ...): under a causal mask later
      // rows see more keys, and each thread's contiguous range of units gets a mix.
      const int64_t u = i / (Hkv * slices), g = i / slices % Hkv, sl = i % slices;
      const int64_t b = u % 2 == 0 ? u / 2 : blocks - 1 - u / 2;
      const int64_t t = b * kRowBlock, R = std::min(kRowBlock, T - t);
      const int64_t h0 = g * group + sl * per, nh = std::min(per, group - sl * per);
      AttendBlock(kt, s, q + (t * H + h0) * hd, H * hd, q_pos + t, R, nh, g, segments, n_segments, q8,
                  out + (t * H + h0) * hd, H * hd);
    }
  });
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

void QuantizeKvRowQ8(const float* x, BlockQ8* y, int64_t n) {
  GEMLET_CHECK(n % kQBlock == 0);
  for (int64_t b = 0; b < n / kQBlock; ++b) {
    const float* xb = x + b * kQBlock;
    float amax = 0.0f;
    for (int j = 0; j < kQBlock; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    if (F32ToF16(amax / 127.0f) == 0) {  // the scale underflows f16: the block is +0
      y[b] = BlockQ8{};
      continue;
    }
    kernels::QuantizeRowQ8Ref(xb, y + b, kQBlock);
  }
}

void RoundToKvType(TensorType type, float* x, int64_t n) {
  switch (type) {
    case TensorType::kF32:
      return;
    case TensorType::kF16:
      RoundToF16(x, n);
      return;
    case TensorType::kQ8: {
      GEMLET_CHECK_MSG(n % kQBlock == 0, "q8 KV rows are whole blocks of 32");
      constexpr int64_t kBlocks = 16;
      BlockQ8 blocks[kBlocks];
      for (int64_t i = 0; i < n; i += kBlocks * kQBlock) {
        const int64_t nb = std::min(kBlocks, (n - i) / kQBlock);
        QuantizeKvRowQ8(x + i, blocks, nb * kQBlock);
        DequantQ8(blocks, nb, x + i);
      }
      return;
    }
    default:
      GEMLET_CHECK_MSG(false, "KV rows are f32, f16 or q8");
  }
}

}  // namespace gemlet::ops
