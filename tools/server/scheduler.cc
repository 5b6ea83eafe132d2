#include "tools/server/scheduler.h"

#include <algorithm>
#include <chrono>

#include "base/clock.h"

namespace gemlet::server {
namespace {

// The parts of `media` (starts are prompt positions) inside prompt tokens [b, e), with starts
// relative to b, in *out.
std::span<const runtime::MediaSpan> ChunkMedia(const std::vector<runtime::MediaSpan>& media, int64_t b, int64_t e,
                                               std::vector<runtime::MediaSpan>* out) {
  out->clear();
  for (const runtime::MediaSpan& m : media) {
    const int64_t lo = std::max(m.start, b), hi = std::min(m.start + m.rows, e);
    if (lo >= hi) continue;
    runtime::MediaSpan s = m;
    s.start = lo - b;
    s.offset = m.offset + (lo - m.start);
    s.rows = hi - lo;
    out->push_back(std::move(s));
  }
  return *out;
}

}  // namespace

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
    case FinishReason::kDeadEnd: return "grammar_dead_end";
  }
  return "stop";
}

void JobHandle::Cancel() {
  cancelled_.store(true, std::memory_order_relaxed);
  if (wake_) wake_();
}

Scheduler::Scheduler(runtime::SequenceModel& model, Metrics& metrics, const SchedulerOptions& options)
    : model_(model),
      metrics_(metrics),
      options_(options),
      max_context_(options.max_context > 0 ? std::min(options.max_context, model.context_length())
                                           : model.context_length()),
      vocab_(model.vocab_size()),
      cache_(options.cache_sessions, options.cache_rollback) {
  options_.slots = std::max(1, options_.slots);
  options_.prefill_chunk = std::max<int64_t>(1, options_.prefill_chunk);
  if (options_.step_tokens <= 0) options_.step_tokens = options_.prefill_chunk + options_.slots;
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
  for (const auto& f : spec.forks) {
    if (!f.sampler || !f.sink) return InternalError("fork without sampler or sink");
  }
  if (static_cast<int64_t>(spec.forks.size()) + 1 > options_.slots) {
    return BadRequest("'n' is " + std::to_string(spec.forks.size() + 1) + "; this server runs " +
                          std::to_string(options_.slots) + " sequences at once (--slots)",
                      "n", "invalid_value");
  }
  spec.max_tokens = std::max<int64_t>(1, spec.max_tokens);
  auto handle = std::make_shared<JobHandle>();
  handle->wake_ = [this] { cv_.notify_all(); };
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || draining_) return Overloaded("the server is shutting down", options_.retry_after_s);
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

void Scheduler::Drain(std::chrono::milliseconds grace) {
  const auto deadline = SteadyClock::now() + grace;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      draining_ = true;
      if (stop_ || (queue_.empty() && active_.load() == 0)) break;
    }
    if (SteadyClock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Shutdown();
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
      // A job takes a slot per choice (in order: one that needs more waits for them).
      while (!queue_.empty() &&
             free_slots >= 1 + static_cast<int64_t>(queue_.front()->spec.forks.size())) {
        free_slots -= 1 + static_cast<int64_t>(queue_.front()->spec.forks.size());
        admitted.push_back(std::move(queue_.front()));
        queue_.pop_front();
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

    Step();
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
  // The forks wait in slots of their own (Loop admitted the job with enough free ones).
  for (JobSpec::Fork& f : job->spec.forks) {
    Slot* fs = nullptr;
    for (Slot& s : slots_) {
      if (!s.job && &s != slot) {
        fs = &s;
        break;
      }
    }
    GEMLET_CHECK(fs != nullptr);
    *fs = Slot{};
    auto fj = std::make_unique<Job>();
    fj->spec.prompt = job->spec.prompt;
    fj->spec.max_tokens = job->spec.max_tokens;
    fj->spec.stop_tokens = job->spec.stop_tokens;
    fj->spec.sampler = std::move(f.sampler);
    fj->spec.sink = std::move(f.sink);
    fj->handle = job->handle;
    fs->job = std::move(fj);
    fs->awaiting_fork = true;
    slot->forks.push_back(fs);
  }
  job->spec.forks.clear();
  const auto& prompt = job->spec.prompt;
  runtime::PrefixCache::Hit hit = cache_.Lookup(prompt, model_, job->spec.media);
  if (hit.seq) {
    slot->seq = std::move(hit.seq);
    slot->cached = slot->seq->length();
    slot->prompt_done = slot->cached;
  }
  metrics_.CountPrefixCache(slot->seq != nullptr, slot->cached);
  slot->job = std::move(job);
  metrics_.AddPromptTokens(static_cast<int64_t>(prompt.size()));
  if (!slot->seq) {
    auto seq = model_.NewSequence();
    if (!seq.ok()) {
      Finish(*slot, FinishReason::kError, seq.status());
      return;
    }
    slot->seq = std::move(seq).value();
  }
  model_.BeginRequest(*slot->seq);
}

void Scheduler::Step() {
  // What each slot has waiting: its sampled token, or the rest of its prompt (up to the
  // shared-prefix boundary, so that a copy can be kept there).
  std::vector<Slot*> active;
  std::vector<int64_t> pending;
  for (Slot& s : slots_) {
    if (!s.job || s.awaiting_fork || s.job->handle->cancelled()) continue;
    const JobSpec& spec = s.job->spec;
    int64_t n = 1;
    if (!s.decoding) {
      const int64_t total = static_cast<int64_t>(spec.prompt.size());
      int64_t end = total;
      if (spec.cache_prefix > s.prompt_done && spec.cache_prefix < total && options_.cache_sessions > 0) {
        end = spec.cache_prefix;
      }
      n = end - s.prompt_done;
    }
    active.push_back(&s);
    pending.push_back(n);
  }
  if (active.empty()) return;
  if (active.size() == 1 && active[0]->decoding && active[0]->forks.empty() && options_.speculative &&
      model_.drafts()) {
    DraftStep(*active[0]);
    return;
  }
  const std::vector<int64_t> take = runtime::PlanStep(pending, options_.step_tokens, options_.prefill_chunk);
  std::vector<Slot*> slots;
  std::vector<runtime::StepPart> parts;
  // The media rows of each prefill chunk (starts relative to the chunk), kept for the step.
  std::vector<std::vector<runtime::MediaSpan>> chunk_media(active.size());
  int64_t decode_rows = 0, prefill_rows = 0;
  for (size_t i = 0; i < active.size(); ++i) {
    if (take[i] == 0) continue;
    Slot& s = *active[i];
    runtime::StepPart p;
    p.seq = s.seq.get();
    if (s.decoding) {
      p.tokens = std::span<const int32_t>(&s.pending, 1);
      ++decode_rows;
    } else {
      const auto& prompt = s.job->spec.prompt;
      p.tokens = std::span<const int32_t>(prompt.data() + s.prompt_done, static_cast<size_t>(take[i]));
      p.media = ChunkMedia(s.job->spec.media, s.prompt_done, s.prompt_done + take[i], &chunk_media[i]);
      p.logits = s.prompt_done + take[i] == static_cast<int64_t>(prompt.size());
      prefill_rows += take[i];
    }
    slots.push_back(&s);
    parts.push_back(p);
  }
  int64_t n_logits = 0;
  for (const auto& p : parts) n_logits += p.logits;
  if (logits_.size() < static_cast<size_t>(n_logits * vocab_)) logits_.resize(n_logits * vocab_);
  const auto t0 = SteadyClock::now();
  const std::vector<bool> ok = RunParts(slots, parts);
  const double secs = SecondsSince(t0);
  const double rows = static_cast<double>(decode_rows + prefill_rows);
  if (prefill_rows > 0) metrics_.AddPrefill(prefill_rows, secs * prefill_rows / rows);
  if (decode_rows > 0) metrics_.AddDecodeStep(decode_rows, secs * decode_rows / rows);
  if (options_.on_step) {
    StepLogEntry e;
    e.decode_rows = decode_rows;
    e.prefill_rows = prefill_rows;
    e.sequences = static_cast<int64_t>(parts.size());
    e.duration_ms = secs * 1000;
    options_.on_step(e);
  }
  int64_t k = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const float* lg = parts[i].logits ? logits_.data() + (k++) * vocab_ : nullptr;
    if (ok[i]) AfterStep(*slots[i], parts[i].tokens, lg);
  }
}

std::vector<bool> Scheduler::RunParts(const std::vector<Slot*>& slots, const std::vector<runtime::StepPart>& parts) {
  std::vector<bool> ok(parts.size(), true);
  Status st = model_.Step(parts, std::span<float>(logits_.data(), logits_.size()));
  if (st.ok()) return ok;
  if (parts.size() == 1) {
    Finish(*slots[0], FinishReason::kError, st);
    ok[0] = false;
    return ok;
  }
  // A failed step changed nothing: run each part alone to find whose it was.
  int64_t k = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    float* lg = logits_.data() + k * vocab_;
    st = model_.Step(std::span<const runtime::StepPart>(&parts[i], 1),
                     std::span<float>(lg, parts[i].logits ? static_cast<size_t>(vocab_) : 0));
    k += parts[i].logits;
    if (!st.ok()) {
      Finish(*slots[i], FinishReason::kError, st);
      ok[i] = false;
    }
  }
  return ok;
}

void Scheduler::AfterStep(Slot& slot, std::span<const int32_t> fed, const float* logits) {
  if (!slot.decoding) {
    const JobSpec& spec = slot.job->spec;
    slot.prompt_done += static_cast<int64_t>(fed.size());
    if (slot.prompt_done == spec.cache_prefix && options_.cache_sessions > 0 &&
        slot.prompt_done < static_cast<int64_t>(spec.prompt.size()) && !cache_.Contains(slot.seq->tokens())) {
      auto fork = model_.Fork(*slot.seq, slot.seq->length());
      if (fork.ok()) cache_.Put(std::move(fork).value(), /*shared=*/true);
    }
    if (logits == nullptr) return;
    slot.decoding = true;
    if (!slot.forks.empty()) StartForks(slot, logits);
  } else {
    slot.pending = -1;
  }
  GEMLET_CHECK(logits != nullptr);
  std::span<float> lg(const_cast<float*>(logits), static_cast<size_t>(vocab_));
  // Tokens the job may still sample (this one included): its limit, and the context's room.
  slot.job->spec.sampler->SetBudget(std::min(slot.job->spec.max_tokens - slot.generated,
                                             max_context_ - slot.seq->length()));
  HandleToken(slot, slot.job->spec.sampler->Sample(lg));
}

void Scheduler::StartForks(Slot& parent, const float* logits) {
  std::vector<Slot*> forks = std::move(parent.forks);
  parent.forks.clear();
  std::vector<float> copy;
  for (Slot* f : forks) {
    if (!f->job || !f->awaiting_fork || f->job->handle != parent.job->handle) continue;
    auto seq = model_.Fork(*parent.seq, parent.seq->length());
    if (!seq.ok()) {
      Finish(*f, FinishReason::kError, seq.status());
      continue;
    }
    f->seq = std::move(seq).value();
    f->awaiting_fork = false;
    f->decoding = true;
    f->prompt_done = parent.prompt_done;
    f->cached = parent.cached;
    copy.assign(logits, logits + vocab_);  // a sampler may change the logits it is given
    f->job->spec.sampler->SetBudget(std::min(f->job->spec.max_tokens, max_context_ - f->seq->length()));
    HandleToken(*f, f->job->spec.sampler->Sample(std::span<float>(copy)));
  }
}

void Scheduler::HandleToken(Slot& slot, int32_t token) {
  if (auto end = TakeToken(slot, token, slot.seq->length())) Finish(slot, *end);
}

std::optional<FinishReason> Scheduler::TakeToken(Slot& slot, int32_t token, int64_t held) {
  const JobSpec& spec = slot.job->spec;
  if (token < 0) return FinishReason::kDeadEnd;  // the constraint allowed nothing
  slot.generated++;
  metrics_.AddCompletionTokens(1);
  if (std::find(spec.stop_tokens.begin(), spec.stop_tokens.end(), token) != spec.stop_tokens.end()) {
    return FinishReason::kStop;
  }
  if (!spec.sink->OnToken(token, spec.sampler->logprobs())) return FinishReason::kStop;
  // The pending token would take position `held`; the sequence may hold max_context_.
  if (slot.generated >= spec.max_tokens || held + 1 > max_context_) return FinishReason::kLength;
  slot.pending = token;
  return std::nullopt;
}

void Scheduler::DraftStep(Slot& slot) {
  const JobSpec& spec = slot.job->spec;
  const int64_t n0 = slot.seq->length();  // the pending token goes here
  // Drafts that can be used: the job's budget and the context's room, the pending token's
  // row included.
  const int64_t room = std::min(spec.max_tokens - slot.generated - 1, max_context_ - n0 - 1);
  if (logits_.size() < static_cast<size_t>(vocab_)) logits_.resize(vocab_);
  std::optional<FinishReason> end;
  int64_t rows = 0;
  const runtime::RowDraw draw = [&](int64_t row, std::span<const float> lg, int32_t* token) {
    // The row's draw follows n0 + row + 1 held tokens. A sampler may change the logits.
    std::copy(lg.begin(), lg.end(), logits_.begin());
    const int64_t held = n0 + row + 1;
    spec.sampler->SetBudget(std::min(spec.max_tokens - slot.generated, max_context_ - held));
    *token = spec.sampler->Sample(std::span<float>(logits_.data(), static_cast<size_t>(vocab_)));
    ++rows;
    end = TakeToken(slot, *token, held);
    return !end.has_value();
  };
  runtime::SpeculativeStats stats;
  bool more = false;
  const auto t0 = SteadyClock::now();
  const Status st = model_.DraftRound(*slot.seq, slot.pending, room, draw, &more, &stats);
  const double secs = SecondsSince(t0);
  if (!st.ok()) {
    Finish(slot, FinishReason::kError, st);
    return;
  }
  metrics_.AddDecodeStep(rows, secs);
  metrics_.AddDraftRound(stats.drafted, stats.accepted);
  if (options_.on_step) {
    StepLogEntry e;
    e.decode_rows = stats.drafted + 1;
    e.sequences = 1;
    e.duration_ms = secs * 1000;
    options_.on_step(e);
  }
  if (end) Finish(slot, *end);
}

void Scheduler::Finish(Slot& slot, FinishReason reason, Status status) {
  JobOutcome out;
  out.reason = reason;
  out.status = std::move(status);
  out.prompt_tokens = static_cast<int64_t>(slot.job->spec.prompt.size());
  out.cached_tokens = slot.cached;
  out.completion_tokens = slot.generated;
  std::shared_ptr<JobSink> sink = slot.job->spec.sink;
  std::shared_ptr<JobHandle> handle = slot.job->handle;
  std::vector<Slot*> forks = std::move(slot.forks);
  if (reason != FinishReason::kError && slot.seq) {
    cache_.Put(std::move(slot.seq));
  }
  slot = Slot{};
  sink->OnFinish(out);
  // Forks still waiting for this prefill end the same way.
  for (Slot* f : forks) {
    if (f->job && f->awaiting_fork && f->job->handle == handle) Finish(*f, reason, out.status);
  }
}

}  // namespace gemlet::server
