// Scaled dot-product attention with MQA/GQA, a causal mask and an optional sliding window,
// over keys and values that live in several segments (a KV cache ring's past, contiguous
// storage, the current chunk's fresh rows). A tiled online softmax in f32, never a [T, T]
// score matrix: blocks of 4 query rows × the heads of a KV group share each tile of 64 keys
// (scores and P·V by the kernel table's GEMMs on the rows in place: float for f32 and f16
// rows; for q8 rows int8 scores and V read as exact f32 values); keys come in chunks of 256 positions whose softmax states are
// merged in key order, so one decode step can split its keys between threads and still give
// exactly the bits of a prefill.
#pragma once

#include <cstdint>

#include "base/tensor_type.h"
#include "base/thread_pool.h"

namespace gemlet::ops {

// Keys and values of the consecutive positions [pos0, pos0 + count). The row of position
// pos0 + i starts at element i·stride of k (and of v) and holds [n_kv_heads, head_dim]
// elements of `type`: kF32 (float), kF16 (uint16_t IEEE half, e.g. a KV cache in f16) or kQ8
// (BlockQ8 blocks of 32 elements along the row: element e is at byte (e / 32)·34 of the
// block stream; stride and head_dim must then be multiples of 32, so rows and heads start
// at block boundaries).
struct KvSegment {
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t stride = 0;  // elements between consecutive positions' rows
  int64_t pos0 = 0;
  int64_t count = 0;
  TensorType type = TensorType::kF32;
};

struct AttentionShape {
  int64_t n_heads = 0;     // H query heads
  int64_t n_kv_heads = 0;  // Hkv; query head h reads KV head h / (H / Hkv)
  int64_t head_dim = 0;
  int64_t window = 0;  // 0: causal (u <= t); W > 0: sliding (t − W < u <= t)
  float scale = 1.0f;  // multiplies q·k
};

// out[t, h, :] = Σ_u softmax_u(scale · q[t, h, :]·K[u, g, :]) · V[u, g, :], g = h / (H / Hkv),
// over the keys u of every segment that the mask allows for the query position q_pos[t].
// q, out: [T, H, head_dim] (must not overlap the segments; out may be q: each block of queries
// is copied before its outputs are written, and blocks write only their own rows and heads,
// so the output can replace the queries in place). A query that sees no key gets
// zeros. Segments may come in any order and must not overlap; keys are visited in increasing
// position order, so the result's bits do not depend on how the keys are split into segments.
// f16 segments cost a conversion, not a second algorithm: the kernels widen each K and V
// element to f32 (exactly) in registers and then do the f32 arithmetic, so the result is
// bit-identical to f32 segments holding the same (f16-representable) values. Over q8
// segments the scores are int8 dot products (the kernel table's gemm_q8, as llama.cpp scores
// a q8_0 cache): each query's blocks of 32 are quantized like the matmuls' activations
// (quantize_act; head_dim a multiple of 32). A key's score thus depends on its segment's
// type, so the forward pass gives the fresh rows of a q8 store as q8 blocks too
// (model/kv_store.h). q8 values are read exactly (int8 × f16 scale needs at most 18
// significant bits) by the accumulating GEMM. The bits still do not depend on the segments, the query
// blocks, the threads or the path (prefill or decode): quantize_act treats each block of 32
// alone and gemm_q8 computes each (key, query) element alone, in a fixed order.
void Attention(const AttentionShape& shape, const float* q, const int64_t* q_pos, int64_t T,
               const KvSegment* segments, int n_segments, float* out, ThreadPool* pool);

// x[i] = the f16 value nearest x[i] (round to nearest even, as base/half.h), as f32: the
// values an f16 KV cache will hold, for rows attended over before they are stored.
void RoundToF16(float* x, int64_t n);

// The values a KV cache of element type `type` will hold for the f32 values x[0, n), in
// place: kF32 leaves x alone, kF16 is RoundToF16, kQ8 quantizes each block of 32 with
// QuantizeKvRowQ8 and dequantizes it (n a multiple of 32). Idempotent, bit for bit: rounding
// already-rounded values changes nothing (q8: for |x| up to 65504·127, where the block scale
// is a finite f16), so a session file's f32 rows reload into the same blocks.
void RoundToKvType(TensorType type, float* x, int64_t n);

// A KV cache's q8 quantizer (n a multiple of 32): each block as kernels::QuantizeRowQ8Ref
// (ggml's q8_0 reference, d = amax/127 in f16, q = round(x/d)), except that a block whose f16
// scale is 0 (amax below ~2^-25·127, or all zeros) gets all q = 0, so that it dequantizes to
// +0 everywhere (not −0 for negative q): that keeps quantize → dequantize idempotent.
void QuantizeKvRowQ8(const float* x, BlockQ8* y, int64_t n);

}  // namespace gemlet::ops
