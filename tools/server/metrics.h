// Server counters and gauges, rendered as Prometheus text (GET /metrics). Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace gemlet::server {

class Metrics {
 public:
  // One finished HTTP request on `route` ("/v1/chat/completions", "other", ...).
  void CountRequest(const std::string& route, int status);

  void AddPromptTokens(int64_t n) { prompt_tokens_ += n; }
  void AddCompletionTokens(int64_t n) { completion_tokens_ += n; }
  // Work done by the scheduler: `tokens` prefilled or decoded in `seconds` of wall time.
  void AddPrefill(int64_t tokens, double seconds);
  // One batched decode step: `batch` tokens (one per active sequence) in `seconds`.
  void AddDecodeStep(int64_t batch, double seconds);
  void CountPrefixCache(bool hit, int64_t reused_tokens);
  // One speculative round (a sequence decoding alone): `drafted` tokens verified, `accepted`
  // of them taken; 0 drafted is a plain step the round took instead.
  void AddDraftRound(int64_t drafted, int64_t accepted);
  void CountRejected() { rejected_++; }
  void CountCancelled() { cancelled_++; }

  void SetQueueDepth(int64_t n) { queue_depth_ = n; }
  void SetActiveSessions(int64_t n) { active_sessions_ = n; }
  void SetSlots(int64_t n) { slots_ = n; }
  void SetCachedSessions(int64_t n) { cached_sessions_ = n; }

  int64_t prefix_cache_hits() const { return cache_hits_; }
  int64_t decode_steps() const { return decode_steps_; }
  int64_t decode_tokens() const { return decode_tokens_; }
  int64_t cancelled() const { return cancelled_; }
  int64_t drafted() const { return drafted_; }
  int64_t draft_accepted() const { return draft_accepted_; }

  std::string RenderPrometheus() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
  double prefill_seconds_ = 0, decode_seconds_ = 0;
  // Rates over the last completed window of at least one second of work.
  double prefill_window_s_ = 0, decode_window_s_ = 0;
  int64_t prefill_window_tokens_ = 0, decode_window_tokens_ = 0;
  double prefill_rate_ = 0, decode_rate_ = 0;

  std::atomic<int64_t> prompt_tokens_{0}, completion_tokens_{0};
  std::atomic<int64_t> prefill_tokens_{0}, decode_tokens_{0}, decode_steps_{0};
  std::atomic<int64_t> cache_hits_{0}, cache_misses_{0}, cache_reused_tokens_{0};
  std::atomic<int64_t> rejected_{0}, cancelled_{0};
  std::atomic<int64_t> draft_rounds_{0}, drafted_{0}, draft_accepted_{0};
  std::atomic<int64_t> queue_depth_{0}, active_sessions_{0}, slots_{0}, cached_sessions_{0};
};

}  // namespace gemlet::server
