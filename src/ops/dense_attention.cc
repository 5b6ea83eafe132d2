#include "ops/dense_attention.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <vector>

#include "kernels/kernels.h"

namespace gemlet::ops {

namespace {

constexpr int64_t kKeyTile = kDenseKeyTile;
// Query rows per work unit: they share every packed K and V tile while it is in cache.
constexpr int64_t kQueryBlock = 64;

// x[i] *= c
void ScaleRow(float* x, float c, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= c;
}

// The keys and values rearranged for the kernels (in the caller's scratch): per KV head g, Kᵀ
// in tiles kt [tiles, hd, kKeyTile] (the last tile's missing keys zero), then the values
// vp [N, hd].
struct Packed {
  float* kt;
  float* vp;
  int64_t tiles;
  float* KtTile(int64_t g, int64_t j, int64_t hd) const { return kt + ((g * tiles + j) * hd) * kKeyTile; }
  float* VRow(int64_t g, int64_t u, int64_t N, int64_t hd) const { return vp + (g * N + u) * hd; }
};

int64_t Tiles(int64_t N) { return (N + kKeyTile - 1) / kKeyTile; }

void PackTile(const float* k, const float* v, int64_t kv_stride, int64_t N, int64_t hd, int64_t g, int64_t j,
              const Packed& p) {
  float* kt = p.KtTile(g, j, hd);
  const int64_t u0 = j * kKeyTile, n = std::min(kKeyTile, N - u0);
  for (int64_t c = 0; c < n; ++c) {
    const float* kr = k + (u0 + c) * kv_stride + g * hd;
    for (int64_t d = 0; d < hd; ++d) kt[d * kKeyTile + c] = kr[d];
    const float* vr = v + (u0 + c) * kv_stride + g * hd;
    std::copy(vr, vr + hd, p.VRow(g, u0 + c, N, hd));
  }
  for (int64_t d = 0; d < hd; ++d) std::fill(kt + d * kKeyTile + n, kt + (d + 1) * kKeyTile, 0.0f);
}

// One work unit: R ≤ kQueryBlock query rows of head h (row r at q + r·q_stride) over every key.
void AttendBlock(const kernels::KernelTable& kt, const DenseAttentionShape& s, const Packed& p, int64_t N,
                 const float* q, int64_t q_stride, int64_t R, int64_t h, float* out, int64_t out_stride) {
  const int64_t hd = s.head_dim, g = h / (s.n_heads / s.n_kv_heads);
  // Per-thread buffers: queries qb [R, hd], scores sc [R, kKeyTile], output o [R, hd], and per
  // row the running maximum m, running sum l and the tile's correction corr [R].
  thread_local std::vector<float> buf;
  const int64_t need = 2 * kQueryBlock * hd + kQueryBlock * kKeyTile + 3 * kQueryBlock;
  if (static_cast<int64_t>(buf.size()) < need) buf.resize(need);
  float* const qb = buf.data();
  float* const sc = qb + kQueryBlock * hd;
  float* const o = sc + kQueryBlock * kKeyTile;
  float* const m = o + kQueryBlock * hd;
  float* const l = m + kQueryBlock;
  float* const corr = l + kQueryBlock;
  for (int64_t r = 0; r < R; ++r) {
    const float* qr = q + r * q_stride + h * hd;
    std::copy(qr, qr + hd, qb + r * hd);
    if (s.scale != 1.0f) ScaleRow(qb + r * hd, s.scale, hd);
    m[r] = -std::numeric_limits<float>::infinity();
    l[r] = 0.0f;
  }
  std::fill(o, o + R * hd, 0.0f);
  for (int64_t j = 0; j < p.tiles; ++j) {
    const int64_t n = std::min(kKeyTile, N - j * kKeyTile);
    // sc[r, c] = Σ_d qb[r, d]·Kᵀ[d, c], one accumulator per score, sequential over d.
    std::fill(sc, sc + R * kKeyTile, 0.0f);
    kt.gemm_acc_f(TensorType::kF32, qb, hd, R, p.KtTile(g, j, hd), kKeyTile, hd, n, sc, kKeyTile, 0);
    // sc[r, c] = e^(score − m[r]) under the new maxima; what was accumulated under the old
    // maximum is rescaled (by exactly 1 when it did not grow, which changes nothing).
    kt.online_softmax(sc, kKeyTile, R, n, m, l, corr);
    for (int64_t r = 0; r < R; ++r) {
      if (corr[r] != 1.0f) ScaleRow(o + r * hd, corr[r], hd);
    }
    // o[r, :] += Σ_c p[r, c]·V[c, :]
    kt.gemm_acc_f(TensorType::kF32, sc, kKeyTile, R, p.VRow(g, j * kKeyTile, N, hd), hd, n, hd, o, hd, 0);
  }
  for (int64_t r = 0; r < R; ++r) {
    float* dst = out + r * out_stride + h * hd;
    std::copy(o + r * hd, o + (r + 1) * hd, dst);
    ScaleRow(dst, 1.0f / l[r], hd);
  }
}

}  // namespace

int64_t DenseAttentionScratch(const DenseAttentionShape& s, int64_t N) {
  return s.n_kv_heads * s.head_dim * (Tiles(N) * kKeyTile + N);
}

void DenseAttention(const DenseAttentionShape& s, const float* q, int64_t q_stride, int64_t T, const float* k,
                    const float* v, int64_t kv_stride, int64_t N, float* out, int64_t out_stride, float* scratch,
                    ThreadPool* pool) {
  GEMLET_CHECK(s.n_heads > 0 && s.n_kv_heads > 0 && s.n_heads % s.n_kv_heads == 0 && s.head_dim > 0 && N > 0);
  if (T <= 0) return;
  const int64_t hd = s.head_dim, Hkv = s.n_kv_heads, tiles = Tiles(N);
  const kernels::KernelTable& kt = kernels::ActiveKernels();
  std::vector<float> own;
  if (scratch == nullptr) {
    own.resize(DenseAttentionScratch(s, N));
    scratch = own.data();
  }
  const Packed p{scratch, scratch + Hkv * tiles * hd * kKeyTile, tiles};
  ParallelForOrInline(pool, Hkv * tiles, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) PackTile(k, v, kv_stride, N, hd, i / tiles, i % tiles, p);
  });
  const int64_t blocks = (T + kQueryBlock - 1) / kQueryBlock;
  ParallelForOrInline(pool, s.n_heads * blocks, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t h = i / blocks, t0 = i % blocks * kQueryBlock, R = std::min(kQueryBlock, T - t0);
      AttendBlock(kt, s, p, N, q + t0 * q_stride, q_stride, R, h, out + t0 * out_stride, out_stride);
    }
  });
}

}  // namespace gemlet::ops
