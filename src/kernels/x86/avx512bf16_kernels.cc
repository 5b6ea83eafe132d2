// AVX512_BF16 kernels and the Tier::kAvx512Bf16 table (the Tier::kAvx512 table plus the bf16 dot
// products of kernels.h): vcvtneps2bf16 rounds the activations, vdpbf16ps multiplies them with
// bf16 weight rows, two products per lane and instruction — twice the f32 FMA's rate. Lane l of
// a zmm is one output (a row of w, or a column of gemm_acc_bf16's b) summing its pairs in order,
// so the results are the bits of GemmBf16Ref / GemmAccBf16Ref.
// GCC 12 warns that the masked builtins read their _mm512_undefined_* pass-through: a known
// false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/x86/avx512_softmax_row.h"
#include "kernels/x86/x86_kernels.h"

namespace gemlet::kernels {

namespace {

// 32 bf16 elements from p, the lanes outside k (bit i: element i) read as +0.
inline __m512bh Load32(const uint16_t* p, __mmask32 k) { return (__m512bh)_mm512_maskz_loadu_epi16(k, p); }

// ---- gemm_bf16: rows packed into panels, an outer product per pair of K ----------------------
// Output lanes are rows, so no horizontal sums: the rows [rb, rb + kPanel) of w are packed once
// per call into a panel of their pairs, p[j][c] = (w[rb+c][2j], w[rb+c][2j+1]) as one 32-bit
// lane (+0 past K and past the rows), and every token passes over it: per pair j, kPanel/16
// panel vectors, each token's pair broadcast, MB·kPanel/16 vdpbf16ps. Each output is one lane
// summing its pairs in order (the Numerics of kernels.h). Measured on Zen 5 (gemlet_ops_bench
// MatMul, the vision tower's [3072, 768] over 2,520 tokens, 1 thread): 65 % of the vdpbf16ps
// peak for the earlier dot products over K with a horizontal sum per output, 80-86 % for this.
constexpr int64_t kPanel = 32;
constexpr int kPanelVectors = kPanel / 16;
// Tokens per tile: 12 × 2 accumulators, 2 panel vectors and a broadcast stay in registers.
constexpr int kPanelTokens = 12;

// The panel of rows [rb, rb + n) (n ≤ kPanel) of w: p [pairs, kPanel] 32-bit lanes.
void PackPanel(const uint16_t* w, int64_t rs, int64_t rb, int64_t n, int64_t K, uint32_t* p) {
  const int64_t full = K / 2, pairs = (K + 1) / 2;
  for (int64_t c = 0; c < kPanel; ++c) {
    if (c >= n) {
      for (int64_t j = 0; j < pairs; ++j) p[j * kPanel + c] = 0;
      continue;
    }
    const uint16_t* row = w + (rb + c) * rs;
    for (int64_t j = 0; j < full; ++j) {
      uint32_t v;
      __builtin_memcpy(&v, row + 2 * j, 4);
      p[j * kPanel + c] = v;
    }
    if (pairs > full) p[full * kPanel + c] = row[K - 1];  // the odd last element, its partner +0
  }
}

// MB tokens (token m at x + m·xs) × the panel's rows: y[m·ldy + c] for the columns in mask[v]
// of each panel vector v.
template <int MB>
inline void PanelTile(const uint16_t* x, int64_t xs, const uint32_t* p, int64_t K, float* y, int64_t ldy,
                      const __mmask16* mask) {
  __m512 acc[MB][kPanelVectors];
#pragma GCC unroll 16
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 2
    for (int v = 0; v < kPanelVectors; ++v) acc[m][v] = _mm512_setzero_ps();
  auto step = [&](int64_t j, bool half) {
    __m512bh b[kPanelVectors];
#pragma GCC unroll 2
    for (int v = 0; v < kPanelVectors; ++v) b[v] = (__m512bh)_mm512_loadu_si512(p + j * kPanel + 16 * v);
#pragma GCC unroll 16
    for (int m = 0; m < MB; ++m) {
      uint32_t pair = 0;
      if (half) {  // the odd last element alone (the next one is past the row)
        pair = x[m * xs + 2 * j];
      } else {
        __builtin_memcpy(&pair, x + m * xs + 2 * j, 4);
      }
      const __m512bh a = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
#pragma GCC unroll 2
      for (int v = 0; v < kPanelVectors; ++v) acc[m][v] = _mm512_dpbf16_ps(acc[m][v], a, b[v]);
    }
  };
  const int64_t full = K / 2;
  for (int64_t j = 0; j < full; ++j) step(j, false);
  if (K % 2 != 0) step(full, true);
#pragma GCC unroll 16
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 2
    for (int v = 0; v < kPanelVectors; ++v) _mm512_mask_storeu_ps(y + m * ldy + 16 * v, mask[v], acc[m][v]);
}

// The tail of fewer than kPanelTokens tokens: one tile of exactly T.
template <int MB = kPanelTokens - 1>
inline void PanelTail(int64_t T, const uint16_t* x, int64_t xs, const uint32_t* p, int64_t K, float* y, int64_t ldy,
                      const __mmask16* mask) {
  if constexpr (MB > 0) {
    if (T == MB) return PanelTile<MB>(x, xs, p, K, y, ldy, mask);
    PanelTail<MB - 1>(T, x, xs, p, K, y, ldy, mask);
  }
}

void GemmBf16(const uint16_t* w, int64_t rs, int64_t r0, int64_t r1, const uint16_t* x, int64_t xs, int64_t T,
              int64_t K, float* y, int64_t ldy) {
  if (T <= 0 || r1 <= r0) return;
  thread_local std::vector<uint32_t> panel_buf;  // [pairs, kPanel]
  const int64_t pairs = (K + 1) / 2;
  if (static_cast<int64_t>(panel_buf.size()) < pairs * kPanel) panel_buf.resize(pairs * kPanel);
  uint32_t* p = panel_buf.data();
  for (int64_t rb = r0; rb < r1; rb += kPanel) {
    const int64_t n = std::min(kPanel, r1 - rb);
    PackPanel(w, rs, rb, n, K, p);
    __mmask16 mask[kPanelVectors];
    for (int v = 0; v < kPanelVectors; ++v) {
      const int64_t in = std::clamp<int64_t>(n - 16 * v, 0, 16);
      mask[v] = static_cast<__mmask16>((uint32_t{1} << in) - 1);
    }
    int64_t t = 0;
    for (; t + kPanelTokens <= T; t += kPanelTokens) PanelTile<kPanelTokens>(x + t * xs, xs, p, K, y + t * ldy + rb, ldy, mask);
    PanelTail(T - t, x + t * xs, xs, p, K, y + t * ldy + rb, ldy, mask);
  }
}

// GemmAccBf16 for MB rows of a (MB ≤ 8) and columns d0 … d0 + 16·(NC − 1) + last − 1 (last ≤ 16
// in the last vector): MB·NC accumulators stay in registers while the pairs of B's rows go by; a's
// pair (2j, 2j + 1) is broadcast as one 32-bit lane, so vdpbf16ps adds a[2j+1]·B[2j+1, d] and
// then a[2j]·B[2j, d] to lane d.
template <int MB, int NC>
inline void AccTile(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t bs, int64_t pairs, int64_t d0,
                    int64_t last, float* y, int64_t ldy) {
  __m512 acc[MB][NC];
  const __mmask16 k = static_cast<__mmask16>((uint32_t{1} << last) - 1);       // the last vector's columns
  const __mmask32 k2 = static_cast<__mmask32>((uint64_t{1} << (2 * last)) - 1);  // and their pairs' elements
#pragma GCC unroll 8
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 2
    for (int c = 0; c < NC; ++c) acc[m][c] = _mm512_maskz_loadu_ps(c == NC - 1 ? k : 0xffff, y + m * ldy + d0 + 16 * c);
  for (int64_t j = 0; j < pairs; ++j) {
    __m512bh bv[NC];
#pragma GCC unroll 2
    for (int c = 0; c < NC; ++c) bv[c] = Load32(b + j * bs + 2 * (d0 + 16 * c), c == NC - 1 ? k2 : ~__mmask32{0});
#pragma GCC unroll 8
    for (int m = 0; m < MB; ++m) {
      uint32_t pair;
      __builtin_memcpy(&pair, a + m * lda + 2 * j, 4);
      const __m512bh am = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
#pragma GCC unroll 2
      for (int c = 0; c < NC; ++c) acc[m][c] = _mm512_dpbf16_ps(acc[m][c], am, bv[c]);
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 2
    for (int c = 0; c < NC; ++c) _mm512_mask_storeu_ps(y + m * ldy + d0 + 16 * c, c == NC - 1 ? k : 0xffff, acc[m][c]);
}

template <int MB>
inline void AccRows(const uint16_t* a, int64_t lda, const uint16_t* b, int64_t bs, int64_t pairs, int64_t D, float* y,
                    int64_t ldy) {
  int64_t d = 0;
  for (; d + 32 <= D; d += 32) AccTile<MB, 2>(a, lda, b, bs, pairs, d, 16, y, ldy);
  for (; d < D; d += 16) AccTile<MB, 1>(a, lda, b, bs, pairs, d, std::min<int64_t>(16, D - d), y, ldy);
}

void GemmAccBf16(const uint16_t* a, int64_t lda, int64_t M, const uint16_t* b, int64_t bs, int64_t N, int64_t D,
                 float* y, int64_t ldy) {
  GEMLET_CHECK(N % 2 == 0);
  const int64_t pairs = N / 2;
  int64_t m = 0;
  for (; m + 8 <= M; m += 8) AccRows<8>(a + m * lda, lda, b, bs, pairs, D, y + m * ldy, ldy);
  a += m * lda;
  y += m * ldy;
  switch (M - m) {
    case 7:
      return AccRows<7>(a, lda, b, bs, pairs, D, y, ldy);
    case 6:
      return AccRows<6>(a, lda, b, bs, pairs, D, y, ldy);
    case 5:
      return AccRows<5>(a, lda, b, bs, pairs, D, y, ldy);
    case 4:
      return AccRows<4>(a, lda, b, bs, pairs, D, y, ldy);
    case 3:
      return AccRows<3>(a, lda, b, bs, pairs, D, y, ldy);
    case 2:
      return AccRows<2>(a, lda, b, bs, pairs, D, y, ldy);
    case 1:
      return AccRows<1>(a, lda, b, bs, pairs, D, y, ldy);
    default:
      return;
  }
}

// vcvtneps2bf16: round to nearest even, subnormals to ±0, NaN quieted (F32ToBf16Ref).
void F32ToBf16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? 0xffff : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(k, x + i));
    _mm256_mask_storeu_epi16(y + i, k, (__m256i)h);
  }
}

// OnlineSoftmax (avx512_softmax.cc) with each 16 weights rounded by vcvtneps2bf16 as they are
// made and stored to p: no f32 weights written back, no second pass to round them.
void OnlineSoftmaxBf16(const float* s, int64_t lds, int64_t R, int64_t n, float* m, float* l, float* corr,
                       uint16_t* p, int64_t ldp) {
  for (int64_t r = 0; r < R; ++r) {
    uint16_t* pr = p + r * ldp;
    avx512::SoftmaxRow(s + r * lds, n, m + r, l + r, corr + r, [pr](int64_t c, __m512 e, __mmask16 k) {
      _mm256_mask_storeu_epi16(pr + c, k, (__m256i)_mm512_cvtneps_pbh(e));
    });
    if (n % 2 != 0) pr[n] = 0;  // the last weight's partner
  }
}

}  // namespace

const KernelTable& Avx512Bf16Kernels() {
  static const KernelTable t = [] {
    KernelTable k = Avx512Kernels();
    k.tier = Tier::kAvx512Bf16;
    k.gemm_bf16 = GemmBf16;
    k.f32_to_bf16 = F32ToBf16;
    k.gemm_acc_bf16 = GemmAccBf16;
    k.online_softmax_bf16 = OnlineSoftmaxBf16;
    return k;
  }();
  return t;
}

}  // namespace gemlet::kernels
