// The interface between the forward pass and a session's KV cache (runtime/kv_cache.h
// implements it). Only layers that own K/V (config.has_kv(l)) are stored. Rows are the
// [Hkv, hd] keys after k_norm + RoPE and values after the weightless v_norm.
//
// Protocol of one forward step over positions [n, n + T), n = size():
//   1. Reserve(n + T)          room for the step (fails before any work if over the limit)
//   2. Past(l, segs)           for every attention layer: the stored rows of the K/V source
//                              layer, as they were before the step
//   3. Commit(l, k, v, T)      the step's fresh rows of each cached layer, once no later
//                              layer of the step reads layer l's past: right after layer l's
//                              attention, or, for a layer KV-shared layers read
//                              (config.read_by_shared), after every layer ran
//   4. Advance(T)              the size becomes n + T
// A layer's rows are written only after the last read of its past in the step, so a KV-shared
// layer late in the step still sees the producer's past intact (a sliding ring would
// otherwise have overwritten it), and the fresh rows of the other layers need no buffer each.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "base/tensor_type.h"
#include "ops/attention.h"

namespace gemlet::model {

// Bytes of `rows` rows of segment s (its stride in s.type's elements).
inline int64_t KvRowBytes(const ops::KvSegment& s, int64_t rows) {
  const int64_t e = rows * s.stride;
  switch (s.type) {
    case TensorType::kF32: return e * 4;
    case TensorType::kF16: return e * 2;
    case TensorType::kQ8: return e / kQBlock * static_cast<int64_t>(sizeof(BlockQ8));
    default: GEMLET_CHECK_MSG(false, "KV rows are f32, f16 or q8"); return 0;
  }
}

class KvStore {
 public:
  virtual ~KvStore() = default;
  // Positions stored so far (the position of the next token).
  virtual int64_t size() const = 0;
  // Makes room for positions up to end_pos (exclusive). OutOfRange if above the limit.
  virtual Status Reserve(int64_t end_pos) = 0;
  // The stored rows of cached layer `layer` still needed by later queries, as at most two
  // segments in increasing position order; returns how many were written to `out`.
  virtual int Past(int64_t layer, ops::KvSegment out[2]) const = 0;
  // The stored rows of cached layer `layer` for positions [first, size()), for a reader that
  // sees further back than the model's own next query (the MTP drafter's sliding layers see
  // W + 1 positions, a query of the model W): at most two segments in position order; the
  // number written, or −1 if a row at or after `first` is no longer stored. By default
  // Past's rows cut at `first` (enough for a store whose Past keeps every row).
  virtual int PastFrom(int64_t layer, int64_t first, ops::KvSegment out[2]) const {
    ops::KvSegment segs[2];
    const int n = Past(layer, segs);
    int k = 0;
    for (int i = 0; i < n; ++i) {
      ops::KvSegment s = segs[i];
      const int64_t skip = first - s.pos0;
      if (skip >= s.count) continue;
      if (skip > 0) {
        s.k = static_cast<const uint8_t*>(s.k) + KvRowBytes(s, skip);
        s.v = static_cast<const uint8_t*>(s.v) + KvRowBytes(s, skip);
        s.pos0 += skip;
        s.count -= skip;
      }
      out[k++] = s;
    }
    if (k > 0 ? out[0].pos0 > first : first < size()) return -1;
    return k;
  }
  // Stores rows [T, Hkv·hd] for positions [size(), size() + T) of cached layer `layer`.
  virtual void Commit(int64_t layer, const float* k, const float* v, int64_t T) = 0;
  // Ends the step: size() += T.
  virtual void Advance(int64_t T) = 0;
  // The element type cached layer `layer`'s rows are stored in (ops::KvSegment::type of its
  // Past segments; a store may keep full-attention and sliding layers in different types). The
  // forward pass attends over the step's fresh rows as the store will hold them, so a token's
  // K/V go through the same arithmetic whether they came in the same chunk or from the store,
  // and prefill and decode agree bit for bit: for kF16 it rounds them to the nearest f16
  // values (idempotent, so Commit stores exactly the values attended over); for kQ8 it
  // quantizes them with ops::QuantizeKvRowQ8 and attends over those blocks as a kQ8 segment
  // (attention scores q8 keys with int8 dot products), so a kQ8 store's Commit must quantize
  // the f32 rows it is given with ops::QuantizeKvRowQ8 too.
  virtual TensorType row_type(int64_t layer) const {
    (void)layer;
    return TensorType::kF32;
  }
};

}  // namespace gemlet::model
