// What speculative decoding (runtime/speculative.h) is asked to do, and what it did: the
// proposer (the MTP drafter, prompt lookup, either per round, or none), the draft length, the
// bench mode that replaces proposals with a known continuation, and the counters that run's
// timings and the server's /metrics report.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace gemlet::runtime {

enum class DraftMode {
  kOff,     // plain decoding
  kMtp,     // the MTP drafter (Engine::drafter(); an error without one)
  kLookup,  // prompt lookup: the continuation of an earlier match of the last tokens
  kAuto,    // per round: a lookup match of at least two tokens, else the drafter if any
};

// "off", "mtp", "lookup", "auto" (the --draft flag); InvalidArgument otherwise.
Result<DraftMode> ParseDraftMode(std::string_view s);
const char* DraftModeName(DraftMode mode);

// Most drafts per round: a rejected round rolls back at most this many positions, which
// the KV rings keep (runtime/kv_cache.h, kKvRollback).
inline constexpr int64_t kMaxDraft = 16;

struct SpeculativeOptions {
  DraftMode mode = DraftMode::kOff;
  int64_t draft_max = 8;  // drafts per round at most, 1 … kMaxDraft (--draft-max)
  // true: the draft length follows the measured acceptance and costs (runtime/draft_policy.h),
  // 0 … draft_max, pausing when drafts do not pay; false: every round drafts draft_max
  // (fewer only where the budget ends or lookup finds fewer), the forced K of tests.
  bool adaptive = true;
  // The longest and shortest n-gram prompt lookup matches (runtime/prompt_lookup.h).
  int64_t lookup_max_ngram = 4, lookup_min_ngram = 1;

  // Bench mode (gemlet bench --draft-p): the k-th draft of a round, which would be generated
  // token j, is replaced with probability `oracle_p` by oracle[j] (the target's own greedy
  // continuation, computed beforehand), while the proposer still runs (its cost is paid).
  // Empty: off.
  std::span<const int32_t> oracle;
  double oracle_p = 0;
  uint64_t oracle_seed = 0;

  Status Validate() const;
};

struct SpeculativeStats {
  int64_t rounds = 0;       // verify passes of at least one draft
  int64_t plain_steps = 0;  // one-token steps (no draft that round)
  int64_t drafted = 0;      // draft tokens verified
  int64_t accepted = 0;     // of them, accepted
  int64_t mtp_rounds = 0, lookup_rounds = 0;
  double draft_ms = 0;   // time in the proposers (MTP draft steps, lookups)
  double verify_ms = 0;  // time in verify passes (rounds with drafts)
  double acceptance_rate() const { return drafted > 0 ? static_cast<double>(accepted) / drafted : 0; }
  // Drafts accepted per round (a round also yields the target's own next token).
  double mean_accepted() const { return rounds > 0 ? static_cast<double>(accepted) / rounds : 0; }
  void Add(const SpeculativeStats& o) {
    rounds += o.rounds;
    plain_steps += o.plain_steps;
    drafted += o.drafted;
    accepted += o.accepted;
    mtp_rounds += o.mtp_rounds;
    lookup_rounds += o.lookup_rounds;
    draft_ms += o.draft_ms;
    verify_ms += o.verify_ms;
  }
};

// Called for the rows of a verify pass in order with the logits after each [V]: sets *token to
// what the sampler draws there (exactly plain decoding's draw at that position, which takes
// the token) and returns whether the generation goes on after it. A draft stands while the
// draws equal it (runtime/speculative.h).
using RowDraw = std::function<bool(int64_t row, std::span<const float> logits, int32_t* token)>;

}  // namespace gemlet::runtime
