#include "tools/server/metrics.h"

#include <cstdio>

namespace gemlet::server {
namespace {

void Line(std::string* out, const char* name, const char* type, const char* help, double v) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name,
                type, name, v);
  *out += buf;
}

}  // namespace

void Metrics::CountRequest(const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  requests_[{route, status}]++;
}

void Metrics::AddPrefill(int64_t tokens, double seconds) {
  prefill_tokens_ += tokens;
  std::lock_guard<std::mutex> lock(mu_);
  prefill_seconds_ += seconds;
  prefill_window_tokens_ += tokens;
  prefill_window_s_ += seconds;
  if (prefill_window_s_ >= 1.0 || prefill_rate_ == 0) {
    prefill_rate_ = prefill_window_s_ > 0 ? prefill_window_tokens_ / prefill_window_s_ : 0;
    if (prefill_window_s_ >= 1.0) {
      prefill_window_tokens_ = 0;
      prefill_window_s_ = 0;
    }
  }
}

void Metrics::AddDecodeStep(int64_t batch, double seconds) {
  decode_tokens_ += batch;
  decode_steps_++;
  std::lock_guard<std::mutex> lock(mu_);
  decode_seconds_ += seconds;
  decode_window_tokens_ += batch;
  decode_window_s_ += seconds;
  if (decode_window_s_ >= 1.0 || decode_rate_ == 0) {
    decode_rate_ = decode_window_s_ > 0 ? decode_window_tokens_ / decode_window_s_ : 0;
    if (decode_window_s_ >= 1.0) {
      decode_window_tokens_ = 0;
      decode_window_s_ = 0;
    }
  }
}

void Metrics::CountPrefixCache(bool hit, int64_t reused_tokens) {
  if (hit) {
    cache_hits_++;
    cache_reused_tokens_ += reused_tokens;
  } else {
    cache_misses_++;
  }
}

void Metrics::AddDraftRound(int64_t drafted, int64_t accepted) {
  if (drafted <= 0) return;
  draft_rounds_++;
  drafted_ += drafted;
  draft_accepted_ += accepted;
}

std::string Metrics::RenderPrometheus() const {
  std::string out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out += "# HELP gemlet_requests_total HTTP requests answered, by route and status code.\n";
    out += "# TYPE gemlet_requests_total counter\n";
    for (const auto& [key, n] : requests_) {
      out += "gemlet_requests_total{route=\"" + key.first + "\",code=\"" +
             std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
    }
    Line(&out, "gemlet_prefill_seconds_total", "counter", "Wall time spent in prefill.",
         prefill_seconds_);
    Line(&out, "gemlet_decode_seconds_total", "counter", "Wall time spent in decode steps.",
         decode_seconds_);
    Line(&out, "gemlet_prefill_tokens_per_second", "gauge",
         "Prefill throughput over the last second of prefill work.", prefill_rate_);
    Line(&out, "gemlet_decode_tokens_per_second", "gauge",
         "Aggregate decode throughput (all sessions) over the last second of decode work.",
         decode_rate_);
  }
  Line(&out, "gemlet_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.",
       static_cast<double>(prompt_tokens_));
  Line(&out, "gemlet_completion_tokens_total", "counter", "Tokens generated.",
       static_cast<double>(completion_tokens_));
  Line(&out, "gemlet_prefill_tokens_total", "counter",
       "Prompt tokens run through the model (prefix-cache hits excluded).",
       static_cast<double>(prefill_tokens_));
  Line(&out, "gemlet_decode_tokens_total", "counter", "Tokens run through decode steps.",
       static_cast<double>(decode_tokens_));
  Line(&out, "gemlet_decode_steps_total", "counter",
       "Batched decode steps (one pass over the weights each).",
       static_cast<double>(decode_steps_));
  const double drafted = static_cast<double>(drafted_), accepted = static_cast<double>(draft_accepted_);
  const double rounds = static_cast<double>(draft_rounds_);
  Line(&out, "gemlet_draft_rounds_total", "counter",
       "Speculative verify passes with at least one draft (serve --draft).", rounds);
  Line(&out, "gemlet_draft_tokens_total", "counter", "Draft tokens verified.", drafted);
  Line(&out, "gemlet_draft_accepted_tokens_total", "counter", "Draft tokens accepted.", accepted);
  Line(&out, "gemlet_draft_acceptance_rate", "gauge", "Accepted over verified draft tokens, since the start.",
       drafted > 0 ? accepted / drafted : 0);
  Line(&out, "gemlet_draft_mean_accepted_length", "gauge",
       "Draft tokens accepted per speculative round, since the start.", rounds > 0 ? accepted / rounds : 0);
  Line(&out, "gemlet_prefix_cache_hits_total", "counter",
       "Requests that resumed from a cached prompt prefix.", static_cast<double>(cache_hits_));
  Line(&out, "gemlet_prefix_cache_misses_total", "counter",
       "Requests that found no cached prompt prefix.", static_cast<double>(cache_misses_));
  Line(&out, "gemlet_prefix_cache_reused_tokens_total", "counter",
       "Prompt tokens served from the prefix cache.", static_cast<double>(cache_reused_tokens_));
  Line(&out, "gemlet_requests_rejected_total", "counter",
       "Requests turned away because the queue was full.", static_cast<double>(rejected_));
  Line(&out, "gemlet_requests_cancelled_total", "counter",
       "Generations cancelled because the client went away.", static_cast<double>(cancelled_));
  Line(&out, "gemlet_queue_depth", "gauge", "Requests waiting for a slot.",
       static_cast<double>(queue_depth_));
  Line(&out, "gemlet_active_sessions", "gauge", "Slots generating now.",
       static_cast<double>(active_sessions_));
  Line(&out, "gemlet_slots", "gauge", "Concurrent generation slots.",
       static_cast<double>(slots_));
  Line(&out, "gemlet_cached_sessions", "gauge", "Sessions held by the prefix cache.",
       static_cast<double>(cached_sessions_));
  return out;
}

}  // namespace gemlet::server
