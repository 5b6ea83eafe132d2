// AVX2 + FMA + F16C: activation quantization and float-weight products, shared by the
// AVX2, AVX-VNNI and AVX-512 tables. Bit-identical to kernels/ref/ref_kernels.cc.
#include <immintrin.h>

#include <cstring>

#include "kernels/x86/x86_kernels.h"

namespace gemlet::kernels::avx2 {

void QuantizeAct(const float* x, ActBlock* out, int64_t K) {
  GEMLET_CHECK_MSG(K % kQBlock == 0, "quantize_act takes whole blocks of 32");
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t b = 0; b < K / kQBlock; ++b) {
    const float* xb = x + b * kQBlock;
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(xb + 8 * i);
    const __m256 m =
        _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                      _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    float d = 0.0f, id = 0.0f;
    if (amax >= 0x1p-100f) {
      d = amax / 127.0f;
      id = 127.0f / amax;
    }
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) {
      __m256 s = _mm256_mul_ps(v[i], vid);
      s = _mm256_max_ps(s, lo);  // NaN → −127 (second operand), like the scalar twin
      s = _mm256_min_ps(s, hi);
      q[i] = _mm256_cvtps_epi32(s);  // MXCSR default: round half to even
    }
    const __m256i s32 =
        _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
    const __m256i p01 = _mm256_packs_epi32(q[0], q[1]), p23 = _mm256_packs_epi32(q[2], q[3]);
    const __m256i p = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p01, p23), perm);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].q), p);
    out[b].d = d;
    out[b].sum = _mm_cvtsi128_si32(s4);
  }
}

namespace {

// 8 weights at element i of a row of type T as f32.
// kQ8 (i a multiple of 8): the int8 values of i's block times its scale, exact.
template <TensorType T>
inline __m256 Load8(const void* w, int64_t i) {
  if constexpr (T == TensorType::kQ8) {
    const BlockQ8& blk = static_cast<const BlockQ8*>(w)[i / kQBlock];
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.qs + i % kQBlock));
    const __m256 d = _mm256_set1_ps(_mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(blk.d))));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d);
  } else if constexpr (T == TensorType::kF32) {
    return _mm256_loadu_ps(static_cast<const float*>(w) + i);
  } else if constexpr (T == TensorType::kF16) {
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + i)));
  } else {
    const __m128i h =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(w) + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

template <TensorType T>
inline float Load1(const void* w, int64_t i) {
  if constexpr (T == TensorType::kQ8) {
    const BlockQ8& blk = static_cast<const BlockQ8*>(w)[i / kQBlock];
    return static_cast<float>(blk.qs[i % kQBlock]) * _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(blk.d)));
  } else if constexpr (T == TensorType::kF32) {
    return static_cast<const float*>(w)[i];
  } else {
    const uint16_t h = static_cast<const uint16_t*>(w)[i];
    if constexpr (T == TensorType::kF16) {
      return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
    } else {
      const uint32_t u = static_cast<uint32_t>(h) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
  }
}

inline float Fma1(float a, float b, float c) {
  return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}

// The fixed 16-lane reduction tree of kernels.h (lanes 0-7 in a0, 8-15 in a1).
inline float Reduce16(__m256 a0, __m256 a1) {
  const __m256 a = _mm256_add_ps(a0, a1);
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  b = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(b, _mm_movehdup_ps(b)));
}

// out[r][t] = dot(row r, token t) for NR rows × NT tokens. `ahead`: bytes from each row to the
// row it prefetches, line by line as this row is read (0: none).
template <TensorType T, int NR, int NT>
inline void DotTile(const void* const* rows, const float* const* xs, int64_t K, float out[NR][NT],
                    int64_t ahead = 0) {
  __m256 acc[NR][NT][2];
  for (int r = 0; r < NR; ++r)
    for (int t = 0; t < NT; ++t) acc[r][t][0] = acc[r][t][1] = _mm256_setzero_ps();
  const int64_t K16 = K / 16 * 16;
  for (int64_t i = 0; i < K16; i += 16) {
    if (ahead != 0 && (i * ElemBytes(T)) % 64 == 0) {
      for (int r = 0; r < NR; ++r) PrefetchAhead(rows[r], ahead, i * ElemBytes(T));
    }
    __m256 w[NR][2];
    for (int r = 0; r < NR; ++r) {
      w[r][0] = Load8<T>(rows[r], i);
      w[r][1] = Load8<T>(rows[r], i + 8);
    }
    for (int t = 0; t < NT; ++t) {
      const __m256 x0 = _mm256_loadu_ps(xs[t] + i), x1 = _mm256_loadu_ps(xs[t] + i + 8);
      for (int r = 0; r < NR; ++r) {
        acc[r][t][0] = _mm256_fmadd_ps(x0, w[r][0], acc[r][t][0]);
        acc[r][t][1] = _mm256_fmadd_ps(x1, w[r][1], acc[r][t][1]);
      }
    }
  }
  for (int r = 0; r < NR; ++r) {
    for (int t = 0; t < NT; ++t) {
      float s = Reduce16(acc[r][t][0], acc[r][t][1]);
      for (int64_t i = K16; i < K; ++i) s = Fma1(xs[t][i], Load1<T>(rows[r], i), s);
      out[r][t] = s;
    }
  }
}

template <TensorType T>
void GemmT(const void* w, int64_t rs, int64_t r0, int64_t r1, const float* x, int64_t xs,
           int64_t T_, int64_t K, float* y, int64_t ldy, int64_t prefetch) {
  const int64_t eb = ElemBytes(T);
  auto row = [&](int64_t r) {
    return static_cast<const void*>(static_cast<const uint8_t*>(w) + r * rs * eb);
  };
  // Row r is prefetched `prefetch` rows ahead by the first pass over it (the one that reads it
  // from memory).
  const int64_t ahead = prefetch * rs * eb;
  if (T_ == 1) {  // GEMV: 4 rows share each activation load
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) {
      const void* rows[4] = {row(r), row(r + 1), row(r + 2), row(r + 3)};
      float out[4][1];
      DotTile<T, 4, 1>(rows, &x, K, out, ahead);
      for (int i = 0; i < 4; ++i) y[r + i] = out[i][0];
    }
    for (; r < r1; ++r) {
      const void* rows[1] = {row(r)};
      float out[1][1];
      DotTile<T, 1, 1>(rows, &x, K, out, ahead);
      y[r] = out[0][0];
    }
    return;
  }
  for (int64_t r = r0; r < r1; ++r) {  // GEMM: each converted weight serves 4 tokens
    const void* rows[1] = {row(r)};
    int64_t t = 0;
    for (; t + 4 <= T_; t += 4) {
      const float* xt[4] = {x + t * xs, x + (t + 1) * xs, x + (t + 2) * xs, x + (t + 3) * xs};
      float out[1][4];
      DotTile<T, 1, 4>(rows, xt, K, out, t == 0 ? ahead : 0);
      for (int i = 0; i < 4; ++i) y[(t + i) * ldy + r] = out[0][i];
    }
    for (; t < T_; ++t) {
      const float* xt[1] = {x + t * xs};
      float out[1][1];
      DotTile<T, 1, 1>(rows, xt, K, out, t == 0 ? ahead : 0);
      y[t * ldy + r] = out[0][0];
    }
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

namespace {

// GemmAccF for MB rows of a (MB ≤ 4) and 16 columns d0..d0+15: 2·MB accumulators in
// registers while n runs over the B rows (each B load serves MB rows).
// `ahead`: bytes from each B row to the row to prefetch (0: none), a line per 64 bytes of d0.
template <TensorType T, int MB>
inline void AccTile16(const float* a, int64_t lda, const void* b, int64_t bs, int64_t N,
                      int64_t d0, float* y, int64_t ldy, int64_t ahead) {
  __m256 acc[MB][2];
  for (int m = 0; m < MB; ++m) {
    acc[m][0] = _mm256_loadu_ps(y + m * ldy + d0);
    acc[m][1] = _mm256_loadu_ps(y + m * ldy + d0 + 8);
  }
  const int64_t row_bytes = RowBytes<T>(bs);
  const uint8_t* bp = static_cast<const uint8_t*>(b);
  for (int64_t n = 0; n < N; ++n) {
    const void* row = bp + n * row_bytes;
    if constexpr (T == TensorType::kQ8) {
      if (ahead != 0 && d0 % kQBlock == 0) PrefetchBlockAhead(row, ahead, d0);
    } else if (ahead != 0 && (d0 * ElemBytes(T)) % 64 == 0) {
      PrefetchAhead(row, ahead, d0 * ElemBytes(T));
    }
    const __m256 b0 = Load8<T>(row, d0), b1 = Load8<T>(row, d0 + 8);
    for (int m = 0; m < MB; ++m) {
      const __m256 am = _mm256_broadcast_ss(a + m * lda + n);
      acc[m][0] = _mm256_fmadd_ps(am, b0, acc[m][0]);
      acc[m][1] = _mm256_fmadd_ps(am, b1, acc[m][1]);
    }
  }
  for (int m = 0; m < MB; ++m) {
    _mm256_storeu_ps(y + m * ldy + d0, acc[m][0]);
    _mm256_storeu_ps(y + m * ldy + d0 + 8, acc[m][1]);
  }
}

template <TensorType T, int MB>
inline void AccRows(const float* a, int64_t lda, const void* b, int64_t bs, int64_t N, int64_t D,
                    float* y, int64_t ldy, int64_t ahead) {
  int64_t d = 0;
  for (; d + 16 <= D; d += 16) AccTile16<T, MB>(a, lda, b, bs, N, d, y, ldy, ahead);
  if (d == D) return;
  const int64_t row_bytes = RowBytes<T>(bs);
  const uint8_t* bp = static_cast<const uint8_t*>(b);
  for (int m = 0; m < MB; ++m) {  // the last D mod 16 columns, one at a time
    for (int64_t dd = d; dd < D; ++dd) {
      float acc = y[m * ldy + dd];
      for (int64_t n = 0; n < N; ++n) acc = Fma1(a[m * lda + n], Load1<T>(bp + n * row_bytes, dd), acc);
      y[m * ldy + dd] = acc;
    }
  }
}

template <TensorType T>
void GemmAccT(const float* a, int64_t lda, int64_t M, const void* b, int64_t bs, int64_t N,
              int64_t D, float* y, int64_t ldy, int64_t prefetch) {
  // The B rows are prefetched by the first pass over them (the one that reads them from memory).
  const int64_t ahead = prefetch * RowBytes<T>(bs);
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) AccRows<T, 4>(a + m * lda, lda, b, bs, N, D, y + m * ldy, ldy, m == 0 ? ahead : 0);
  const int64_t pf = m == 0 ? ahead : 0;
  switch (M - m) {
    case 3:
      return AccRows<T, 3>(a + m * lda, lda, b, bs, N, D, y + m * ldy, ldy, pf);
    case 2:
      return AccRows<T, 2>(a + m * lda, lda, b, bs, N, D, y + m * ldy, ldy, pf);
    case 1:
      return AccRows<T, 1>(a + m * lda, lda, b, bs, N, D, y + m * ldy, ldy, pf);
    default:
      return;
  }
}

}  // namespace

void GemmAccF(TensorType bt, const float* a, int64_t lda, int64_t M, const void* b, int64_t bs,
              int64_t N, int64_t D, float* y, int64_t ldy, int64_t prefetch) {
  CheckAccRows(bt, bs, D);
  if (bt == TensorType::kF16) return GemmAccT<TensorType::kF16>(a, lda, M, b, bs, N, D, y, ldy, prefetch);
  if (bt == TensorType::kQ8) return GemmAccT<TensorType::kQ8>(a, lda, M, b, bs, N, D, y, ldy, prefetch);
  GemmAccT<TensorType::kF32>(a, lda, M, b, bs, N, D, y, ldy, prefetch);
}

}  // namespace gemlet::kernels::avx2
