// The kernel table: int8 matrix-vector (decode) and matrix-matrix (prefill) products of
// quantized or float weight rows with activations, chosen once per process from the CPU's
// features (base/cpu_features.h).
//
// How to use (ops/MatMul):
//   const KernelTable& k = ActiveKernels();
//   // y[r] = Σ_i W[r][i]·x[i] for a [rows, K] q4 weight, rows split across threads:
//   std::vector<ActBlock> xq(K / 32);
//   k.quantize_act(x, xq.data(), K);                 // once per token, shared by all threads
//   k.gemv_q4(W, K / 32, r0, r1, xq.data(), K, y);   // each thread its own [r0, r1)
//   // prefill, T tokens: X quantized row by row into xq[t * (K / 32) ...]
//   k.gemm_q4(W, K / 32, r0, r1, xq.data(), K / 32, T, K, Y, ldy);  // Y[t * ldy + r]
// Kernels never allocate, keep no state and may run concurrently on disjoint outputs.
//
// Layouts: q4 weights are fastest as TensorLayout::kQ4x8 and q8 weights as kQ8x8 (RepackQ4x8 /
// RepackQ8x8 in kernels/repack.h, done by the converter): one row per SIMD lane, no horizontal
// sums. Measured on this machine's AVX2 (kernels_bench / the report), the kQ4x8 GEMV is ~3×
// and the GEMM ~3× the row-major q4 ones; on Zen AVX-512 VNNI (kernels_bench Gemm/avx512
// ffn_gate_up 12288x1536 T=512, 1 thread) gemm_q8x8 runs 317 GOP/s against gemm_q8's 97
// (q4x8: 335-347), and gemv_q8x8 streams 17.6 GB/s against gemv_q8's 10.0. So split
// interleaved rows between threads in multiples of 8 and keep the row-major q4/q8 kernels for
// tensors that cannot be repacked.
//
// Numerics (the same on every tier; the scalar twins in kernels/ref/ are the spec):
// - quantize_act: per block of 32, amax = max|x|; if amax < 2^-100 the block is zero
//   (d = 0, q = 0); else d = amax / 127, id = 127 / amax, q = round_half_even(clamp(x·id,
//   −127, 127)), sum = Σq. So |q| ≤ 127 always (no −128), which keeps the int8 products
//   exact on every ISA. x must be finite; non-finite input gives unspecified (but safe) blocks.
// - q4/q8 products: for row r, token t the integer block sum is exact,
//     isum = Σ_j w_j·q_j  with w_j = nibble − 8 (q4) or the int8 value (q8),
//   and the floats combine in one fixed order, sequentially over blocks b = 0, 1, ...:
//     acc = +0;  acc = fmaf(f16→f32(w.d) · x.d, (float)isum, acc);  y = acc
//   (the product rounded to f32, then a fused multiply-add). Every SIMD tier computes exactly
//   this, so results are bit-identical to the scalar twin and to each other, and identical
//   between the row-major and interleaved layouts of the same tensor.
// - float weights (f32/f16/bf16 rows, f32 activations): 16 running sums, lane l taking
//   elements i ≡ l (mod 16) of each whole group of 16 with fmaf; then the fixed tree
//   s_l = a_l + a_{l+8} (l<8), s_l += s_{l+4} (l<4), s_l += s_{l+2} (l<2), s_0 + s_1;
//   then the K mod 16 tail elements sequentially with fmaf. Bit-identical across tiers too.
// - bf16 dot products (bf16 weights × activations rounded to bf16, where the CPU has them:
//   AVX512_BF16's vdpbf16ps): x is first rounded to bf16 by f32_to_bf16 (round to nearest
//   even; an f32 subnormal gives ±0, a NaN a quiet NaN). For row r, token t, one running sum
//   a = +0 over the pairs (2j, 2j + 1) in order (an odd K's last element paired with +0):
//     a = F(F(a + x[2j+1]·w[2j+1]) + x[2j]·w[2j])
//   where each product is exact (8-bit × 8-bit significands), a bf16 subnormal input counts as
//   ±0 and F rounds to nearest even and flushes a subnormal sum to ±0 (its sign kept); likewise
//   gemm_acc_bf16, onto the given output, over its pairs in order. Bit-
//   identical to the scalar twins (kernels/ref) on every tier that has them, for sums that
//   stay finite (where a sum overflows, the infinities may differ); a table without bf16 dot
//   products has null gemm_bf16, f32_to_bf16, gemm_acc_bf16 and online_softmax_bf16.
// - f16 <-> f32 rows (the KV cache): per element exactly base/half.h's F16ToF32 (exact, NaN
//   payload kept, no quieting) and F32ToF16 (round to nearest even, ±inf above 65504, NaN ->
//   sign | 0x7e00), on every tier.
//
// Shapes: weights are row-major [rows, K] with rows `row_stride_blocks` blocks apart (K/32 for
// a whole tensor); K is a multiple of 32 for the quantized kernels, any K ≥ 0 for float.
// Outputs are indexed by absolute row: gemv writes y[r], gemm writes Y[t * ldy + r], for
// r in [r0, r1). Activation token t is at x + t * x_stride (blocks or floats).
#pragma once

#include <cstdint>
#include <vector>

#include "base/cpu_features.h"
#include "base/tensor_type.h"

namespace gemlet::kernels {

// One block of 32 activations quantized to int8 (see Numerics above). 40 bytes; arrays of
// them need no particular alignment.
struct ActBlock {
  int8_t q[kQBlock];  // |q| ≤ 127
  float d;            // scale: x ≈ q·d
  int32_t sum;        // Σ q (lets q4 kernels use unsigned nibbles: Σ(n−8)q = Σnq − 8Σq)
};
static_assert(sizeof(ActBlock) == 40);

// Kernel tiers, lowest first within an architecture.
enum class Tier : int {
  kScalar = 0,
  kAvx2,     // x86-64 AVX2 + FMA + F16C (maddubs)
  kAvxVnni,  // + AVX-VNNI (vpdpbusd, VEX)
  kAvx512,   // AVX-512 F/BW/DQ/VL + VNNI (vpdpbusd, EVEX)
  kAvx512Bf16,  // + AVX512_BF16 (vdpbf16ps: the bf16 dot products)
  kNeon,     // Arm64 Advanced SIMD (Cortex-A72, Pi 4)
  kDotprod,  // + SDOT (Cortex-A76, Pi 5)
  kI8mm,     // + SMMLA / USMMLA (Neoverse V1/N2, Cortex-A710+)
};
const char* TierName(Tier t);  // "scalar", "avx2", "avxvnni", "avx512", "avx512bf16", "neon", ...

// Quantizes K floats (K a multiple of 32) into K/32 blocks.
using QuantizeActFn = void (*)(const float* x, ActBlock* out, int64_t K);
// y[r] = Σ_b …  for r in [r0, r1); x has K/32 blocks.
using GemvQ4Fn = void (*)(const BlockQ4* w, int64_t row_stride_blocks, int64_t r0, int64_t r1,
                          const ActBlock* x, int64_t K, float* y);
using GemvQ8Fn = void (*)(const BlockQ8* w, int64_t row_stride_blocks, int64_t r0, int64_t r1,
                          const ActBlock* x, int64_t K, float* y);
// Y[t * ldy + r] for t in [0, T), r in [r0, r1); token t's blocks at x + t * x_stride_blocks.
using GemmQ4Fn = void (*)(const BlockQ4* w, int64_t row_stride_blocks, int64_t r0, int64_t r1,
                          const ActBlock* x, int64_t x_stride_blocks, int64_t T, int64_t K,
                          float* y, int64_t ldy);
using GemmQ8Fn = void (*)(const BlockQ8* w, int64_t row_stride_blocks, int64_t r0, int64_t r1,
                          const ActBlock* x, int64_t x_stride_blocks, int64_t T, int64_t K,
                          float* y, int64_t ldy);
// Interleaved q4 (TensorLayout::kQ4x8, base/tensor_type.h): w points at the tensor's first
// BlockQ4x8; row group g (rows 8g..8g+7) starts at w + g * group_stride_blocks (K/32 for a
// whole tensor). r0 and r1 are multiples of 8.
using GemvQ4x8Fn = void (*)(const BlockQ4x8* w, int64_t group_stride_blocks, int64_t r0, int64_t r1,
                            const ActBlock* x, int64_t K, float* y);
using GemmQ4x8Fn = void (*)(const BlockQ4x8* w, int64_t group_stride_blocks, int64_t r0, int64_t r1,
                            const ActBlock* x, int64_t x_stride_blocks, int64_t T, int64_t K,
                            float* y, int64_t ldy);
// Interleaved q8 (TensorLayout::kQ8x8): the same with BlockQ8x8.
using GemvQ8x8Fn = void (*)(const BlockQ8x8* w, int64_t group_stride_blocks, int64_t r0, int64_t r1,
                            const ActBlock* x, int64_t K, float* y);
using GemmQ8x8Fn = void (*)(const BlockQ8x8* w, int64_t group_stride_blocks, int64_t r0, int64_t r1,
                            const ActBlock* x, int64_t x_stride_blocks, int64_t T, int64_t K,
                            float* y, int64_t ldy);
// Float weights: wtype is kF32, kF16 or kBF16; rows are row_stride elements apart.
// `prefetch` (gemm_f, gemm_acc_f) is a hint that changes no result: while reading row r the
// kernel may prefetch row r + prefetch into cache (0: none); those rows need not exist. A
// caller that walks a long matrix tile by tile, like attention over a KV cache that the other
// layers' weights pushed out of every cache, passes the tile's row count.
using GemvFFn = void (*)(TensorType wtype, const void* w, int64_t row_stride, int64_t r0,
                         int64_t r1, const float* x, int64_t K, float* y);
using GemmFFn = void (*)(TensorType wtype, const void* w, int64_t row_stride, int64_t r0,
                         int64_t r1, const float* x, int64_t x_stride, int64_t T, int64_t K,
                         float* y, int64_t ldy, int64_t prefetch);

// Accumulating product with float rows (attention's P·V): for m < M, d < D
//   acc = y[m·ldy + d];  for n = 0, 1, …, N−1: acc = fmaf(a[m·lda + n], B_n[d], acc);
//   y[m·ldy + d] = acc
// where row B_n starts at element n·b_stride of b, of type btype: kF32, kF16, or kQ8 (BlockQ8
// blocks along the rows, b_stride and D multiples of 32: element e of the stream is
// qs[e % 32]·d of block e / 32, exact in f32 — the values DequantizeRowRef gives, read in
// place, as attention reads a q8 KV cache's V). Sequential over n per element, so splitting N
// across calls gives the same bits.
using GemmAccFFn = void (*)(TensorType btype, const float* a, int64_t lda, int64_t M,
                            const void* b, int64_t b_stride, int64_t N, int64_t D, float* y,
                            int64_t ldy, int64_t prefetch);

// One tile of attention's online softmax (flash attention's running rescale): R rows of n ≥ 1
// finite scores, row r at s + r·lds, with each row's running maximum m[r] (−inf before the
// first tile) and running sum l[r]:
//   mt = max(m[r], max_c s[r, c]);  corr[r] = SoftmaxExp(m[r] − mt);  m[r] = mt;
//   s[r, c] = SoftmaxExp(s[r, c] − mt);  l[r] = l[r]·corr[r] + Σ_c s[r, c]
// (the product rounded, then the sum added; Σ in 16 running sums, lane j taking c ≡ j mod 16 in
// order, then the fixed tree of the float products above). The caller rescales its output rows
// by corr[r] (exactly 1 when the maximum did not grow). SoftmaxExp (kernels/ref/ref_kernels.h)
// is e^x for x ≤ 0 by fused multiply-adds: x clamped below at −87, n = round(x·log2 e), r = x −
// n·ln 2 in two fmaf steps, e^r by a degree-6 polynomial (Cephes' expf), times 2^n — ≤ 2 ulp,
// the same bits on every tier.
using OnlineSoftmaxFn = void (*)(float* s, int64_t lds, int64_t R, int64_t n, float* m, float* l,
                                 float* corr);

// y[i] = F16ToF32(x[i]) / y[i] = F32ToF16(x[i]) for i in [0, n); any n >= 0.
using F16ToF32Fn = void (*)(const uint16_t* x, float* y, int64_t n);
using F32ToF16Fn = void (*)(const float* x, uint16_t* y, int64_t n);

// bf16 dot products (see Numerics): w bf16 rows row_stride elements apart, x bf16 activations
// (token t at x + t·x_stride); Y[t·ldy + r] for t in [0, T), r in [r0, r1); any K ≥ 0.
using GemmBf16Fn = void (*)(const uint16_t* w, int64_t row_stride, int64_t r0, int64_t r1,
                            const uint16_t* x, int64_t x_stride, int64_t T, int64_t K, float* y,
                            int64_t ldy);
// y[i] = x[i] rounded to bf16 (see Numerics), i in [0, n); any n >= 0.
using F32ToBf16Fn = void (*)(const float* x, uint16_t* y, int64_t n);
// Accumulating bf16 product (attention's two products where bf16 is allowed), N even: for
// m < M, d < D, acc = y[m·ldy + d], then for each pair j = 0, 1, …, N/2 − 1 in order
//   acc = F(F(acc + a[m, 2j+1]·B[2j+1, d]) + a[m, 2j]·B[2j, d])      (F, inputs: see Numerics)
// and y[m·ldy + d] = acc. a: bf16 [M, N], row m at a + m·lda. B: bf16 in pairs of rows, each
// column's two elements adjacent: B[2j + i, d] at b[j·b_stride + 2d + i]. Sequential over the
// pairs per element, so splitting N (at even points) across calls gives the same bits.
using GemmAccBf16Fn = void (*)(const uint16_t* a, int64_t lda, int64_t M, const uint16_t* b, int64_t b_stride,
                               int64_t N, int64_t D, float* y, int64_t ldy);
// online_softmax with the weights rounded to bf16 (f32_to_bf16) as they are made, for
// gemm_acc_bf16's a: s is only read, the weight of score c goes to p[r·ldp + c], and an odd n
// gets a +0 at p[r·ldp + n] (the last weight's partner in its pair). m, l and corr are
// online_softmax's, bit for bit (l sums the f32 weights).
using OnlineSoftmaxBf16Fn = void (*)(const float* s, int64_t lds, int64_t R, int64_t n, float* m, float* l,
                                     float* corr, uint16_t* p, int64_t ldp);

struct KernelTable {
  Tier tier;
  QuantizeActFn quantize_act;
  GemvQ4Fn gemv_q4;
  GemmQ4Fn gemm_q4;
  GemvQ8Fn gemv_q8;
  GemmQ8Fn gemm_q8;
  GemvQ4x8Fn gemv_q4x8;
  GemmQ4x8Fn gemm_q4x8;
  GemvQ8x8Fn gemv_q8x8;
  GemmQ8x8Fn gemm_q8x8;
  GemvFFn gemv_f;
  GemmFFn gemm_f;
  F16ToF32Fn f16_to_f32;
  F32ToF16Fn f32_to_f16;
  GemmAccFFn gemm_acc_f;
  OnlineSoftmaxFn online_softmax;
  // Null where the CPU has no bf16 dot product (every tier but kAvx512Bf16).
  GemmBf16Fn gemm_bf16 = nullptr;
  F32ToBf16Fn f32_to_bf16 = nullptr;
  GemmAccBf16Fn gemm_acc_bf16 = nullptr;
  OnlineSoftmaxBf16Fn online_softmax_bf16 = nullptr;
};

// The best tier this CPU has, capped by the environment variable GEMLET_CPU (a level name of
// CapCpuFeatures, e.g. GEMLET_CPU=avx2 or GEMLET_CPU=scalar; an invalid value is reported
// once on stderr and ignored). Chosen at the first call; thread-safe.
const KernelTable& ActiveKernels();
// The table of tier t, or nullptr if this CPU (or this build's architecture) lacks it.
// For tests and `gemlet run --verify`; ignores GEMLET_CPU.
const KernelTable* KernelsForTier(Tier t);
// Every tier this CPU runs, scalar first, best last.
std::vector<Tier> AvailableTiers();
// The choice ActiveKernels() makes: the best table `f` allows after capping it at
// `gemlet_cpu` (nullptr or "" for no cap; an invalid level is reported on stderr and ignored).
const KernelTable& SelectKernels(const CpuFeatures& f, const char* gemlet_cpu);

}  // namespace gemlet::kernels
