#include "tools/server/api_handlers.h"

#include <algorithm>
#include <random>

#include "tools/server/generation.h"
#include "tools/server/openai_format.h"

namespace gemlet::server {
namespace {

using Clock = std::chrono::steady_clock;

HttpReply JsonReply(const Json& j, int status = 200) {
  HttpReply r;
  r.status = status;
  r.body = Dump(j);
  return r;
}

Usage UsageOf(const JobOutcome& o) {
  Usage u;
  u.prompt_tokens = o.prompt_tokens;
  u.completion_tokens = o.completion_tokens;
  u.cached_tokens = o.cached_tokens;
  return u;
}

// What a finished generation says as an API error (only kError and kCancelled end this way).
ApiError OutcomeError(const JobOutcome& o) {
  if (o.reason == FinishReason::kCancelled) {
    return Overloaded("the generation was cancelled (server shutting down)", 1);
  }
  return FromStatus(o.status);
}

// Drives a generation to its end. on_events gets each batch of events as it arrives and
// returns false when the client is gone; keepalive() is called after `interval` without a
// write (events count as writes when `events_write`) and returns false likewise. Returns the
// outcome, or nullopt after cancelling the job.
std::optional<JobOutcome> Drive(Generation& gen, JobHandle& handle,
                                std::chrono::milliseconds interval,
                                const std::function<bool(std::vector<GenerationEvent>&)>& on_events,
                                const std::function<bool()>& keepalive, bool events_write) {
  auto last = Clock::now();
  for (;;) {
    std::vector<GenerationEvent> events;
    std::optional<JobOutcome> outcome;
    gen.Wait(std::chrono::milliseconds(100), &events, &outcome);
    if (!events.empty()) {
      if (!on_events(events)) {
        handle.Cancel();
        return std::nullopt;
      }
      if (events_write) last = Clock::now();
    }
    if (outcome) return outcome;
    if (Clock::now() - last >= interval) {
      if (!keepalive()) {
        handle.Cancel();
        return std::nullopt;
      }
      last = Clock::now();
    }
  }
}

}  // namespace

int64_t ShiftRoom(std::optional<int64_t> max_tokens, int64_t context) {
  const int64_t want = max_tokens ? *max_tokens : context / 4;
  return std::max<int64_t>(1, std::min(want, context / 2));
}

std::optional<std::pair<size_t, size_t>> OldestTurn(const std::vector<ChatMessage>& messages, bool keep_first_turn) {
  const size_t n = messages.size();
  auto next_user = [&](size_t i) {
    while (i < n && messages[i].role != Role::kUser) ++i;
    return i;
  };
  size_t first = 0;
  while (first < n && (messages[first].role == Role::kSystem || messages[first].role == Role::kDeveloper)) ++first;
  if (keep_first_turn && first < n && messages[first].role == Role::kUser) first = next_user(first + 1);
  if (first >= n) return std::nullopt;
  const size_t end = next_user(first + 1);
  if (end >= n) return std::nullopt;  // [first, n) holds the last user message
  return std::make_pair(first, end);
}

HttpReply ErrorReply(const ApiError& e) {
  HttpReply r;
  r.status = e.status;
  r.body = e.ToJson();
  if (e.retry_after_s > 0) r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_s));
  return r;
}

ApiHandlers::ApiHandlers(ChatModel& model, Scheduler& scheduler, Metrics& metrics,
                         const HandlerOptions& options)
    : model_(model), scheduler_(scheduler), metrics_(metrics), options_(options) {}

SamplingOptions ApiHandlers::WithDefaults(const SamplingOptions& s) const {
  SamplingOptions o = s;
  if (!o.temperature) o.temperature = options_.temperature;
  if (!o.top_p) o.top_p = options_.top_p;
  if (!o.top_k) o.top_k = options_.top_k;
  if (!o.min_p) o.min_p = options_.min_p;
  return o;
}

ApiOr<std::shared_ptr<JobHandle>> ApiHandlers::Start(std::vector<int32_t> prompt,
                                                     int64_t shared_prefix,
                                                     const SamplingOptions& sampling,
                                                     std::optional<int64_t> max_tokens,
                                                     bool ignore_eos,
                                                     std::unique_ptr<runtime::TokenConstraint> constraint,
                                                     std::shared_ptr<JobSink> sink) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  if (options_.max_prompt_tokens > 0 && n > options_.max_prompt_tokens) {
    return BadRequest("the prompt has " + std::to_string(n) + " tokens; this server accepts at "
                      "most " + std::to_string(options_.max_prompt_tokens),
                      "messages", "context_length_exceeded");
  }
  JobSpec spec;
  spec.prompt = std::move(prompt);
  spec.max_tokens = max_tokens ? *max_tokens : scheduler_.max_context();
  if (!ignore_eos) spec.stop_tokens = model_.StopTokens();
  const SamplingOptions s = WithDefaults(sampling);
  uint64_t seed = s.seed ? *s.seed : (static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                         std::random_device{}();
  const int32_t vocab = model_.backend().vocab_size();
  for (const auto& [id, b] : s.logit_bias) {
    if (id >= vocab) {
      return BadRequest("'logit_bias' names token " + std::to_string(id) + "; the vocabulary has " +
                            std::to_string(vocab) + " tokens",
                        "logit_bias", "invalid_value");
    }
  }
  spec.sampler = model_.NewSampler(s, seed, std::move(constraint));
  spec.sink = std::move(sink);
  spec.cache_prefix = shared_prefix;
  return scheduler_.Submit(std::move(spec));
}

HttpReply ApiHandlers::ChatCompletions(std::string_view body) {
  auto req = ParseChatRequest(body, options_.limits);
  if (!req.ok()) return ErrorReply(req.error());
  auto rendered = model_.RenderChat(*req);
  if (!rendered.ok()) return ErrorReply(rendered.error());
  // --context-overflow shift: drop the oldest turns (the first turn last) until the prompt
  // leaves room for the reply; what is left over goes on to the limits below.
  int64_t dropped = 0;
  if (options_.context_overflow == HandlerOptions::ContextOverflow::kShift) {
    const int64_t context = scheduler_.max_context();
    const int64_t room = ShiftRoom(req->max_tokens, context);
    for (bool keep_first = true;;) {
      const int64_t n = static_cast<int64_t>(rendered->tokens.size());
      if (n + room <= context && (options_.max_prompt_tokens <= 0 || n <= options_.max_prompt_tokens)) break;
      auto turn = OldestTurn(req->messages, keep_first);
      if (!turn) {
        if (!keep_first) break;
        keep_first = false;  // only the first turn is left to drop
        continue;
      }
      req->messages.erase(req->messages.begin() + static_cast<std::ptrdiff_t>(turn->first),
                          req->messages.begin() + static_cast<std::ptrdiff_t>(turn->second));
      dropped += static_cast<int64_t>(turn->second - turn->first);
      rendered = model_.RenderChat(*req);
      if (!rendered.ok()) return ErrorReply(rendered.error());
    }
  }
  auto constraint = model_.ChatConstraint(*req);
  if (!constraint.ok()) return ErrorReply(constraint.error());
  auto gen = std::make_shared<Generation>(model_, req->stop, /*chat=*/true,
                                          rendered->reply_prefix);
  auto handle = Start(std::move(rendered->tokens), rendered->shared_prefix, req->sampling,
                      req->max_tokens, req->ignore_eos, std::move(constraint).value(), gen);
  if (!handle.ok()) return ErrorReply(handle.error());

  ResponseMeta meta{NewId("chatcmpl-"), UnixNow(), model_.id()};
  std::shared_ptr<JobHandle> h = *handle;
  const auto interval = options_.keepalive;
  HttpReply reply;
  reply.abandon = [h] { h->Cancel(); };
  if (dropped > 0) reply.headers.emplace_back("X-Gemlet-Dropped-Messages", std::to_string(dropped));
  if (req->stream) {
    const bool include_usage = req->include_usage;
    reply.content_type = "text/event-stream";
    reply.headers.emplace_back("Cache-Control", "no-cache");
    reply.headers.emplace_back("X-Accel-Buffering", "no");
    reply.stream = [gen, h, meta, include_usage, interval](const StreamWriter& write) {
      if (!write(SseData(ChatChunkJson(meta, {{"role", "assistant"}, {"content", ""}},
                                       std::nullopt, include_usage)))) {
        h->Cancel();
        return;
      }
      int tool_index = 0;
      auto on_events = [&](std::vector<GenerationEvent>& events) {
        std::string out;
        for (const auto& e : events) {
          Json delta;
          if (e.kind == GenerationEvent::kContent) {
            delta = {{"content", e.text}};
          } else if (e.kind == GenerationEvent::kReasoning) {
            delta = {{"reasoning_content", e.text}};
          } else {
            delta = {{"tool_calls", Json::array({ToolCallDeltaJson(tool_index++, e.call)})}};
          }
          out += SseData(ChatChunkJson(meta, delta, std::nullopt, include_usage));
        }
        return write(out);
      };
      auto outcome = Drive(*gen, *h, interval, on_events,
                           [&] { return write(SseComment("keep-alive")); }, true);
      if (!outcome) return;
      std::string tail;
      if (outcome->reason == FinishReason::kCancelled) {
        // Shutting down: a final chunk says the reply is cut, the error event why.
        tail += SseData(ChatChunkJson(meta, Json::object(), "cancelled", include_usage));
        tail += SseData(Json::parse(OutcomeError(*outcome).ToJson()));
      } else if (outcome->reason == FinishReason::kError) {
        tail += SseData(Json::parse(OutcomeError(*outcome).ToJson()));
      } else {
        tail += SseData(ChatChunkJson(meta, Json::object(), gen->FinishReasonText(*outcome),
                                      include_usage));
        if (include_usage) tail += SseData(ChatUsageChunkJson(meta, UsageOf(*outcome)));
      }
      tail += SseDone();
      write(tail);
    };
    return reply;
  }
  reply.stream = [gen, h, meta, interval](const StreamWriter& write) {
    ChatResult result;
    auto on_events = [&](std::vector<GenerationEvent>& events) {
      for (auto& e : events) {
        if (e.kind == GenerationEvent::kContent) {
          result.content += e.text;
        } else if (e.kind == GenerationEvent::kReasoning) {
          result.reasoning += e.text;
        } else {
          result.tool_calls.push_back(std::move(e.call));
        }
      }
      return true;
    };
    // Leading whitespace is valid JSON; it keeps the connection checked while we wait.
    auto outcome = Drive(*gen, *h, interval, on_events, [&] { return write(" "); }, false);
    if (!outcome) return;
    if (outcome->reason == FinishReason::kCancelled || outcome->reason == FinishReason::kError) {
      write(OutcomeError(*outcome).ToJson());
      return;
    }
    result.finish_reason = gen->FinishReasonText(*outcome);
    result.usage = UsageOf(*outcome);
    write(Dump(ChatCompletionJson(meta, result)));
  };
  return reply;
}

HttpReply ApiHandlers::Completions(std::string_view body) {
  auto req = ParseCompletionRequest(body, options_.limits);
  if (!req.ok()) return ErrorReply(req.error());
  std::vector<int32_t> prompt;
  if (req->prompt_is_tokens) {
    prompt = req->prompt_tokens;
  } else {
    auto t = model_.Tokenize(req->prompt);
    if (!t.ok()) return ErrorReply(t.error());
    prompt = std::move(t).value();
  }
  if (prompt.empty()) return ErrorReply(BadRequest("'prompt' is empty", "prompt"));
  // `echo` repeats the prompt as text, also when it was given as token ids.
  std::string echo;
  if (req->echo && req->prompt_is_tokens) {
    auto decoder = model_.output_vocab().NewDecoder();
    for (int32_t t : prompt) echo += decoder->Push(t);
    echo += decoder->Flush();
  } else if (req->echo) {
    echo = req->prompt;
  }
  auto constraint = model_.TextConstraint(req->format);
  if (!constraint.ok()) return ErrorReply(constraint.error());
  auto gen = std::make_shared<Generation>(model_, req->stop, /*chat=*/false,
                                          std::vector<int32_t>{});
  auto handle = Start(std::move(prompt), 0, req->sampling, req->max_tokens, req->ignore_eos,
                      std::move(constraint).value(), gen);
  if (!handle.ok()) return ErrorReply(handle.error());

  ResponseMeta meta{NewId("cmpl-"), UnixNow(), model_.id()};
  std::shared_ptr<JobHandle> h = *handle;
  const auto interval = options_.keepalive;
  HttpReply reply;
  reply.abandon = [h] { h->Cancel(); };
  if (req->stream) {
    const bool include_usage = req->include_usage;
    reply.content_type = "text/event-stream";
    reply.headers.emplace_back("Cache-Control", "no-cache");
    reply.stream = [gen, h, meta, include_usage, interval, echo](const StreamWriter& write) {
      if (!echo.empty() &&
          !write(SseData(TextChunkJson(meta, echo, std::nullopt, include_usage)))) {
        h->Cancel();
        return;
      }
      auto on_events = [&](std::vector<GenerationEvent>& events) {
        std::string out;
        for (const auto& e : events) {
          out += SseData(TextChunkJson(meta, e.text, std::nullopt, include_usage));
        }
        return write(out);
      };
      auto outcome = Drive(*gen, *h, interval, on_events,
                           [&] { return write(SseComment("keep-alive")); }, true);
      if (!outcome) return;
      std::string tail;
      if (outcome->reason == FinishReason::kCancelled) {  // shutting down (see chat)
        tail += SseData(TextChunkJson(meta, "", "cancelled", include_usage));
        tail += SseData(Json::parse(OutcomeError(*outcome).ToJson()));
      } else if (outcome->reason == FinishReason::kError) {
        tail += SseData(Json::parse(OutcomeError(*outcome).ToJson()));
      } else {
        tail += SseData(TextChunkJson(meta, "", gen->FinishReasonText(*outcome), include_usage));
        if (include_usage) tail += SseData(TextUsageChunkJson(meta, UsageOf(*outcome)));
      }
      tail += SseDone();
      write(tail);
    };
    return reply;
  }
  reply.stream = [gen, h, meta, interval, echo](const StreamWriter& write) {
    TextResult result;
    result.text = echo;
    auto on_events = [&](std::vector<GenerationEvent>& events) {
      for (const auto& e : events) result.text += e.text;
      return true;
    };
    auto outcome = Drive(*gen, *h, interval, on_events, [&] { return write(" "); }, false);
    if (!outcome) return;
    if (outcome->reason == FinishReason::kCancelled || outcome->reason == FinishReason::kError) {
      write(OutcomeError(*outcome).ToJson());
      return;
    }
    result.finish_reason = gen->FinishReasonText(*outcome);
    result.usage = UsageOf(*outcome);
    write(Dump(TextCompletionJson(meta, result)));
  };
  return reply;
}

HttpReply ApiHandlers::Models() const {
  return JsonReply(ModelListJson(model_.id(), options_.created));
}

HttpReply ApiHandlers::Model(const std::string& id) const {
  if (id != model_.id()) {
    return ErrorReply(NotFound("The model '" + id + "' does not exist", "model_not_found"));
  }
  return JsonReply(ModelJson(model_.id(), options_.created));
}

HttpReply ApiHandlers::Health() const {
  return JsonReply(Json{{"status", "ok"}, {"model", model_.id()}});
}

HttpReply ApiHandlers::MetricsText() const {
  HttpReply r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = metrics_.RenderPrometheus();
  return r;
}

}  // namespace gemlet::server
