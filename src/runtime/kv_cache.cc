#include "runtime/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/kernels.h"

namespace gemlet::runtime {

KvLayer::KvLayer(int64_t row_floats, int64_t ring_capacity, TensorType type, int64_t window)
    : row_(row_floats), ring_(ring_capacity), window_(window > 0 ? window : ring_capacity), type_(type) {
  GEMLET_CHECK(window_ <= ring_ || ring_ == 0);
  GEMLET_CHECK_MSG(type == TensorType::kF32 || type == TensorType::kF16 || type == TensorType::kQ8,
                   "KV rows are f32, f16 or q8");
  if (type == TensorType::kQ8) {
    GEMLET_CHECK_MSG(row_ % kQBlock == 0, "q8 KV rows are whole blocks of 32");
    row_bytes_ = row_ / kQBlock * static_cast<int64_t>(sizeof(BlockQ8));
  } else {
    row_bytes_ = row_ * static_cast<int64_t>(type == TensorType::kF32 ? sizeof(float) : sizeof(uint16_t));
  }
  if (ring_ > 0) {
    cap_ = ring_;
    const size_t bytes = static_cast<size_t>(cap_ * row_bytes_);
    GEMLET_CHECK_MSG(k_.Grow(bytes, bytes).ok() && v_.Grow(bytes, bytes).ok(), "memory for a sliding KV ring");
  }
}

Status KvLayer::Grow(int64_t rows, int64_t limit) {
  GEMLET_CHECK(rows <= limit);
  if (ring_ > 0 || rows <= cap_) return Status::Ok();
  const int64_t cap = std::min(limit, (rows + kKvPageRows - 1) / kKvPageRows * kKvPageRows);
  const size_t max = static_cast<size_t>(limit * row_bytes_);
  RETURN_IF_ERROR(k_.Grow(static_cast<size_t>(cap * row_bytes_), max));
  RETURN_IF_ERROR(v_.Grow(static_cast<size_t>(cap * row_bytes_), max));
  cap_ = cap;
  return Status::Ok();
}

int KvLayer::SegmentsFrom(int64_t n, int64_t first, ops::KvSegment out[2]) const {
  first = std::max<int64_t>(first, 0);
  if (first >= n) return 0;
  if (first < Oldest(n)) return -1;
  if (ring_ == 0) {
    out[0] = ops::KvSegment{k_.data() + first * row_bytes_, v_.data() + first * row_bytes_, row_, first, n - first,
                            type_};
    return 1;
  }
  const int64_t count = n - first;
  const int64_t slot = first % ring_;
  const int64_t run = std::min(count, ring_ - slot);
  out[0] = ops::KvSegment{k_.data() + slot * row_bytes_, v_.data() + slot * row_bytes_, row_, first, run, type_};
  if (run == count) return 1;
  out[1] = ops::KvSegment{k_.data(), v_.data(), row_, first + run, count - run, type_};
  return 2;
}

void KvLayer::Store(GrowableBuffer& dst, int64_t slot, const float* src, int64_t rows) {
  uint8_t* p = dst.data() + slot * row_bytes_;
  if (type_ == TensorType::kF32) {
    std::memcpy(p, src, rows * row_ * sizeof(float));
  } else if (type_ == TensorType::kQ8) {
    ops::QuantizeKvRowQ8(src, reinterpret_cast<BlockQ8*>(p), rows * row_);
  } else {
    kernels::ActiveKernels().f32_to_f16(src, reinterpret_cast<uint16_t*>(p), rows * row_);
  }
}

void KvLayer::Write(int64_t n, const float* k, const float* v, int64_t T) {
  if (ring_ == 0) {
    Store(k_, n, k, T);
    Store(v_, n, v, T);
    return;
  }
  for (int64_t t = std::max<int64_t>(0, T - ring_); t < T; ++t) {
    const int64_t slot = (n + t) % ring_;
    Store(k_, slot, k + t * row_, 1);
    Store(v_, slot, v + t * row_, 1);
  }
}

Status CheckKvType(const model::Gemma4Config& cfg, TensorType type, std::optional<bool> full) {
  if (type == TensorType::kF32 || type == TensorType::kF16) return Status::Ok();
  if (type != TensorType::kQ8) return InvalidArgument("KV cache rows are f32, f16 or q8");
  for (int64_t l = 0; l < cfg.num_layers; ++l) {
    if (!cfg.has_kv(l) || (full.has_value() && cfg.is_full(l) != *full)) continue;
    const int64_t hd = cfg.head_dim_of(l);
    if (hd % kQBlock != 0) {  // (the row, Hkv·hd, then is too)
      return InvalidArgument("a q8 KV cache needs head sizes that are multiples of 32; layer " + std::to_string(l) +
                             " has " + std::to_string(hd) + " (use --kv-type f16 or f32)");
    }
  }
  return Status::Ok();
}

KvCache::KvCache(const model::Gemma4Config& cfg, int64_t context_limit, TensorType type,
                 std::optional<TensorType> sliding_type)
    : limit_(context_limit), type_(type), sliding_type_(sliding_type.value_or(type)) {
  slot_.assign(cfg.num_layers, -1);
  for (int64_t l = 0; l < cfg.num_layers; ++l) {
    if (!cfg.has_kv(l)) continue;
    slot_[l] = static_cast<int>(layers_.size());
    // A sliding query at position t sees keys t − W < u ≤ t: the last W rows suffice; the
    // ring keeps the drafter's one more (kKvDrafterRows) and kKvRollback more for Truncate.
    const int64_t window = std::min(cfg.sliding_window, context_limit);
    const int64_t ring = cfg.is_full(l) ? 0 : std::min(cfg.sliding_window + kKvDrafterRows + kKvRollback, context_limit);
    layers_.emplace_back(cfg.kv_dim(l), ring, cfg.is_full(l) ? type_ : sliding_type_, cfg.is_full(l) ? 0 : window);
  }
}

Status KvCache::Reserve(int64_t end_pos) {
  if (end_pos > limit_) {
    return OutOfRange("context limit exceeded: " + std::to_string(end_pos) + " positions needed (" +
                      std::to_string(n_) + " in the cache + " + std::to_string(end_pos - n_) +
                      " new), the session's limit is " + std::to_string(limit_));
  }
  for (auto& layer : layers_) {
    Status st = layer.Grow(end_pos, limit_);
    if (!st.ok()) return st.WithContext("KV cache at " + std::to_string(end_pos) + " positions");
  }
  return Status::Ok();
}

int KvCache::Slot(int64_t layer) const {
  GEMLET_CHECK(layer >= 0 && layer < static_cast<int64_t>(slot_.size()) && slot_[layer] >= 0);
  return slot_[layer];
}

int KvCache::Past(int64_t layer, ops::KvSegment out[2]) const { return layers_[Slot(layer)].Segments(n_, out); }

int KvCache::PastFrom(int64_t layer, int64_t first, ops::KvSegment out[2]) const {
  return layers_[Slot(layer)].SegmentsFrom(n_, first, out);
}

void KvCache::Commit(int64_t layer, const float* k, const float* v, int64_t T) {
  KvLayer& kl = layers_[Slot(layer)];
  GEMLET_CHECK(kl.is_ring() || n_ + T <= kl.capacity_rows());
  kl.Write(n_, k, v, T);
}

bool KvCache::Truncate(int64_t n) {
  GEMLET_CHECK(n >= 0 && n <= n_);
  for (const auto& layer : layers_) {
    if (layer.OldestRead(n) < layer.Oldest(n_)) return false;  // overwritten since
  }
  n_ = n;
  return true;
}

uint64_t KvCache::bytes_allocated() const {
  uint64_t b = 0;
  for (const auto& l : layers_) b += l.bytes();
  return b;
}

int KvCache::cached_layers() const { return static_cast<int>(layers_.size()); }

}  // namespace gemlet::runtime
