// Prompt-prefix cache: sequences (their token list and model state) kept in an LRU of bounded
// size, so a new prompt that shares a start with one of them resumes from its state instead
// of prefilling it again. Two kinds of entry:
//   shared    a common prefix (a system prompt): a lookup forks a copy and leaves it cached;
//   finished  a finished conversation: the request that continues it takes it out.
// A match is the longest common start of an entry and the prompt, shorter than the prompt
// (so at least one prompt token is left to prefill for logits). An entry that runs past the
// common start is rolled back to it (SequenceModel::Truncate) when that costs at most
// `max_rollback` tokens — a reply the client re-sends in other tokens, a regenerated answer.
// Not thread-safe: the thread that steps the model owns it.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "runtime/sequence_model.h"

namespace gemlet::runtime {

// Tokens at the start of a and b that agree.
int64_t CommonPrefixLength(std::span<const int32_t> a, std::span<const int32_t> b);

class PrefixCache {
 public:
  PrefixCache(size_t capacity, int64_t max_rollback) : capacity_(capacity), max_rollback_(max_rollback) {}

  struct Hit {
    std::unique_ptr<Sequence> seq;  // holds a start of the prompt
  };
  // The state of the best match for `prompt` (the longest usable common start), forked from a
  // shared entry or taken out of a finished one and rolled back; an empty Hit if none matches
  // or the model cannot fork or roll back. Media rows (the prompt's `media`, an entry's
  // Sequence::media()) match only the same media (runtime/media.h: by content).
  Hit Lookup(std::span<const int32_t> prompt, SequenceModel& model, std::span<const MediaSpan> media = {});

  // Adds `seq` as most recently used; evicts the least recently used beyond capacity. An
  // entry with the same tokens and media replaces the old one. Empty sequences are dropped.
  void Put(std::unique_ptr<Sequence> seq, bool shared = false);
  // True if an entry holds exactly `tokens`.
  bool Contains(std::span<const int32_t> tokens) const;

  size_t size() const { return entries_.size(); }
  size_t capacity() const { return capacity_; }
  void Clear() { entries_.clear(); }

 private:
  struct Entry {
    std::unique_ptr<Sequence> seq;
    bool shared = false;
  };
  size_t capacity_;
  int64_t max_rollback_;
  std::list<Entry> entries_;  // front = most recently used
};

}  // namespace gemlet::runtime
