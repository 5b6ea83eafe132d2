// AVX-512 VNNI int8 kernels and the Tier::kAvx512 table. The interleaved q4x8 / q8x8
// GEMV/GEMM are 512-bit: one zmm holds two row groups (lanes 0-7 group g, lanes 8-15 group
// g+1), so one vpdpbusd covers 16 rows. The row-major q4/q8 kernels are the shared 256-bit
// ones with the EVEX vpdpbusd (AVX512_VNNI + AVX512VL); quantization and f16 conversion are
// the AVX2 ones; the float products are avx512_float.cc's.
//
// Bit-identical to kernels/ref/ref_kernels.cc like every tier: the int32 block sum of each
// (row, token, block) is exact, then acc = fma(f16(dw)·dx, float(isum), acc) over blocks in
// order, one lane per row.
// GCC 12 warns that the masked builtins behind _mm512_inserti64x4 / _mm512_cvtph_ps /
// _mm512_cvtepi32_ps read their _mm512_undefined_* pass-through: a known false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/x86/x86_kernels.h"

#define GEMLET_DPBUSD(acc, u, s) _mm256_dpbusd_epi32(acc, u, s)

namespace gemlet::kernels {
namespace {
#include "kernels/x86/int8_kernels_x86.inc"
#include "kernels/x86/interleaved_kernels_x86.inc"

// ---- q4x8 / q8x8, 512-bit: two row groups per zmm ------------------------------------------

// Chunk c (32 bytes: 8 rows × 4 bytes) of groups a and b in one zmm.
template <typename Block>
inline __m512i LoadPair(const Block& a, const Block& b, int c) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs + 32 * c));
  const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * c));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// The 16 row scales of groups a and b as floats.
template <typename Block>
inline __m512 ScalePair(const Block& a, const Block& b) {
  const __m128i da = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.d));
  const __m128i db = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.d));
  return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(da), db, 1));
}

inline __m512i Bcast32x16(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// The weight steps of a pair's chunk v as u8 vectors (the layouts of
// interleaved_kernels_x86.inc): q4x8's low and high nibbles; q8x8's w XOR 0x80 = w + 128, whose
// extra 128·Σq the block sum starts without (Offset).
struct Q4x8Z : Q4x8Layout {
  static void Prep(__m512i v, __m512i* u) {
    const __m512i m0f = _mm512_set1_epi8(0x0f);
    u[0] = _mm512_and_si512(v, m0f);
    u[1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m0f);
  }
  static int32_t Offset(const ActBlock& x) { return 8 * x.sum; }
};
struct Q8x8Z : Q8x8Layout {
  static void Prep(__m512i v, __m512i* u) { u[0] = _mm512_xor_si512(v, _mm512_set1_epi8(-128)); }
  static int32_t Offset(const ActBlock& x) { return 128 * x.sum; }
};

// Software prefetch of the weights, this many blocks ahead in each group's stream: measured
// on Zen 5 (kernels_bench, 1 thread) +25 % GEMV GB/s, +30 % GemmStream T=4, GEMM T ≥ 64
// unchanged to +5 %; 16 is as good as 6 and better at 2 threads. Prefetches past the end of
// the tensor are harmless (no faults).
constexpr int kPrefetchBlocks = 16;

// NP pairs of row groups × NT tokens. Pair p is groups 2p, 2p+1 at w + 2p·gs, w + (2p+1)·gs;
// token t at x + t·xs; y[t·ldy + 16p + lane]. Per block the weights' 8 steps are prepared
// once (8 zmm per pair) and reused by the NT tokens; each token's block sum starts at
// −Offset and is finished before the next token's, so the live registers are 8·NP weights +
// NP·NT accumulators (all loops unrolled: no spills at NP 1, NT ≤ 16).
// next_tile > 0 (the GEMV's consecutive tiles): in its last kPrefetchBlocks blocks each stream
// prefetches the start of the stream next_tile groups on (the next tile's) instead of its own
// end, so a new tile starts with its weights on the way rather than with cold streams.
template <typename X, int NP, int NT>
inline void TileZ(const typename X::Block* w, int64_t gs, const ActBlock* x, int64_t xs, int64_t nb,
                  float* y, int64_t ldy, int64_t next_tile = 0) {
  constexpr int kSteps = X::kChunks * X::kPerChunk;
  static_assert(kSteps == 8);
  __m512 acc[NP][NT];
  for (int p = 0; p < NP; ++p)
    for (int t = 0; t < NT; ++t) acc[p][t] = _mm512_setzero_ps();
  const int64_t jump = kPrefetchBlocks + next_tile * gs - nb;
  for (int64_t b = 0; b < nb; ++b) {
    __m512i u[NP][kSteps];  // [c·kPerChunk + s]: step s of chunk c
    __m512 dw[NP];
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      const auto& ga = w[(2 * p) * gs + b];
      const auto& gb = w[(2 * p + 1) * gs + b];
      // Block b + kPrefetchBlocks of this stream, or past its end block b + kPrefetchBlocks − nb
      // of the stream next_tile groups on.
      const int64_t ahead = next_tile > 0 && b + kPrefetchBlocks >= nb ? jump : kPrefetchBlocks;
      PrefetchX8(&ga, ahead);
      PrefetchX8(&gb, ahead);
#pragma GCC unroll 8
      for (int c = 0; c < X::kChunks; ++c) X::Prep(LoadPair(ga, gb, c), &u[p][c * X::kPerChunk]);
      dw[p] = ScalePair(ga, gb);
    }
#pragma GCC unroll 16
    for (int t = 0; t < NT; ++t) {
      const ActBlock& xb = x[t * xs + b];
      const __m512i off = _mm512_set1_epi32(-X::Offset(xb));
      const __m512 dx = _mm512_set1_ps(xb.d);
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) {
        // Two dependency chains (the even and odd steps): measured ~4 % faster than one (q4x8).
        __m512i is = off, is_odd = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int j = 0; j < kSteps; j += 2) {
          const int c0 = j / X::kPerChunk, s0 = j % X::kPerChunk;
          const int c1 = (j + 1) / X::kPerChunk, s1 = (j + 1) % X::kPerChunk;
          is = _mm512_dpbusd_epi32(is, u[p][j], Bcast32x16(xb.q + X::ActAt(c0, s0)));
          is_odd = _mm512_dpbusd_epi32(is_odd, u[p][j + 1], Bcast32x16(xb.q + X::ActAt(c1, s1)));
        }
        is = _mm512_add_epi32(is, is_odd);
        const __m512 s = _mm512_mul_ps(dw[p], dx);
        acc[p][t] = _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(is), acc[p][t]);
      }
    }
  }
  for (int p = 0; p < NP; ++p)
    for (int t = 0; t < NT; ++t) _mm512_storeu_ps(y + t * ldy + 16 * p, acc[p][t]);
}

// The 256-bit kernels' ops of the same layout (for an odd row group).
template <typename X>
using Ops256 = std::conditional_t<std::is_same_v<typename X::Block, BlockQ4x8>, Q4x8Ops, Q8x8Ops>;

template <typename X>
void GemvZ(const typename X::Block* w, int64_t gs, int64_t r0, int64_t r1, const ActBlock* x, int64_t K,
           float* y) {
  GEMLET_CHECK_MSG(r0 % 8 == 0 && r1 % 8 == 0, "interleaved (q4x8/q8x8) kernels take whole groups of 8 rows");
  const int64_t nb = K / kQBlock;
  if (nb == 0) {
    std::fill(y + r0, y + r1, 0.0f);
    return;
  }
  if (K <= kGemvOneStreamMaxK) {  // one group at a time: one stream (interleaved_kernels_x86.inc)
    for (int64_t g = r0 / 8; g < r1 / 8; ++g) TileX8<Ops256<X>, 1, 1>(w + g * gs, gs, x, 0, nb, y + 8 * g, 0);
    return;
  }
  int64_t g = r0 / 8;
  const int64_t g1 = r1 / 8;
  for (; g + 4 <= g1; g += 4) TileZ<X, 2, 1>(w + g * gs, gs, x, 0, nb, y + 8 * g, 0, /*next_tile=*/4);
  if (g + 2 <= g1) {
    TileZ<X, 1, 1>(w + g * gs, gs, x, 0, nb, y + 8 * g, 0);
    g += 2;
  }
  if (g < g1) TileX8<Ops256<X>, 1, 1>(w + g * gs, gs, x, 0, nb, y + 8 * g, 0);
}

// GEMM tile: one pair (16 rows) × 8 tokens. Measured on Zen 5 (kernels_bench Gemm q4x8, 1
// thread): 1×8 and 1×12 alike, 1×16 ~10 % slower, 2×4 (which spills) slower still.
constexpr int kTileT = 8;

// One pair over tokens [t, t1): tiles of kTileT, then one tile of the rest.
template <typename X, int NT = kTileT>
inline void PairTokens(const typename X::Block* wg, int64_t gs, const ActBlock* x, int64_t xs, int64_t t,
                       int64_t t1, int64_t nb, float* yg, int64_t ldy) {
  if constexpr (NT == kTileT) {
    for (; t + NT <= t1; t += NT) TileZ<X, 1, NT>(wg, gs, x + t * xs, xs, nb, yg + t * ldy, ldy);
  }
  if constexpr (NT > 1) {
    if (t1 - t == NT - 1) {
      TileZ<X, 1, NT - 1>(wg, gs, x + t * xs, xs, nb, yg + t * ldy, ldy);
    } else if (t1 - t < NT - 1) {
      PairTokens<X, NT - 1>(wg, gs, x, xs, t, t1, nb, yg, ldy);
    }
  }
}

// Small batches (decode steps of a few sequences, a short verify) are bound by the weight
// stream, as a GEMV is: the GEMV's tiles — two pairs, four weight streams, the next tile's
// starts prefetched — with all NT tokens in each pass (8·2 + 2·NT live registers).
template <typename X, int NT>
void SmallBatchZ(const typename X::Block* w, int64_t gs, int64_t r0, int64_t r1, const ActBlock* x, int64_t xs,
                 int64_t nb, float* y, int64_t ldy) {
  int64_t g = r0 / 8;
  const int64_t g1 = r1 / 8;
  for (; g + 4 <= g1; g += 4) TileZ<X, 2, NT>(w + g * gs, gs, x, xs, nb, y + 8 * g, ldy, /*next_tile=*/4);
  if (g + 2 <= g1) {
    TileZ<X, 1, NT>(w + g * gs, gs, x, xs, nb, y + 8 * g, ldy);
    g += 2;
  }
  if (g < g1) GroupTokens<Ops256<X>, 1>(w + g * gs, gs, x, xs, 0, NT, nb, y + 8 * g, ldy);  // odd group
}

template <typename X>
void GemmZ(const typename X::Block* w, int64_t gs, int64_t r0, int64_t r1, const ActBlock* x, int64_t xs,
           int64_t T, int64_t K, float* y, int64_t ldy) {
  GEMLET_CHECK_MSG(r0 % 8 == 0 && r1 % 8 == 0, "interleaved (q4x8/q8x8) kernels take whole groups of 8 rows");
  const int64_t nb = K / kQBlock;
  switch (T) {  // each y[t, r] sums its blocks in the same order whatever the tile: same bits
    case 2: return SmallBatchZ<X, 2>(w, gs, r0, r1, x, xs, nb, y, ldy);
    case 3: return SmallBatchZ<X, 3>(w, gs, r0, r1, x, xs, nb, y, ldy);
    case 4: return SmallBatchZ<X, 4>(w, gs, r0, r1, x, xs, nb, y, ldy);
    default: break;
  }
  // Tokens in blocks whose activations stay in L2 while every pair passes over them.
  const int64_t tb = TokenBlock(nb);
  const int64_t g1 = r1 / 8;
  for (int64_t t0 = 0; t0 < T; t0 += tb) {
    const int64_t t1 = t0 + tb < T ? t0 + tb : T;
    int64_t g = r0 / 8;
    for (; g + 2 <= g1; g += 2) PairTokens<X>(w + g * gs, gs, x, xs, t0, t1, nb, y + 8 * g, ldy);
    if (g < g1) GroupTokens<Ops256<X>, 1>(w + g * gs, gs, x, xs, t0, t1, nb, y + 8 * g, ldy);  // odd group
  }
}

}  // namespace

const KernelTable& Avx512Kernels() {
  static constexpr KernelTable t = {Tier::kAvx512,
                                    avx2::QuantizeAct,
                                    GemvQ4,
                                    GemmQ4,
                                    GemvQ8,
                                    GemmQ8,
                                    GemvZ<Q4x8Z>,
                                    GemmZ<Q4x8Z>,
                                    GemvZ<Q8x8Z>,
                                    GemmZ<Q8x8Z>,
                                    avx512::GemvF,
                                    avx512::GemmF,
                                    avx2::F16ToF32,
                                    avx2::F32ToF16,
                                    avx512::GemmAccF,
                                    avx512::OnlineSoftmax};
  return t;
}

}  // namespace gemlet::kernels
