#include "tools/server/scheduler.h"

#include <algorithm>
#include <chrono>

namespace gemlet::server {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "stop";
}

void JobHandle::Cancel() {
  cancelled_.store(true, std::memory_order_relaxed);
  if (wake_) wake_();
}

Scheduler::Scheduler(Backend& backend, Metrics& metrics, const SchedulerOptions& options)
    : backend_(backend),
      metrics_(metrics),
      options_(options),
      max_context_(options.max_context > 0
                       ? std::min(options.max_context, backend.context_length())
                       : backend.context_length()),
      vocab_(backend.vocab_size()),
      cache_(options.cache_sessions) {
  options_.slots = std::max(1, options_.slots);
  options_.prefill_chunk = std::max<int64_t>(1, options_.prefill_chunk);
  slots_.resize(options_.slots);
  metrics_.SetSlots(options_.slots);
  thread_ = std::thread([this] { Loop(); });
}

Scheduler::~Scheduler() { Shutdown(); }

ApiOr<std::shared_ptr<JobHandle>> Scheduler::Submit(JobSpec spec) {
  if (spec.prompt.empty()) return BadRequest("the prompt is empty", "prompt");
  if (static_cast<int64_t>(spec.prompt.size()) >= max_context_) {
    return BadRequest("the prompt has " + std::to_string(spec.prompt.size()) +
                          " tokens; this server's context holds " + std::to_string(max_context_) +
                          " tokens including the reply",
                      "messages", "context_length_exceeded");
  }
  for (int32_t t : spec.prompt) {
    if (t < 0 || t >= vocab_) {
      return BadRequest("token id " + std::to_string(t) + " is outside the vocabulary [0, " +
                            std::to_string(vocab_) + ")",
                        "prompt", "invalid_value");
    }
  }
  if (!spec.sampler || !spec.sink) return InternalError("job without sampler or sink");
  spec.max_tokens = std::max<int64_t>(1, spec.max_tokens);
  auto handle = std::make_shared<JobHandle>();
  handle->wake_ = [this] { cv_.notify_all(); };
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return Overloaded("the server is shutting down", options_.retry_after_s);
    if (queue_.size() >= options_.queue_capacity) {
      metrics_.CountRejected();
      return Overloaded("the server is busy: " + std::to_string(queue_.size()) +
                            " requests are already waiting; retry later",
                        options_.retry_after_s);
    }
    auto job = std::make_unique<Job>();
    job->spec = std::move(spec);
    job->handle = handle;
    queue_.push_back(std::move(job));
    metrics_.SetQueueDepth(static_cast<int64_t>(queue_.size()));
  }
  cv_.notify_all();
  return handle;
}

void Scheduler::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Scheduler::UpdateGauges() {
  int64_t active = 0;
  for (const Slot& s : slots_) active += s.job != nullptr;
  active_ = active;
  metrics_.SetActiveSessions(active);
  metrics_.SetCachedSessions(static_cast<int64_t>(cache_.size()));
}

void Scheduler::Loop() {
  for (;;) {
    // Take new jobs into free slots; drop cancelled ones still waiting.
    std::vector<std::unique_ptr<Job>> admitted, dropped;
    bool stopping;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto busy = [&] {
        for (const Slot& s : slots_) {
          if (s.job) return true;
        }
        return false;
      };
      cv_.wait(lock, [&] { return stop_ || !queue_.empty() || busy(); });
      stopping = stop_;
      for (auto it = queue_.begin(); it != queue_.end();) {
        if ((*it)->handle->cancelled() || stopping) {
          dropped.push_back(std::move(*it));
          it = queue_.erase(it);
        } else {
          ++it;
        }
      }
      int64_t free_slots = 0;
      for (const Slot& s : slots_) free_slots += s.job == nullptr;
      while (free_slots > 0 && !queue_.empty()) {
        admitted.push_back(std::move(queue_.front()));
        queue_.pop_front();
        --free_slots;
      }
      metrics_.SetQueueDepth(static_cast<int64_t>(queue_.size()));
    }
    for (auto& job : dropped) {
      JobOutcome out;
      out.reason = FinishReason::kCancelled;
      out.prompt_tokens = static_cast<int64_t>(job->spec.prompt.size());
      metrics_.CountCancelled();
      job->spec.sink->OnFinish(out);
    }
    for (auto& job : admitted) Admit(std::move(job));
    for (Slot& s : slots_) {
      if (s.job && (stopping || s.job->handle->cancelled())) {
        metrics_.CountCancelled();
        Finish(s, FinishReason::kCancelled);
      }
    }
    UpdateGauges();
    if (stopping) break;

    // One prefill chunk (the slot that has waited longest: lowest index among prefilling),
    // then one decode step over every generating slot.
    for (Slot& s : slots_) {
      if (s.job && !s.decoding) {
        PrefillStep(s);
        break;
      }
    }
    std::vector<Slot*> batch;
    for (Slot& s : slots_) {
      if (s.job && s.decoding && !s.job->handle->cancelled()) batch.push_back(&s);
    }
    if (!batch.empty()) DecodeStep(batch);
    UpdateGauges();
  }
  cache_.Clear();
}

void Scheduler::Admit(std::unique_ptr<Job> job) {
  Slot* slot = nullptr;
  for (Slot& s : slots_) {
    if (!s.job) {
      slot = &s;
      break;
    }
  }
  GEMLET_CHECK(slot != nullptr);
  *slot = Slot{};
  const auto& prompt = job->spec.prompt;
  if (PrefixCache::Entry* e = cache_.Find(prompt)) {
    if (e->shared) {
      auto fork = backend_.Fork(*e->seq);
      if (fork.ok()) {
        slot->seq = std::move(fork).value();
        slot->tokens = e->tokens;
      }
    }
    if (!slot->seq) {
      PrefixCache::Entry taken = cache_.Take(e);
      slot->seq = std::move(taken.seq);
      slot->tokens = std::move(taken.tokens);
    }
    slot->cached = static_cast<int64_t>(slot->tokens.size());
    slot->prompt_done = slot->cached;
    metrics_.CountPrefixCache(true, slot->cached);
  } else {
    metrics_.CountPrefixCache(false, 0);
  }
  slot->job = std::move(job);
  metrics_.AddPromptTokens(static_cast<int64_t>(prompt.size()));
  if (!slot->seq) {
    auto seq = backend_.NewSequence();
    if (!seq.ok()) {
      Finish(*slot, FinishReason::kError, seq.status());
      return;
    }
    slot->seq = std::move(seq).value();
  }
}

void Scheduler::PrefillStep(Slot& slot) {
  const JobSpec& spec = slot.job->spec;
  const int64_t total = static_cast<int64_t>(spec.prompt.size());
  int64_t end = std::min(total, slot.prompt_done + options_.prefill_chunk);
  // Stop at the shared-prefix boundary so a copy can be kept there.
  const bool snapshot = spec.cache_prefix > slot.prompt_done && spec.cache_prefix < total &&
                        options_.cache_sessions > 0;
  if (snapshot) end = std::min(end, spec.cache_prefix);
  std::span<const int32_t> chunk(spec.prompt.data() + slot.prompt_done,
                                 static_cast<size_t>(end - slot.prompt_done));
  if (logits_.size() < static_cast<size_t>(vocab_)) logits_.resize(vocab_);
  const auto t0 = std::chrono::steady_clock::now();
  Status st = backend_.Prefill(*slot.seq, chunk, std::span<float>(logits_.data(), vocab_));
  metrics_.AddPrefill(static_cast<int64_t>(chunk.size()), SecondsSince(t0));
  if (!st.ok()) {
    Finish(slot, FinishReason::kError, st);
    return;
  }
  slot.tokens.insert(slot.tokens.end(), chunk.begin(), chunk.end());
  slot.prompt_done = end;
  if (snapshot && end == spec.cache_prefix && !cache_.Contains(slot.tokens)) {
    auto fork = backend_.Fork(*slot.seq);
    if (fork.ok()) cache_.Put(slot.tokens, std::move(fork).value(), /*shared=*/true);
  }
  if (slot.prompt_done < total) return;
  slot.decoding = true;
  const int32_t token = slot.job->spec.sampler->Sample(std::span<float>(logits_.data(), vocab_));
  HandleToken(slot, token);
}

void Scheduler::DecodeStep(std::vector<Slot*>& batch) {
  const size_t n = batch.size();
  std::vector<SequenceState*> seqs(n);
  std::vector<int32_t> tokens(n);
  for (size_t i = 0; i < n; ++i) {
    seqs[i] = batch[i]->seq.get();
    tokens[i] = batch[i]->pending;
  }
  if (logits_.size() < n * static_cast<size_t>(vocab_)) logits_.resize(n * vocab_);
  const auto t0 = std::chrono::steady_clock::now();
  Status st = backend_.DecodeBatch(seqs, tokens, std::span<float>(logits_.data(), n * vocab_));
  metrics_.AddDecodeStep(static_cast<int64_t>(n), SecondsSince(t0));
  for (size_t i = 0; i < n; ++i) {
    Slot& slot = *batch[i];
    if (!st.ok()) {
      Finish(slot, FinishReason::kError, st);
      continue;
    }
    slot.tokens.push_back(tokens[i]);
    slot.pending = -1;
    const int32_t token = slot.job->spec.sampler->Sample(
        std::span<float>(logits_.data() + i * static_cast<size_t>(vocab_), vocab_));
    HandleToken(slot, token);
  }
}

void Scheduler::HandleToken(Slot& slot, int32_t token) {
  const JobSpec& spec = slot.job->spec;
  slot.generated++;
  metrics_.AddCompletionTokens(1);
  if (std::find(spec.stop_tokens.begin(), spec.stop_tokens.end(), token) !=
      spec.stop_tokens.end()) {
    Finish(slot, FinishReason::kStop);
    return;
  }
  if (!spec.sink->OnToken(token)) {
    Finish(slot, FinishReason::kStop);
    return;
  }
  // The pending token would take position tokens.size(); the sequence may hold max_context_.
  if (slot.generated >= spec.max_tokens ||
      static_cast<int64_t>(slot.tokens.size()) + 1 > max_context_) {
    Finish(slot, FinishReason::kLength);
    return;
  }
  slot.pending = token;
}

void Scheduler::Finish(Slot& slot, FinishReason reason, Status status) {
  JobOutcome out;
  out.reason = reason;
  out.status = std::move(status);
  out.prompt_tokens = static_cast<int64_t>(slot.job->spec.prompt.size());
  out.cached_tokens = slot.cached;
  out.completion_tokens = slot.generated;
  std::shared_ptr<JobSink> sink = slot.job->spec.sink;
  if (reason != FinishReason::kError && slot.seq && !slot.tokens.empty()) {
    cache_.Put(std::move(slot.tokens), std::move(slot.seq));
  }
  slot = Slot{};
  sink->OnFinish(out);
}

}  // namespace gemlet::server
