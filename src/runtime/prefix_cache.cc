#include "runtime/prefix_cache.h"

#include <algorithm>

namespace gemlet::runtime {

int64_t CommonPrefixLength(std::span<const int32_t> a, std::span<const int32_t> b) {
  const auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return ia - a.begin();
}

namespace {

bool SameContent(const Sequence& a, const Sequence& b) {
  return a.length() == b.length() && CommonPrefixLength(a.tokens(), a.media(), b.tokens(), b.media()) == a.length();
}

}  // namespace

PrefixCache::Hit PrefixCache::Lookup(std::span<const int32_t> prompt, SequenceModel& model,
                                     std::span<const MediaSpan> media) {
  auto best = entries_.end();
  int64_t best_len = 0;
  const int64_t limit = static_cast<int64_t>(prompt.size()) - 1;  // leave one token to prefill
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const int64_t n = std::min(CommonPrefixLength(it->seq->tokens(), it->seq->media(), prompt, media), limit);
    if (n <= best_len || it->seq->length() - n > max_rollback_) continue;
    best = it;
    best_len = n;
  }
  if (best == entries_.end()) return {};
  entries_.splice(entries_.begin(), entries_, best);  // most recently used
  Entry& e = entries_.front();
  Hit hit;
  if (e.shared) {
    auto fork = model.Fork(*e.seq, best_len);
    if (!fork.ok()) return {};
    hit.seq = std::move(fork).value();
    return hit;
  }
  hit.seq = std::move(e.seq);
  entries_.pop_front();
  if (hit.seq->length() > best_len && !model.Truncate(*hit.seq, best_len).ok()) return {};
  return hit;
}

void PrefixCache::Put(std::unique_ptr<Sequence> seq, bool shared) {
  if (capacity_ == 0 || !seq || seq->length() == 0) return;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (SameContent(*it->seq, *seq)) {
      entries_.erase(it);
      break;
    }
  }
  entries_.push_front(Entry{std::move(seq), shared});
  while (entries_.size() > capacity_) entries_.pop_back();
}

bool PrefixCache::Contains(std::span<const int32_t> tokens) const {
  for (const auto& e : entries_) {
    if (std::ranges::equal(e.seq->tokens(), tokens)) return true;
  }
  return false;
}

}  // namespace gemlet::runtime
