#include "tools/server/prefix_cache.h"

#include <algorithm>

namespace gemlet::server {
namespace {

bool IsPrefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

PrefixCache::Entry* PrefixCache::Find(std::span<const int32_t> prompt) {
  auto best = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->tokens.size() < prompt.size() && IsPrefix(it->tokens, prompt) &&
        (best == entries_.end() || it->tokens.size() > best->tokens.size())) {
      best = it;
    }
  }
  if (best == entries_.end()) return nullptr;
  entries_.splice(entries_.begin(), entries_, best);  // most recently used
  return &entries_.front();
}

PrefixCache::Entry PrefixCache::Take(Entry* e) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (&*it == e) {
      Entry out = std::move(*it);
      entries_.erase(it);
      return out;
    }
  }
  return Entry{};
}

void PrefixCache::Put(std::vector<int32_t> tokens, std::unique_ptr<SequenceState> seq,
                      bool shared) {
  if (capacity_ == 0 || tokens.empty() || !seq) return;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->tokens == tokens) {
      entries_.erase(it);
      break;
    }
  }
  entries_.push_front(Entry{std::move(tokens), std::move(seq), shared});
  while (entries_.size() > capacity_) entries_.pop_back();
}

bool PrefixCache::Contains(std::span<const int32_t> tokens) const {
  for (const auto& e : entries_) {
    if (std::equal(e.tokens.begin(), e.tokens.end(), tokens.begin(), tokens.end())) return true;
  }
  return false;
}

}  // namespace gemlet::server
