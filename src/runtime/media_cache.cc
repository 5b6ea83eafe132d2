#include "runtime/media_cache.h"

#include <algorithm>

namespace gemlet::runtime {

MediaRef MediaCache::Find(uint64_t hash, std::span<const uint8_t> bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = list_.begin(); it != list_.end(); ++it) {
    if (it->media->hash == hash && std::ranges::equal(it->bytes, bytes)) {
      list_.splice(list_.begin(), list_, it);
      return list_.front().media;
    }
  }
  return nullptr;
}

void MediaCache::Insert(std::span<const uint8_t> bytes, MediaRef media) {
  if (entries_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  list_.push_front(Entry{std::vector<uint8_t>(bytes.begin(), bytes.end()), std::move(media)});
  while (list_.size() > entries_) list_.pop_back();
}

}  // namespace gemlet::runtime
