// One request's generation as seen from both sides: the scheduler thread feeds it tokens
// (JobSink), the output router turns them into content / reasoning / tool-call events, and the
// HTTP thread waits for those events to stream or collect them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tools/server/output_router.h"
#include "tools/server/scheduler.h"

namespace gemlet::server {

class Generation : public JobSink {
 public:
  Generation(ChatModel& model, std::vector<std::string> stops, bool chat,
             const std::vector<int32_t>& reply_prefix);

  // JobSink (scheduler thread).
  bool OnToken(int32_t token) override;
  void OnFinish(const JobOutcome& outcome) override;

  // HTTP thread: waits up to `timeout` for news. Moves new events to *events; sets *outcome
  // once the job has finished (after its last events). Returns true if anything arrived.
  bool Wait(std::chrono::milliseconds timeout, std::vector<RouterEvent>* events,
            std::optional<JobOutcome>* outcome);

  // "stop", "length" or "tool_calls" (valid once finished). A stop string found in the text
  // released at the end still counts as "stop", as OpenAI reports it.
  std::string FinishReasonText(const JobOutcome& outcome) const;

 private:
  OutputRouter router_;  // scheduler thread only
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<RouterEvent> events_;
  std::optional<JobOutcome> outcome_;
  int tool_calls_ = 0;
  bool stop_matched_ = false;
};

}  // namespace gemlet::server
