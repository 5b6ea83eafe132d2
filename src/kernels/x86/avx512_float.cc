// AVX-512 (F + DQ + BW + VL) float products: float-weight GEMV/GEMM and the accumulating
// GemmAccF, for the Tier::kAvx512 table. One zmm holds the 16 running sums of the fixed
// reduction of kernels.h (lane l takes elements i ≡ l mod 16), so the results are
// bit-identical to kernels/ref/ref_kernels.cc and to the AVX2 kernels.
// GCC 12 warns that the masked builtins behind _mm512_cvtph_ps / _mm512_extractf32x8_ps read
// their _mm512_undefined_* pass-through: a known false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "kernels/x86/avx512_reduce.h"
#include "kernels/x86/x86_kernels.h"

namespace gemlet::kernels::avx512 {

namespace {

// 16 elements at element i of a row of type T, as f32; lanes outside mask k read as 0. kQ8
// (i a multiple of 16): the int8 values of i's block times its scale, exact.
template <TensorType T>
inline __m512 Load16(const void* w, int64_t i, __mmask16 k = 0xffff) {
  if constexpr (T == TensorType::kQ8) {
    const BlockQ8& blk = static_cast<const BlockQ8*>(w)[i / kQBlock];
    const __m128i q = _mm_maskz_loadu_epi8(k, blk.qs + i % kQBlock);
    const __m512 d = _mm512_set1_ps(_cvtsh_ss(blk.d));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), d);
  } else if constexpr (T == TensorType::kF32) {
    return _mm512_maskz_loadu_ps(k, static_cast<const float*>(w) + i);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(k, static_cast<const uint16_t*>(w) + i);
    if constexpr (T == TensorType::kF16) {
      return _mm512_cvtph_ps(h);
    } else {
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
  }
}

template <TensorType T>
inline float Load1(const void* w, int64_t i) {
  return _mm_cvtss_f32(_mm512_castps512_ps128(Load16<T>(static_cast<const uint8_t*>(w) + i * ElemBytes(T), 0, 1)));
}

inline float Fma1(float a, float b, float c) {
  return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

// out[r][t] = dot(row r, token t) for NR rows × NT tokens. `ahead`: bytes from each row to the
// row it prefetches, line by line as this row is read (0: none).
template <TensorType T, int NR, int NT>
inline void DotTile(const void* const* rows, const float* const* xs, int64_t K,
                    float* y, int64_t y_row, int64_t y_tok, int64_t ahead = 0) {
  __m512 acc[NR][NT];
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) acc[r][t] = _mm512_setzero_ps();
  const int64_t K16 = K / 16 * 16;
  for (int64_t i = 0; i < K16; i += 16) {
    if (ahead != 0 && (i * ElemBytes(T)) % 64 == 0) {
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) PrefetchAhead(rows[r], ahead, i * ElemBytes(T));
    }
    __m512 w[NR];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) w[r] = Load16<T>(rows[r], i);
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      const __m512 x = _mm512_loadu_ps(xs[t] + i);
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) acc[r][t] = _mm512_fmadd_ps(x, w[r], acc[r][t]);
    }
  }
  float sums[NR][NT];
  if constexpr (NR * NT == 16) {
    // Input j = σ(j) of the flattened accumulators, so that lane j holds sums[j / NT][j % NT].
    __m512 in[16];
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) {
      const int src = 4 * (j % 4) + j / 4;
      in[j] = acc[src / NT][src % NT];
    }
    _mm512_storeu_ps(&sums[0][0], Reduce16x16(in));
  } else {
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) sums[r][t] = Reduce16(acc[r][t]);
  }
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      float s = sums[r][t];
      for (int64_t i = K16; i < K; ++i) s = Fma1(xs[t][i], Load1<T>(rows[r], i), s);
      y[r * y_row + t * y_tok] = s;
    }
  }
}

// Rows [r0, r1) × NT tokens starting at x (token t at x + t·xs); Y[t·ldy + r].
template <TensorType T, int NT>
// `ahead`: bytes from each row to the row DotTile prefetches (0: none).
inline void RowsTimesTokens(const void* w, int64_t rs, int64_t r0, int64_t r1, const float* x,
                            int64_t xs, int64_t K, float* y, int64_t ldy, int64_t ahead) {
  const int64_t eb = ElemBytes(T);
  auto row = [&](int64_t r) {
    return static_cast<const void*>(static_cast<const uint8_t*>(w) + r * rs * eb);
  };
  const float* xt[NT];
  for (int t = 0; t < NT; ++t) xt[t] = x + t * xs;
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    const void* rows[4] = {row(r), row(r + 1), row(r + 2), row(r + 3)};
    DotTile<T, 4, NT>(rows, xt, K, y + r, 1, ldy, ahead);
  }
  for (; r < r1; ++r) {
    const void* rows[1] = {row(r)};
    DotTile<T, 1, NT>(rows, xt, K, y + r, 1, ldy, ahead);
  }
}

template <TensorType T>
void GemmT(const void* w, int64_t rs, int64_t r0, int64_t r1, const float* x, int64_t xs,
           int64_t T_, int64_t K, float* y, int64_t ldy, int64_t prefetch) {
  // The rows are prefetched by the first pass over them (the one that reads them from memory).
  const int64_t ahead = prefetch * rs * ElemBytes(T);
  int64_t t = 0;
  for (; t + 4 <= T_; t += 4) {
    RowsTimesTokens<T, 4>(w, rs, r0, r1, x + t * xs, xs, K, y + t * ldy, ldy, t == 0 ? ahead : 0);
  }
  const int64_t a = t == 0 ? ahead : 0;
  switch (T_ - t) {
    case 3:
      return RowsTimesTokens<T, 3>(w, rs, r0, r1, x + t * xs, xs, K, y + t * ldy, ldy, a);
    case 2:
      return RowsTimesTokens<T, 2>(w, rs, r0, r1, x + t * xs, xs, K, y + t * ldy, ldy, a);
    case 1:
      return RowsTimesTokens<T, 1>(w, rs, r0, r1, x + t * xs, xs, K, y + t * ldy, ldy, a);
    default:
      return;
  }
}

// GemmAccF for MB rows of a (MB ≤ 8) and NC·16 columns from d0 (the last vector masked by k):
// MB·NC accumulators stay in registers while n runs over the B rows.
template <TensorType T, int MB, int NC>
inline void AccTile(const float* a, int64_t lda, const void* b, int64_t bs, int64_t N, int64_t d0,
                    __mmask16 k, float* y, int64_t ldy, int64_t ahead) {
  __m512 acc[MB][NC];
#pragma GCC unroll 8
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 2
    for (int c = 0; c < NC; ++c)
      acc[m][c] = _mm512_maskz_loadu_ps(c == NC - 1 ? k : 0xffff, y + m * ldy + d0 + 16 * c);
  const int64_t row_bytes = RowBytes<T>(bs);
  const uint8_t* bp = static_cast<const uint8_t*>(b);
  for (int64_t n = 0; n < N; ++n) {
    const void* row = bp + n * row_bytes;
    if (ahead != 0) {
      if constexpr (T == TensorType::kQ8) {
        PrefetchBlockAhead(row, ahead, d0);
      } else {
        // the strip's lines (1 for f16, 2 for f32 with NC = 2)
        for (int64_t off = 0; off < NC * 16 * ElemBytes(T); off += 64) PrefetchAhead(row, ahead, d0 * ElemBytes(T) + off);
      }
    }
    __m512 bv[NC];
#pragma GCC unroll 2
    for (int c = 0; c < NC; ++c) bv[c] = Load16<T>(row, d0 + 16 * c, c == NC - 1 ? k : 0xffff);
#pragma GCC unroll 8
    for (int m = 0; m < MB; ++m) {
      const __m512 am = _mm512_set1_ps(a[m * lda + n]);
#pragma GCC unroll 2
      for (int c = 0; c < NC; ++c) acc[m][c] = _mm512_fmadd_ps(am, bv[c], acc[m][c]);
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < MB; ++m)
#pragma GCC unroll 2
    for (int c = 0; c < NC; ++c)
      _mm512_mask_storeu_ps(y + m * ldy + d0 + 16 * c, c == NC - 1 ? k : 0xffff, acc[m][c]);
}

template <TensorType T, int MB>
inline void AccRows(const float* a, int64_t lda, const void* b, int64_t bs, int64_t N, int64_t D,
                    float* y, int64_t ldy, int64_t ahead) {
  int64_t d = 0;
  for (; d + 32 <= D; d += 32) AccTile<T, MB, 2>(a, lda, b, bs, N, d, 0xffff, y, ldy, ahead);
  for (; d < D; d += 16) {
    const int64_t left = D - d;
    const __mmask16 k = left >= 16 ? 0xffff : static_cast<__mmask16>((1u << left) - 1);
    AccTile<T, MB, 1>(a, lda, b, bs, N, d, k, y, ldy, ahead);
  }
}

template <TensorType T>
void GemmAccT(const float* a, int64_t lda, int64_t M, const void* b, int64_t bs, int64_t N,
              int64_t D, float* y, int64_t ldy, int64_t prefetch) {
  // The B rows are prefetched by the first pass over them (the one that reads them from memory).
  const int64_t ahead = prefetch * RowBytes<T>(bs);
  int64_t m = 0;
  for (; m + 8 <= M; m += 8) AccRows<T, 8>(a + m * lda, lda, b, bs, N, D, y + m * ldy, ldy, m == 0 ? ahead : 0);
  a += m * lda;
  y += m * ldy;
  const int64_t pf = m == 0 ? ahead : 0;
  switch (M - m) {
    case 7:
      return AccRows<T, 7>(a, lda, b, bs, N, D, y, ldy, pf);
    case 6:
      return AccRows<T, 6>(a, lda, b, bs, N, D, y, ldy, pf);
    case 5:
      return AccRows<T, 5>(a, lda, b, bs, N, D, y, ldy, pf);
    case 4:
      return AccRows<T, 4>(a, lda, b, bs, N, D, y, ldy, pf);
    case 3:
      return AccRows<T, 3>(a, lda, b, bs, N, D, y, ldy, pf);
    case 2:
      return AccRows<T, 2>(a, lda, b, bs, N, D, y, ldy, pf);
    case 1:
      return AccRows<T, 1>(a, lda, b, bs, N, D, y, ldy, pf);
    default:
      return;
  }
}

}  // namespace

void GemmF(TensorType wt, const void* w, int64_t rs, int64_t r0, int64_t r1, const float* x,
           int64_t xs, int64_t T, int64_t K, float* y, int64_t ldy, int64_t prefetch) {
  switch (wt) {
    case TensorType::kF16:
      return GemmT<TensorType::kF16>(w, rs, r0, r1, x, xs, T, K, y, ldy, prefetch);
    case TensorType::kBF16:
      return GemmT<TensorType::kBF16>(w, rs, r0, r1, x, xs, T, K, y, ldy, prefetch);
    default:
      return GemmT<TensorType::kF32>(w, rs, r0, r1, x, xs, T, K, y, ldy, prefetch);
  }
}

void GemvF(TensorType wt, const void* w, int64_t rs, int64_t r0, int64_t r1, const float* x,
           int64_t K, float* y) {
  GemmF(wt, w, rs, r0, r1, x, K, 1, K, y, 0, 0);
}

void GemmAccF(TensorType bt, const float* a, int64_t lda, int64_t M, const void* b, int64_t bs,
              int64_t N, int64_t D, float* y, int64_t ldy, int64_t prefetch) {
  CheckAccRows(bt, bs, D);
  if (bt == TensorType::kF16) return GemmAccT<TensorType::kF16>(a, lda, M, b, bs, N, D, y, ldy, prefetch);
  if (bt == TensorType::kQ8) return GemmAccT<TensorType::kQ8>(a, lda, M, b, bs, N, D, y, ldy, prefetch);
  GemmAccT<TensorType::kF32>(a, lda, M, b, bs, N, D, y, ldy, prefetch);
}

}  // namespace gemlet::kernels::avx512
