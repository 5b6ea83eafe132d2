// MediaCache: a small LRU of encoded media (runtime/media.h) keyed by the content hash of the
// source bytes and the encoding options, the bytes themselves compared on a hash match. The
// image and audio encoders (runtime/image_encoder.h, runtime/audio_encoder.h) each keep one,
// so a second turn, or a second request, about the same file does not run the tower again.
// Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <span>
#include <vector>

#include "runtime/media.h"

namespace gemlet::runtime {

class MediaCache {
 public:
  explicit MediaCache(size_t entries) : entries_(entries) {}

  // The media encoded from `bytes` with hash `hash` (its MediaEmbedding::hash), or null.
  MediaRef Find(uint64_t hash, std::span<const uint8_t> bytes);
  // Keeps `media` (encoded from `bytes`), dropping the least recently used beyond the limit.
  void Insert(std::span<const uint8_t> bytes, MediaRef media);

 private:
  struct Entry {
    std::vector<uint8_t> bytes;
    MediaRef media;
  };
  const size_t entries_;
  std::mutex mu_;
  std::list<Entry> list_;  // front = most recently used
};

}  // namespace gemlet::runtime
