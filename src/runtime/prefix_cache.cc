#include "runtime/prefix_cache.h"

#include <algorithm>

namespace gemlet::runtime {

int64_t CommonPrefixLength(std::span<const int32_t> a, std::span<const int32_t> b) {
  const auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return ia - a.begin();
}

PrefixCache::Hit PrefixCache::Lookup(std::span<const int32_t> prompt, SequenceModel& model) {
  auto best = entries_.end();
  int64_t best_len = 0;
  const int64_t limit = static_cast<int64_t>(prompt.size()) - 1;  // leave one token to prefill
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const int64_t n = std::min(CommonPrefixLength(it->tokens, prompt), limit);
    if (n <= best_len || static_cast<int64_t>(it->tokens.size()) - n > max_rollback_) continue;
    best = it;
    best_len = n;
  }
  if (best == entries_.end()) return {};
  entries_.splice(entries_.begin(), entries_, best);  // most recently used
  Entry& e = entries_.front();
  Hit hit;
  hit.tokens.assign(prompt.begin(), prompt.begin() + best_len);
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

void PrefixCache::Put(std::vector<int32_t> tokens, std::unique_ptr<Sequence> seq, bool shared) {
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

}  // namespace gemlet::runtime
