// Dense (unmasked, bidirectional) scaled dot-product attention over one segment of float keys
// and values: every query sees every key, as in an encoder over an image's patches. A tiled
// online softmax that never holds a [T, N] score matrix (flash attention, Dao et al. 2022,
// Algorithm 1): each work unit takes one head and a block of query rows, and walks the keys
// tile by tile. Both products are outer-product GEMMs on the kernel table's accumulating float
// kernel (kernels.h GemmAccFFn, one accumulator per output, summed sequentially): the keys are
// packed once per call, transposed into [head_dim, tile] panels, so that the scores of a tile
// are Σ_d q[d]·Kᵀ[d][key], and the values are packed [keys, head_dim] per head.
//
// ops::Attention (attention.h) serves causal and windowed attention over a KV cache in several
// segments with the bits of decode and prefill alike; this op is the fast path for the dense
// case only and gives different (equally f32-accurate) bits.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace gemlet::ops {

// The arithmetic of the two products.
enum class DenseAttentionMath {
  kF32,
  // bf16 products with f32 sums (kernels.h gemm_acc_bf16: q·scale, k, v and the softmax
  // weights rounded to bf16) where the CPU has them and head_dim is even; else kF32. Twice the
  // f32 products' rate, for callers whose tier allows bf16 (the vision tower).
  kBf16,
};

struct DenseAttentionShape {
  int64_t n_heads = 0;     // H query heads
  int64_t n_kv_heads = 0;  // Hkv; query head h reads KV head h / (H / Hkv)
  int64_t head_dim = 0;    // any hd > 0
  float scale = 1.0f;      // multiplies q·k
  DenseAttentionMath math = DenseAttentionMath::kF32;
};

// out[t, h, :] = Σ_u softmax_u(scale · q[t, h, :]·k[u, g, :]) · v[u, g, :], g = h / (H / Hkv),
// for t < T over every key u < N (N > 0).
//   q, out: [T, H, head_dim], row t at q + t·q_stride (out + t·out_stride);
//   k, v:   [N, Hkv, head_dim], row u at k + u·kv_stride (v + u·kv_stride).
// out must not overlap the inputs. `scratch` holds DenseAttentionScratch(shape, N) floats for
// the packed keys and values (nullptr: the call allocates them). `pool` may be null (serial);
// the work is split over heads × blocks of query rows.
//
// Numerics (f32, one fixed order per query row, so the bits depend neither on the thread count
// nor on T, nor on the CPU's kernel tier): the query is first multiplied by `scale` (skipped
// when it is 1); the keys come in tiles of kDenseKeyTile, in order; in each tile,
// score_u = the fmaf chain over d = 0, 1, … of q[d]·k_u[d] from +0, then the kernel table's
// online softmax (kernels.h: the running maximum m, the weights p_u = e^(score_u − m), the
// running sum l and the correction e^(m_old − m)), the output row times the correction (when
// it is not 1), and o[c] = the fmaf chain over the tile's keys of p_u·v_u[c] continued from
// o[c]; at the end out = o · (1 / l).
void DenseAttention(const DenseAttentionShape& shape, const float* q, int64_t q_stride, int64_t T,
                    const float* k, const float* v, int64_t kv_stride, int64_t N, float* out,
                    int64_t out_stride, float* scratch, ThreadPool* pool);

// Floats of scratch DenseAttention takes for N keys: about 2·N·n_kv_heads·head_dim.
int64_t DenseAttentionScratch(const DenseAttentionShape& shape, int64_t N);

// Keys per tile of DenseAttention's online softmax (part of its numerics).
inline constexpr int64_t kDenseKeyTile = 128;

}  // namespace gemlet::ops
