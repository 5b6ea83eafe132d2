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

// ---- bf16 products (DenseAttentionMath::kBf16) ----
// The keys and values in bf16 pairs for gemm_acc_bf16 (in the caller's scratch), per KV head g
// and tile j: the keys' pairs of d, kp [hd/2, kKeyTile, 2] (k[c][d] at (d/2)·2·kKeyTile + 2c +
// d % 2), then the values' pairs of keys, vp [kKeyTile/2, hd, 2] (v[c][d] at (c/2)·2·hd + 2d +
// c % 2); a tile's missing keys are zero.
struct PackedBf16 {
  uint16_t* base;
  int64_t tiles, hd;
  uint16_t* K(int64_t g, int64_t j) const { return base + ((g * tiles + j) * 2) * hd * kKeyTile; }
  uint16_t* V(int64_t g, int64_t j) const { return K(g, j) + hd * kKeyTile; }
};

void PackTileBf16(const kernels::KernelTable& kt, const float* k, const float* v, int64_t kv_stride, int64_t N,
                  int64_t g, int64_t j, const PackedBf16& p) {
  const int64_t hd = p.hd, u0 = j * kKeyTile, n = std::min(kKeyTile, N - u0);
  uint16_t* kp = p.K(g, j);
  uint16_t* vp = p.V(g, j);
  std::fill(kp, kp + 2 * hd * kKeyTile, uint16_t{0});
  uint16_t row[2][1024];
  GEMLET_CHECK(hd <= 1024);
  for (int64_t c = 0; c < n; ++c) {
    kt.f32_to_bf16(k + (u0 + c) * kv_stride + g * hd, row[0], hd);
    kt.f32_to_bf16(v + (u0 + c) * kv_stride + g * hd, row[1], hd);
    for (int64_t d = 0; d < hd; ++d) {
      kp[(d / 2) * 2 * kKeyTile + 2 * c + d % 2] = row[0][d];
      vp[(c / 2) * 2 * hd + 2 * d + c % 2] = row[1][d];
    }
  }
}

// AttendBlock with bf16 products.
void AttendBlockBf16(const kernels::KernelTable& kt, const DenseAttentionShape& s, const PackedBf16& p, int64_t N,
                     const float* q, int64_t q_stride, int64_t R, int64_t h, float* out, int64_t out_stride) {
  const int64_t hd = s.head_dim, g = h / (s.n_heads / s.n_kv_heads);
  // Per-thread buffers: scores sc [R, kKeyTile], output o [R, hd], m, l, corr [R] (f32); the
  // scaled queries qb [R, hd] and weights pb [R, kKeyTile] in bf16.
  thread_local std::vector<float> buf;
  thread_local std::vector<uint16_t> hbuf;
  const int64_t need = kQueryBlock * kKeyTile + kQueryBlock * hd + 3 * kQueryBlock + hd;
  if (static_cast<int64_t>(buf.size()) < need) buf.resize(need);
  if (static_cast<int64_t>(hbuf.size()) < kQueryBlock * (hd + kKeyTile)) hbuf.resize(kQueryBlock * (hd + kKeyTile));
  float* const sc = buf.data();
  float* const o = sc + kQueryBlock * kKeyTile;
  float* const m = o + kQueryBlock * hd;
  float* const l = m + kQueryBlock;
  float* const corr = l + kQueryBlock;
  float* const qs = corr + kQueryBlock;  // [hd]
  uint16_t* const qb = hbuf.data();
  uint16_t* const pb = qb + kQueryBlock * hd;
  for (int64_t r = 0; r < R; ++r) {
    const float* qr = q + r * q_stride + h * hd;
    std::copy(qr, qr + hd, qs);
    if (s.scale != 1.0f) ScaleRow(qs, s.scale, hd);
    kt.f32_to_bf16(qs, qb + r * hd, hd);
    m[r] = -std::numeric_limits<float>::infinity();
    l[r] = 0.0f;
  }
  std::fill(o, o + R * hd, 0.0f);
  for (int64_t j = 0; j < p.tiles; ++j) {
    const int64_t n = std::min(kKeyTile, N - j * kKeyTile), n2 = (n + 1) / 2 * 2;
    std::fill(sc, sc + R * kKeyTile, 0.0f);
    kt.gemm_acc_bf16(qb, hd, R, p.K(g, j), 2 * kKeyTile, hd, n, sc, kKeyTile);
    // The weights straight to bf16 (an odd n's last partner +0).
    kt.online_softmax_bf16(sc, kKeyTile, R, n, m, l, corr, pb, kKeyTile);
    for (int64_t r = 0; r < R; ++r) {
      if (corr[r] != 1.0f) ScaleRow(o + r * hd, corr[r], hd);
    }
    kt.gemm_acc_bf16(pb, kKeyTile, R, p.V(g, j), 2 * hd, n2, hd, o, hd);
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
  const int64_t blocks = (T + kQueryBlock - 1) / kQueryBlock;
  if (s.math == DenseAttentionMath::kBf16 && kt.gemm_acc_bf16 != nullptr && kt.online_softmax_bf16 != nullptr &&
      hd % 2 == 0) {
    // 2·tiles·kKeyTile·hd bf16 values: within the f32 path's scratch.
    const PackedBf16 p{reinterpret_cast<uint16_t*>(scratch), tiles, hd};
    ParallelForOrInline(pool, Hkv * tiles, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) PackTileBf16(kt, k, v, kv_stride, N, i / tiles, i % tiles, p);
    });
    ParallelForOrInline(pool, s.n_heads * blocks, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t h = i / blocks, t0 = i % blocks * kQueryBlock, R = std::min(kQueryBlock, T - t0);
        AttendBlockBf16(kt, s, p, N, q + t0 * q_stride, q_stride, R, h, out + t0 * out_stride, out_stride);
      }
    });
    return;
  }
  const Packed p{scratch, scratch + Hkv * tiles * hd * kKeyTile, tiles};
  ParallelForOrInline(pool, Hkv * tiles, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) PackTile(k, v, kv_stride, N, hd, i / tiles, i % tiles, p);
  });
  ParallelForOrInline(pool, s.n_heads * blocks, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t h = i / blocks, t0 = i % blocks * kQueryBlock, R = std::min(kQueryBlock, T - t0);
      AttendBlock(kt, s, p, N, q + t0 * q_stride, q_stride, R, h, out + t0 * out_stride, out_stride);
    }
  });
}

}  // namespace gemlet::ops
