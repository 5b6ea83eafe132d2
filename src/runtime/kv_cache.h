// A session's KV cache (../shared/spec/gemma4-text.md §5.1): storage only for the layers
// that own K/V. Sliding-window layers keep a ring of W rows (the keys a later query can
// still see); full-attention layers keep contiguous rows that grow by doubling up to the
// session's context limit, so memory follows the tokens actually used. f32 rows.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "model/gemma4_config.h"
#include "model/kv_store.h"
#include "ops/attention.h"

namespace gemlet::runtime {

// The K and V rows of one layer. ring_capacity > 0: a ring (position p lives in slot
// p % capacity and only the last `capacity` positions are kept); 0: contiguous rows.
class KvLayer {
 public:
  KvLayer(int64_t row_floats, int64_t ring_capacity);

  bool is_ring() const { return ring_ > 0; }
  int64_t row_floats() const { return row_; }
  int64_t capacity_rows() const { return cap_; }  // rows allocated
  // Contiguous layers: grow to hold `rows` positions (doubling, at most `limit`).
  void Grow(int64_t rows, int64_t limit);
  // The kept rows when `n` positions have been written: ≤ 2 segments in position order.
  int Segments(int64_t n, ops::KvSegment out[2]) const;
  // Writes positions [n, n + T) (a ring keeps only the last `capacity` of them).
  void Write(int64_t n, const float* k, const float* v, int64_t T);
  uint64_t bytes() const { return (k_.capacity() + v_.capacity()) * sizeof(float); }

 private:
  int64_t row_, ring_, cap_ = 0;
  std::vector<float> k_, v_;
};

class KvCache : public model::KvStore {
 public:
  // `context_limit`: the most positions this session may hold (prompt + generated tokens).
  KvCache(const model::Gemma4Config& cfg, int64_t context_limit);

  int64_t size() const override { return n_; }
  Status Reserve(int64_t end_pos) override;
  int Past(int64_t layer, ops::KvSegment out[2]) const override;
  void Commit(int64_t layer, const float* k, const float* v, int64_t T) override;
  void Advance(int64_t T) override { n_ += T; }

  // Forgets every position (a new conversation); keeps the allocations.
  void Clear() { n_ = 0; }
  int64_t context_limit() const { return limit_; }
  uint64_t bytes_allocated() const;
  int cached_layers() const;

 private:
  int64_t limit_;
  int64_t n_ = 0;
  std::vector<int> slot_;  // [L] index into layers_, −1 for KV-shared layers
  std::vector<KvLayer> layers_;
};

}  // namespace gemlet::runtime
