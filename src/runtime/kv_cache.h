// A session's KV cache (../shared/spec/gemma4-text.md §5.1): storage only for the layers
// that own K/V. Sliding-window layers keep a ring of W + kKvRollback rows: the W keys a later
// query can still see, and the rows a rollback of up to kKvRollback tokens needs to see them
// again (Truncate); full-attention layers keep contiguous rows in a GrowableBuffer
// (base/growable_buffer.h): address space for the session's context limit is reserved up front
// and committed in pages of kKvPageRows positions as the session grows, so the rows never move
// (growing copies nothing) and memory follows the tokens actually held, not the limit. Rows are f32, f16 or
// q8 (chosen at construction): f16 halves the memory and the bytes attention reads; Commit
// rounds the step's f32 rows to nearest even, and attention widens them back exactly. q8
// (ggml's q8_0 blocks: an f16 scale and 32 int8 per 32 values along the row, 34 bytes) halves
// them again; Commit quantizes (ops::QuantizeKvRowQ8) and attention dequantizes exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/growable_buffer.h"
#include "base/status.h"
#include "base/tensor_type.h"
#include "model/gemma4_config.h"
#include "model/kv_store.h"
#include "ops/attention.h"

namespace gemlet::runtime {

// Positions a sliding-window ring keeps beyond the window, so that a rollback of up to this
// many tokens (a rejected speculative draft, a regenerated reply) is exact without a re-prefill.
inline constexpr int64_t kKvRollback = 16;
// Rows beyond the target's window W that the MTP drafter's sliding layers attend (HF's mask
// shows a drafter query the last W + 1 positions: model/gemma4_drafter.h). A ring keeps
// W + kKvDrafterRows + kKvRollback rows, and a Truncate keeps the drafter's W + 1 rows too, so
// a draft step after any rollback within the margin finds every row it reads.
inline constexpr int64_t kKvDrafterRows = 1;
// Positions a full-attention layer commits at a time.
inline constexpr int64_t kKvPageRows = 256;

// The K and V rows of one layer. ring_capacity > 0: a ring (position p lives in slot
// p % capacity and only the last `capacity` positions are kept, of which Segments shows the
// last `window`); 0: contiguous rows.
class KvLayer {
 public:
  // `type`: kF32, kF16 or kQ8 (then row_floats is a multiple of 32). window: the rows a
  // query can see (≤ ring_capacity; 0 = ring_capacity).
  KvLayer(int64_t row_floats, int64_t ring_capacity, TensorType type = TensorType::kF32, int64_t window = 0);

  bool is_ring() const { return ring_ > 0; }
  TensorType type() const { return type_; }
  int64_t row_floats() const { return row_; }
  int64_t capacity_rows() const { return cap_; }  // rows allocated
  // Contiguous layers: grow in place to hold `rows` ≤ `limit` positions, committing whole
  // pages of kKvPageRows positions (address space for `limit` is reserved on the first call;
  // `limit` is the same on every call). OutOfRange if the system refuses the memory.
  Status Grow(int64_t rows, int64_t limit);
  // The visible rows when `n` positions have been written: ≤ 2 segments in position order.
  int Segments(int64_t n, ops::KvSegment out[2]) const { return SegmentsFrom(n, OldestVisible(n), out); }
  // The stored rows of positions [first, n) when `n` positions have been written: ≤ 2
  // segments in position order, or −1 if some of them were overwritten (first < Oldest(n)).
  int SegmentsFrom(int64_t n, int64_t first, ops::KvSegment out[2]) const;
  // The oldest position still stored when `n` positions have been written.
  int64_t Oldest(int64_t n) const { return ring_ > 0 ? std::max<int64_t>(0, n - ring_) : 0; }
  // The oldest position a query after `n` written positions can see.
  int64_t OldestVisible(int64_t n) const { return ring_ > 0 ? std::max<int64_t>(0, n - window_) : 0; }
  // The oldest position a drafter query after `n` written positions reads (kKvDrafterRows
  // more than OldestVisible).
  int64_t OldestRead(int64_t n) const {
    return ring_ > 0 ? std::max<int64_t>(0, n - window_ - kKvDrafterRows) : 0;
  }
  // Writes positions [n, n + T) of f32 rows (a ring keeps only the last `capacity` of them),
  // converted to the layer's type (f16: nearest even; q8: ops::QuantizeKvRowQ8).
  void Write(int64_t n, const float* k, const float* v, int64_t T);
  // Bytes of the K and V rows allocated (committed; memory once written). The buffers round
  // this up to whole pages.
  uint64_t bytes() const { return 2 * static_cast<uint64_t>(cap_ * row_bytes_); }

 private:
  // Stores `rows` f32 rows at slot `slot` of `dst`.
  void Store(GrowableBuffer& dst, int64_t slot, const float* src, int64_t rows);

  int64_t row_, ring_, window_, cap_ = 0;
  TensorType type_;
  int64_t row_bytes_;           // bytes per row: row_·4, row_·2 or row_/32·34
  GrowableBuffer k_, v_;        // [cap_, row_] elements of type_
};

// Whether a session of `cfg` can keep its KV rows in `type`: kF32 and kF16 always; kQ8 when
// every cached layer's head_dim (and so its row) is a multiple of 32, the q8 block size.
// InvalidArgument naming the layer and the alternatives otherwise. `full`: only the
// full-attention (true) or the sliding (false) layers are checked.
Status CheckKvType(const model::Gemma4Config& cfg, TensorType type, std::optional<bool> full = std::nullopt);

class KvCache : public model::KvStore {
 public:
  // `context_limit`: the most positions this session may hold (prompt + generated tokens).
  // `type`: the rows' element type, kF32, kF16 or kQ8 (runtime::Engine::kv_type() picks it;
  // kQ8 needs every kv row and head_dim a multiple of 32: CheckKvType); `sliding_type`, if
  // given, that of the sliding-window layers (Engine::kv_type_sliding()).
  KvCache(const model::Gemma4Config& cfg, int64_t context_limit, TensorType type = TensorType::kF32,
          std::optional<TensorType> sliding_type = std::nullopt);

  int64_t size() const override { return n_; }
  Status Reserve(int64_t end_pos) override;
  int Past(int64_t layer, ops::KvSegment out[2]) const override;
  int PastFrom(int64_t layer, int64_t first, ops::KvSegment out[2]) const override;
  void Commit(int64_t layer, const float* k, const float* v, int64_t T) override;
  void Advance(int64_t T) override { n_ += T; }
  TensorType row_type(int64_t layer) const override { return layers_[Slot(layer)].type(); }

  // Forgets every position (a new conversation); keeps the allocations.
  void Clear() { n_ = 0; }
  // Rolls back to the first n ≤ size() positions if every row the next query needs is still
  // stored, the drafter's one more included (always for contiguous layers; for the rings when
  // size() − n ≤ kKvRollback or the ring has not wrapped past what position n reads). False (and nothing changes) otherwise:
  // the caller must prefill again.
  bool Truncate(int64_t n);
  int64_t context_limit() const { return limit_; }
  TensorType type() const { return type_; }                  // the full-attention layers'
  TensorType sliding_type() const { return sliding_type_; }  // the sliding-window layers'
  uint64_t bytes_allocated() const;
  int cached_layers() const;

 private:
  int Slot(int64_t layer) const;

  int64_t limit_;
  TensorType type_, sliding_type_;
  int64_t n_ = 0;
  std::vector<int> slot_;  // [L] index into layers_, −1 for KV-shared layers
  std::vector<KvLayer> layers_;
};

}  // namespace gemlet::runtime
