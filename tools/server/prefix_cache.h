// Prompt-prefix cache: finished sequences (their token list and KV state) kept in an LRU of
// bounded size. A new prompt that starts with a cached token list resumes from that state
// instead of prefilling it again. Not thread-safe: the scheduler thread owns it.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <vector>

#include "tools/server/backend.h"

namespace gemlet::server {

class PrefixCache {
 public:
  explicit PrefixCache(size_t capacity) : capacity_(capacity) {}

  struct Entry {
    std::vector<int32_t> tokens;  // exactly the tokens in `seq`
    std::unique_ptr<SequenceState> seq;
    // A shared prefix (e.g. a system prompt): users fork it and leave it in the cache. Other
    // entries (finished conversations) are taken out by the request that continues them.
    bool shared = false;
  };

  // The entry with the longest token list that is a proper prefix of `prompt` (shorter than
  // it, so at least one prompt token is left to prefill for logits), now most recently used;
  // nullptr when nothing matches. Valid until the next non-const call.
  Entry* Find(std::span<const int32_t> prompt);
  // Removes `e` (from Find) from the cache and returns it.
  Entry Take(Entry* e);

  // Adds an entry as most recently used; evicts the least recently used beyond capacity. An
  // entry with the same tokens replaces the old one. Empty token lists are dropped.
  void Put(std::vector<int32_t> tokens, std::unique_ptr<SequenceState> seq, bool shared = false);

  // True if an entry holds exactly `tokens`.
  bool Contains(std::span<const int32_t> tokens) const;

  size_t size() const { return entries_.size(); }
  size_t capacity() const { return capacity_; }
  void Clear() { entries_.clear(); }

 private:
  size_t capacity_;
  std::list<Entry> entries_;  // front = most recently used
};

}  // namespace gemlet::server
