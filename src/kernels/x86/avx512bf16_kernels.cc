// AVX512_BF16 kernels and the Tier::kAvx512Bf16 table (the Tier::kAvx512 table plus the bf16 dot
// products of kernels.h): vcvtneps2bf16 rounds the activations, vdpbf16ps multiplies them with
// bf16 weight rows, two products per lane and instruction — twice the f32 FMA's rate. Lane l of
// a zmm takes the pairs (32g + 2l, 32g + 2l + 1), the last group masked to +0, and the 16 sums
// end in the float kernels' fixed tree, so the results are the bits of GemmBf16Ref.
// GCC 12 warns that the masked builtins read their _mm512_undefined_* pass-through: a known
// false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>

#include "kernels/x86/avx512_reduce.h"
#include "kernels/x86/x86_kernels.h"

namespace gemlet::kernels {

namespace {

// 32 bf16 elements from p, the lanes outside k (bit i: element i) read as +0.
inline __m512bh Load32(const uint16_t* p, __mmask32 k) { return (__m512bh)_mm512_maskz_loadu_epi16(k, p); }

// y[r·y_row + t·y_tok] = dot(row r, token t) for NR rows × NT tokens, K elements.
template <int NR, int NT>
inline void DotTile(const uint16_t* const* rows, const uint16_t* const* xs, int64_t K, float* y, int64_t y_row,
                    int64_t y_tok) {
  __m512 acc[NR][NT];
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm512_setzero_ps();
  auto step = [&](int64_t i, __mmask32 k) {
    __m512bh w[NR];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) w[r] = Load32(rows[r] + i, k);
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      const __m512bh x = Load32(xs[t] + i, k);
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], x, w[r]);
    }
  };
  const int64_t K32 = K / 32 * 32;
  for (int64_t i = 0; i < K32; i += 32) step(i, ~__mmask32{0});
  if (K32 < K) step(K32, static_cast<__mmask32>((uint64_t{1} << (K - K32)) - 1));
  if constexpr (NR * NT == 16) {
    // Input j = σ(j) of the flattened accumulators (avx512_reduce.h), so that lane j holds the
    // sum of row j / NT, token j % NT.
    __m512 in[16];
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) {
      const int src = 4 * (j % 4) + j / 4;
      in[j] = acc[src / NT][src % NT];
    }
    float sums[16];
    _mm512_storeu_ps(sums, avx512::Reduce16x16(in));
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) y[(j / NT) * y_row + (j % NT) * y_tok] = sums[j];
  } else {
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) y[r * y_row + t * y_tok] = avx512::Reduce16(acc[r][t]);
  }
}

// Rows [r0, r1) × NT tokens from x (token t at x + t·xs); Y[t·ldy + r].
template <int NT>
inline void RowsTimesTokens(const uint16_t* w, int64_t rs, int64_t r0, int64_t r1, const uint16_t* x, int64_t xs,
                            int64_t K, float* y, int64_t ldy) {
  const uint16_t* xt[NT];
  for (int t = 0; t < NT; ++t) xt[t] = x + t * xs;
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    const uint16_t* rows[4] = {w + r * rs, w + (r + 1) * rs, w + (r + 2) * rs, w + (r + 3) * rs};
    DotTile<4, NT>(rows, xt, K, y + r, 1, ldy);
  }
  for (; r < r1; ++r) {
    const uint16_t* rows[1] = {w + r * rs};
    DotTile<1, NT>(rows, xt, K, y + r, 1, ldy);
  }
}

void GemmBf16(const uint16_t* w, int64_t rs, int64_t r0, int64_t r1, const uint16_t* x, int64_t xs, int64_t T,
              int64_t K, float* y, int64_t ldy) {
  int64_t t = 0;
  for (; t + 4 <= T; t += 4) RowsTimesTokens<4>(w, rs, r0, r1, x + t * xs, xs, K, y + t * ldy, ldy);
  switch (T - t) {
    case 3:
      return RowsTimesTokens<3>(w, rs, r0, r1, x + t * xs, xs, K, y + t * ldy, ldy);
    case 2:
      return RowsTimesTokens<2>(w, rs, r0, r1, x + t * xs, xs, K, y + t * ldy, ldy);
    case 1:
      return RowsTimesTokens<1>(w, rs, r0, r1, x + t * xs, xs, K, y + t * ldy, ldy);
    default:
      return;
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

}  // namespace

const KernelTable& Avx512Bf16Kernels() {
  static const KernelTable t = [] {
    KernelTable k = Avx512Kernels();
    k.tier = Tier::kAvx512Bf16;
    k.gemm_bf16 = GemmBf16;
    k.f32_to_bf16 = F32ToBf16;
    k.gemm_acc_bf16 = GemmAccBf16;
    return k;
  }();
  return t;
}

}  // namespace gemlet::kernels
