// The generation scheduler: a bounded queue of jobs, a fixed number of slots, and one thread
// that steps the model (runtime::SequenceModel). Each iteration is one step, planned by
// runtime::PlanStep: every generating slot contributes its token, and admitted prompts fill
// the rest of the step's token budget with prefill chunks (continuous batching), so N
// concurrent streams cost about one pass over the weights per token and a new prompt does not
// stall them.
//
// Jobs hand their tokens to a JobSink on the scheduler thread; sinks must be quick (queue the
// token for the HTTP thread and return). A job is cancelled through its JobHandle (the HTTP
// side does it when the client disconnects): its slot is freed at the next iteration.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "tools/server/api_error.h"
#include "tools/server/backend.h"
#include "tools/server/metrics.h"
#include "tools/server/request_log.h"
#include "runtime/prefix_cache.h"
#include "runtime/sequence_model.h"

namespace gemlet::server {

// kDeadEnd: the request's grammar allowed no next token (the sampler returned
// runtime::kNoToken) before it was complete.
enum class FinishReason { kStop, kLength, kCancelled, kError, kDeadEnd };
// "stop", "length", "cancelled", "error", "grammar_dead_end"
const char* FinishReasonName(FinishReason r);

struct JobOutcome {
  FinishReason reason = FinishReason::kStop;
  Status status;                  // why, for kError
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;      // prompt tokens reused from the prefix cache
  int64_t completion_tokens = 0;  // tokens sampled (the stop token included)
};

class JobSink {
 public:
  virtual ~JobSink() = default;
  // A sampled token that is not a stop token. Return false to end the job (e.g. a stop string
  // was found); it then finishes with kStop.
  virtual bool OnToken(int32_t token) = 0;
  // The same with the token's log-probabilities (null unless the request asked for them);
  // the scheduler calls this one.
  virtual bool OnToken(int32_t token, const runtime::PickLogprobs* logprobs) {
    (void)logprobs;
    return OnToken(token);
  }
  // Called exactly once, last.
  virtual void OnFinish(const JobOutcome& outcome) = 0;
};

struct JobSpec {
  std::vector<int32_t> prompt;      // at least one token
  // Runs of `prompt` that take media rows (image soft tokens; starts are prompt positions,
  // sorted): fed as embedding rows, and matched by content in the prefix cache.
  std::vector<runtime::MediaSpan> media;
  int64_t max_tokens = 1 << 30;     // sampled-token budget
  std::vector<int32_t> stop_tokens;  // end of generation (not passed to OnToken)
  std::unique_ptr<TokenSampler> sampler;
  std::shared_ptr<JobSink> sink;
  // When 0 < cache_prefix < prompt size: after prefilling that many prompt tokens, keep a copy
  // of the state in the prefix cache for later prompts that share it (a system prompt).
  int64_t cache_prefix = 0;
  // More choices of the same prompt (n > 1), each with its own sampler and sink: the prompt
  // is prefilled once, its sequence forked when the prefill is done, and every choice decodes
  // in the same steps. They share the job's handle and need a slot each.
  struct Fork {
    std::unique_ptr<TokenSampler> sampler;
    std::shared_ptr<JobSink> sink;
  };
  std::vector<Fork> forks;
};

class JobHandle {
 public:
  void Cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  friend class Scheduler;
  std::atomic<bool> cancelled_{false};
  std::function<void()> wake_;  // wakes the scheduler thread
};

struct SchedulerOptions {
  int slots = 4;                // sequences generating at once
  size_t queue_capacity = 16;   // jobs waiting for a slot before Submit answers 503
  int64_t prefill_chunk = 256;  // prompt tokens of one slot per step
  int64_t step_tokens = 0;      // rows per step (decode rows + prefill chunks); 0: prefill_chunk + slots
  size_t cache_sessions = 4;    // prefix-cache entries
  int64_t max_context = 0;      // tokens per sequence; 0 = the model's context length
  // Tokens a prefix-cache hit may roll back (runtime::PrefixCache); the runtime model keeps
  // runtime::kKvRollback for free.
  int64_t cache_rollback = 16;
  int retry_after_s = 1;        // Retry-After of the 503
  // Called after every step on the scheduler thread (--verbose: per-step timings); may be
  // empty.
  std::function<void(const StepLogEntry&)> on_step;
  // Speculative decoding when one sequence decodes alone and the model drafts
  // (SequenceModel::drafts(); serve --draft). With several streams the batch already reads
  // the weights once for all of them, so they take plain steps.
  bool speculative = true;
};

class Scheduler {
 public:
  Scheduler(runtime::SequenceModel& model, Metrics& metrics, const SchedulerOptions& options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a job. Errors: 503 + Retry-After when the queue is full or the scheduler stopped;
  // 400 (context_length_exceeded) when the prompt does not fit the context.
  ApiOr<std::shared_ptr<JobHandle>> Submit(JobSpec spec);

  // Cancels everything (sinks get kCancelled) and joins the thread. Idempotent.
  void Shutdown();
  // A graceful Shutdown: from now on Submit answers 503; jobs already submitted may run to
  // their end for up to `grace`, then whatever still runs is cancelled as by Shutdown().
  void Drain(std::chrono::milliseconds grace);

  int64_t max_context() const { return max_context_; }
  const SchedulerOptions& options() const { return options_; }

 private:
  struct Job {
    JobSpec spec;
    std::shared_ptr<JobHandle> handle;
  };
  struct Slot {
    std::unique_ptr<Job> job;
    std::unique_ptr<runtime::Sequence> seq;
    int64_t prompt_done = 0;      // prompt tokens in seq
    int64_t cached = 0;
    int64_t generated = 0;
    int32_t pending = -1;         // sampled, not yet fed (decode phase)
    bool decoding = false;
    // A fork (JobSpec::forks) waiting for its parent's prefill: no sequence yet.
    bool awaiting_fork = false;
    std::vector<Slot*> forks;     // the parent: its forks still waiting
  };

  void Loop();
  void Admit(std::unique_ptr<Job> job);
  // One model step over the slots that have work: decode rows and prefill chunks.
  void Step();
  // Runs `parts` (of `slots`) in one step; if that fails, each part alone, so that only the
  // slots whose own part fails finish with an error. Returns which parts succeeded.
  std::vector<bool> RunParts(const std::vector<Slot*>& slots, const std::vector<runtime::StepPart>& parts);
  // After a successful step: the fed tokens are in slot.seq; samples if logits are ready.
  void AfterStep(Slot& slot, std::span<const int32_t> fed, const float* logits);
  // A freshly sampled token: stop checks, the sink, budgets. Finishes the slot or makes the
  // token pending.
  void HandleToken(Slot& slot, int32_t token);
  // The same without finishing: why the job ends with `token` (none: it goes on), when the
  // sequence holds `held` tokens before it.
  std::optional<FinishReason> TakeToken(Slot& slot, int32_t token, int64_t held);
  // A slot that decodes alone, with a model that drafts: one speculative round
  // (SequenceModel::DraftRound) instead of a one-token step.
  void DraftStep(Slot& slot);
  // The parent's prefill is done: each waiting fork gets a copy of its sequence and samples
  // from the same logits.
  void StartForks(Slot& parent, const float* logits);
  void Finish(Slot& slot, FinishReason reason, Status status = Status::Ok());
  void UpdateGauges();

  runtime::SequenceModel& model_;
  Metrics& metrics_;
  SchedulerOptions options_;
  int64_t max_context_;
  int32_t vocab_;
  runtime::PrefixCache cache_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Job>> queue_;
  bool stop_ = false;
  bool draining_ = false;  // Drain(): no new jobs
  std::atomic<int64_t> active_{0};

  // Owned by the scheduler thread.
  std::vector<Slot> slots_;
  std::vector<float> logits_;
  std::thread thread_;
};

}  // namespace gemlet::server
