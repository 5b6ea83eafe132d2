#include "tools/server/api_handlers.h"

#include <algorithm>
#include <random>

#include "tools/server/openai_format.h"

namespace gemlet::server {
namespace {

using Clock = std::chrono::steady_clock;

Usage UsageOf(const std::vector<JobOutcome>& o) {
  const UsageTotals t = TotalsOf(o);
  Usage u;
  u.prompt_tokens = t.prompt;
  u.completion_tokens = t.completion;
  u.cached_tokens = t.cached;
  return u;
}

bool Failed(const JobOutcome& o) {
  return o.reason == FinishReason::kCancelled || o.reason == FinishReason::kError;
}

// The first cancelled or failed choice, if any.
const JobOutcome* FirstFailure(const std::vector<JobOutcome>& outcomes) {
  for (const auto& o : outcomes) {
    if (Failed(o)) return &o;
  }
  return nullptr;
}

// Drives every choice to its end. on_events gets each batch of a choice's events as they
// arrive and returns false when the client is gone; keepalive() is called after `interval`
// without a write (events count as writes when `events_write`) and returns false likewise.
// Returns the outcomes, or nullopt after cancelling the job.
std::optional<std::vector<JobOutcome>> Drive(
    const Started& s, std::chrono::milliseconds interval,
    const std::function<bool(size_t, std::vector<GenerationEvent>&)>& on_events,
    const std::function<bool()>& keepalive, bool events_write) {
  const size_t n = s.gens.size();
  std::vector<std::optional<JobOutcome>> outcomes(n);
  size_t done = 0;
  // One choice waits on its generation; several poll each in turn.
  const auto wait = std::chrono::milliseconds(n == 1 ? 100 : 10);
  auto last = Clock::now();
  while (done < n) {
    for (size_t i = 0; i < n; ++i) {
      if (outcomes[i]) continue;
      std::vector<GenerationEvent> events;
      std::optional<JobOutcome> outcome;
      s.gens[i]->Wait(wait, &events, &outcome);
      if (!events.empty()) {
        if (!on_events(i, events)) {
          s.handle->Cancel();
          return std::nullopt;
        }
        if (events_write) last = Clock::now();
      }
      if (outcome) {
        outcomes[i] = outcome;
        ++done;
      }
    }
    if (done < n && Clock::now() - last >= interval) {
      if (!keepalive()) {
        s.handle->Cancel();
        return std::nullopt;
      }
      last = Clock::now();
    }
  }
  std::vector<JobOutcome> out;
  for (auto& o : outcomes) out.push_back(*o);
  return out;
}

}  // namespace

HttpReply JsonReply(const Json& j, int status) {
  HttpReply r;
  r.status = status;
  r.body = Dump(j);
  return r;
}

ApiError OutcomeError(const JobOutcome& o) {
  if (o.reason == FinishReason::kCancelled) {
    return Overloaded("the generation was cancelled (server shutting down)", 1);
  }
  return FromStatus(o.status);
}

UsageTotals TotalsOf(const std::vector<JobOutcome>& outcomes) {
  UsageTotals t;
  if (!outcomes.empty()) {
    t.prompt = outcomes[0].prompt_tokens;
    t.cached = outcomes[0].cached_tokens;
  }
  for (const auto& o : outcomes) t.completion += o.completion_tokens;
  return t;
}

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

namespace {
std::vector<std::shared_ptr<JobSink>> Sinks(const std::vector<std::shared_ptr<Generation>>& gens) {
  return std::vector<std::shared_ptr<JobSink>>(gens.begin(), gens.end());
}
}  // namespace

ApiOr<std::shared_ptr<JobHandle>> ApiHandlers::Start(
    std::vector<int32_t> prompt, int64_t shared_prefix, std::vector<runtime::MediaSpan> media,
    const SamplingOptions& sampling,
    std::optional<int64_t> max_tokens, bool ignore_eos,
    std::vector<std::unique_ptr<runtime::TokenConstraint>> constraints,
    const std::vector<std::shared_ptr<JobSink>>& sinks) {
  const int64_t n = static_cast<int64_t>(prompt.size());
  if (options_.max_prompt_tokens > 0 && n > options_.max_prompt_tokens) {
    return BadRequest("the prompt has " + std::to_string(n) + " tokens; this server accepts at "
                      "most " + std::to_string(options_.max_prompt_tokens),
                      "messages", "context_length_exceeded");
  }
  JobSpec spec;
  spec.prompt = std::move(prompt);
  spec.media = std::move(media);
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
  GEMLET_CHECK(!sinks.empty() && constraints.size() == sinks.size());
  spec.sampler = model_.NewSampler(s, seed, std::move(constraints[0]));
  spec.sink = sinks[0];
  for (size_t i = 1; i < sinks.size(); ++i) {
    spec.forks.push_back({model_.NewSampler(s, seed + i, std::move(constraints[i])), sinks[i]});
  }
  spec.cache_prefix = shared_prefix;
  return scheduler_.Submit(std::move(spec));
}

ApiOr<std::unique_ptr<ChatRequest>> ApiHandlers::FetchImageUrls(const ChatRequest& req) const {
  std::unique_ptr<ChatRequest> out;
  for (size_t i = 0; i < req.messages.size(); ++i) {
    for (size_t k = 0; k < req.messages[i].images.size(); ++k) {
      const ImageInput& im = req.messages[i].images[k];
      if (im.url.empty()) continue;
      if (!options_.allow_image_urls) {
        return BadRequest("'" + im.part + "': image URLs are not fetched by this server (start it with " +
                              "--allow-image-urls); send the image as a data: URL (data:image/png;base64,...)",
                          im.part, "invalid_image");
      }
      auto bytes = FetchImage(im.url, im.part, options_.image_fetch);
      if (!bytes.ok()) return BadRequest(bytes.status().message(), im.part, "invalid_image");
      if (!out) out = std::make_unique<ChatRequest>(req);
      ImageInput& dst = out->messages[i].images[k];
      dst.bytes = std::move(bytes).value();
      dst.url.clear();
    }
  }
  return out;
}

ApiOr<Started> ApiHandlers::StartChat(const ChatRequest& original) {
  auto fetched = FetchImageUrls(original);
  if (!fetched.ok()) return fetched.error();
  const ChatRequest& request = *fetched ? **fetched : original;
  auto rendered = model_.RenderChat(request);
  if (!rendered.ok()) return rendered.error();
  // --context-overflow shift: drop the oldest turns (the first turn last) until the prompt
  // leaves room for the reply; what is left over goes on to the limits of Start.
  int64_t dropped = 0;
  ChatRequest shifted;
  if (options_.context_overflow == HandlerOptions::ContextOverflow::kShift) {
    const int64_t context = scheduler_.max_context();
    const int64_t room = ShiftRoom(request.max_tokens, context);
    for (bool keep_first = true;;) {
      const int64_t n = static_cast<int64_t>(rendered->tokens.size());
      if (n + room <= context && (options_.max_prompt_tokens <= 0 || n <= options_.max_prompt_tokens)) break;
      if (dropped == 0) shifted = request;
      auto turn = OldestTurn(shifted.messages, keep_first);
      if (!turn) {
        if (!keep_first) break;
        keep_first = false;  // only the first turn is left to drop
        continue;
      }
      shifted.messages.erase(shifted.messages.begin() + static_cast<std::ptrdiff_t>(turn->first),
                             shifted.messages.begin() + static_cast<std::ptrdiff_t>(turn->second));
      dropped += static_cast<int64_t>(turn->second - turn->first);
      rendered = model_.RenderChat(shifted);
      if (!rendered.ok()) return rendered.error();
    }
  }
  const ChatRequest& req = dropped > 0 ? shifted : request;
  Started s;
  s.dropped_messages = dropped;
  std::vector<std::unique_ptr<runtime::TokenConstraint>> constraints;
  for (int64_t i = 0; i < req.n; ++i) {
    auto c = model_.ChatConstraint(req);
    if (!c.ok()) return c.error();
    constraints.push_back(std::move(c).value());
    s.gens.push_back(std::make_shared<Generation>(model_, req.stop, /*chat=*/true,
                                                  rendered->reply_prefix));
  }
  auto handle = Start(std::move(rendered->tokens), rendered->shared_prefix, std::move(rendered->media), req.sampling,
                      req.max_tokens, req.ignore_eos, std::move(constraints), Sinks(s.gens));
  if (!handle.ok()) return handle.error();
  s.handle = *handle;
  return s;
}

ApiOr<Started> ApiHandlers::StartText(std::vector<int32_t> prompt, const CompletionRequest& req) {
  if (prompt.empty()) return BadRequest("'prompt' is empty", "prompt");
  Started s;
  std::vector<std::unique_ptr<runtime::TokenConstraint>> constraints;
  for (int64_t i = 0; i < req.n; ++i) {
    auto c = model_.TextConstraint(req.format);
    if (!c.ok()) return c.error();
    constraints.push_back(std::move(c).value());
    s.gens.push_back(std::make_shared<Generation>(model_, req.stop, /*chat=*/false,
                                                  std::vector<int32_t>{}));
  }
  auto handle = Start(std::move(prompt), 0, {}, req.sampling, req.max_tokens, req.ignore_eos,
                      std::move(constraints), Sinks(s.gens));
  if (!handle.ok()) return handle.error();
  s.handle = *handle;
  return s;
}

ApiOr<std::shared_ptr<JobHandle>> ApiHandlers::StartRendered(RenderedPrompt prompt, const SamplingOptions& sampling,
                                                            int64_t max_tokens, std::shared_ptr<JobSink> sink) {
  std::vector<std::unique_ptr<runtime::TokenConstraint>> constraints(1);
  return Start(std::move(prompt.tokens), prompt.shared_prefix, std::move(prompt.media), sampling, max_tokens,
               /*ignore_eos=*/false, std::move(constraints), {std::move(sink)});
}

HttpReply ApiHandlers::Respond(Started started, ReplyFormat f) const {
  HttpReply reply;
  reply.content_type = f.content_type;
  reply.headers = f.headers;
  if (started.dropped_messages > 0) {
    reply.headers.emplace_back("X-Gemlet-Dropped-Messages", std::to_string(started.dropped_messages));
  }
  reply.tokens = std::make_shared<ReplyTokens>();
  std::shared_ptr<JobHandle> h = started.handle;
  reply.abandon = [h] { h->Cancel(); };
  const auto interval = options_.keepalive;
  auto tokens = reply.tokens;
  reply.stream = [started = std::move(started), f = std::move(f), interval,
                  tokens](const StreamWriter& write) {
    if (f.head && !write(f.head())) {
      started.handle->Cancel();
      return;
    }
    auto on_events = [&](size_t i, std::vector<GenerationEvent>& events) {
      return write(f.events(i, events));
    };
    auto outcomes = Drive(started, interval, on_events, [&] { return write(f.keepalive); },
                          f.streaming);
    if (!outcomes) return;
    const UsageTotals t = TotalsOf(*outcomes);
    tokens->prompt = t.prompt;
    tokens->completion = t.completion;
    write(f.tail(*outcomes));
  };
  return reply;
}

namespace {

// The OpenAI chat reply, streamed or whole, over n choices.
ReplyFormat OpenAiChatFormat(const ChatRequest& req, const Started& s, const ResponseMeta& meta) {
  struct State {
    std::vector<int> tool_index;
    std::vector<ChatResult> results;
  };
  auto st = std::make_shared<State>();
  const size_t n = s.gens.size();
  st->tool_index.assign(n, 0);
  st->results.resize(n);
  if (req.sampling.logprobs >= 0) {
    for (auto& r : st->results) r.logprobs.emplace();
  }
  const bool include_usage = req.include_usage;
  const bool want_logprobs = req.sampling.logprobs >= 0;
  auto gens = s.gens;
  ReplyFormat f;
  if (req.stream) {
    f.content_type = "text/event-stream";
    f.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
    f.streaming = true;
    f.keepalive = SseComment("keep-alive");
    f.head = [meta, include_usage, n] {
      std::string out;
      for (size_t i = 0; i < n; ++i) {
        out += SseData(ChatChunkJson(meta, {{"role", "assistant"}, {"content", ""}}, std::nullopt,
                                     include_usage, static_cast<int>(i)));
      }
      return out;
    };
    f.events = [st, meta, include_usage, want_logprobs](size_t i, std::vector<GenerationEvent>& events) {
      std::string out;
      for (const auto& e : events) {
        Json delta;
        if (e.kind == GenerationEvent::kContent) {
          delta = {{"content", e.text}};
        } else if (e.kind == GenerationEvent::kReasoning) {
          delta = {{"reasoning_content", e.text}};
        } else {
          delta = {{"tool_calls", Json::array({ToolCallDeltaJson(st->tool_index[i]++, e.call)})}};
        }
        const Json lp = want_logprobs && !e.logprobs.empty() ? ChatLogprobsJson(e.logprobs) : Json();
        out += SseData(ChatChunkJson(meta, delta, std::nullopt, include_usage, static_cast<int>(i), lp));
      }
      return out;
    };
    f.tail = [gens, meta, include_usage](const std::vector<JobOutcome>& outcomes) {
      std::string tail;
      if (const JobOutcome* bad = FirstFailure(outcomes)) {
        if (bad->reason == FinishReason::kCancelled) {
          // Shutting down: a final chunk says the reply is cut, the error event why.
          for (size_t i = 0; i < outcomes.size(); ++i) {
            tail += SseData(ChatChunkJson(meta, Json::object(), "cancelled", include_usage,
                                          static_cast<int>(i)));
          }
        }
        tail += SseData(Json::parse(OutcomeError(*bad).ToJson()));
      } else {
        for (size_t i = 0; i < outcomes.size(); ++i) {
          tail += SseData(ChatChunkJson(meta, Json::object(), gens[i]->FinishReasonText(outcomes[i]),
                                        include_usage, static_cast<int>(i)));
        }
        if (include_usage) tail += SseData(ChatUsageChunkJson(meta, UsageOf(outcomes)));
      }
      return tail + SseDone();
    };
    return f;
  }
  f.events = [st](size_t i, std::vector<GenerationEvent>& events) {
    ChatResult& r = st->results[i];
    for (auto& e : events) {
      if (e.kind == GenerationEvent::kContent) {
        r.content += e.text;
      } else if (e.kind == GenerationEvent::kReasoning) {
        r.reasoning += e.text;
      } else {
        r.tool_calls.push_back(std::move(e.call));
      }
      if (r.logprobs) {
        for (auto& t : e.logprobs) r.logprobs->push_back(std::move(t));
      }
    }
    return std::string();
  };
  f.tail = [st, gens, meta](const std::vector<JobOutcome>& outcomes) {
    if (const JobOutcome* bad = FirstFailure(outcomes)) return OutcomeError(*bad).ToJson();
    for (size_t i = 0; i < outcomes.size(); ++i) {
      st->results[i].finish_reason = gens[i]->FinishReasonText(outcomes[i]);
    }
    return Dump(ChatCompletionJson(meta, st->results, UsageOf(outcomes)));
  };
  return f;
}

// The OpenAI text completion reply; `echo` is the prompt's text when echoed.
ReplyFormat OpenAiTextFormat(const CompletionRequest& req, const Started& s, const ResponseMeta& meta,
                             const std::string& echo) {
  const size_t n = s.gens.size();
  auto results = std::make_shared<std::vector<TextResult>>(n);
  auto offsets = std::make_shared<std::vector<int64_t>>(n, static_cast<int64_t>(echo.size()));
  const bool want_logprobs = req.sampling.logprobs >= 0;
  for (auto& r : *results) {
    r.text = echo;
    r.logprob_offset = static_cast<int64_t>(echo.size());
    if (want_logprobs) r.logprobs.emplace();
  }
  const bool include_usage = req.include_usage;
  auto gens = s.gens;
  ReplyFormat f;
  if (req.stream) {
    f.content_type = "text/event-stream";
    f.headers = {{"Cache-Control", "no-cache"}};
    f.streaming = true;
    f.keepalive = SseComment("keep-alive");
    if (!echo.empty()) {
      f.head = [meta, include_usage, echo, n] {
        std::string out;
        for (size_t i = 0; i < n; ++i) {
          out += SseData(TextChunkJson(meta, echo, std::nullopt, include_usage, static_cast<int>(i)));
        }
        return out;
      };
    }
    f.events = [meta, include_usage, want_logprobs, offsets](size_t i, std::vector<GenerationEvent>& events) {
      std::string out;
      for (const auto& e : events) {
        Json lp;
        if (want_logprobs && !e.logprobs.empty()) {
          lp = TextLogprobsJson(e.logprobs, (*offsets)[i]);
          for (const auto& t : e.logprobs) (*offsets)[i] += static_cast<int64_t>(t.token.size());
        }
        out += SseData(TextChunkJson(meta, e.text, std::nullopt, include_usage, static_cast<int>(i), lp));
      }
      return out;
    };
    f.tail = [gens, meta, include_usage](const std::vector<JobOutcome>& outcomes) {
      std::string tail;
      if (const JobOutcome* bad = FirstFailure(outcomes)) {
        if (bad->reason == FinishReason::kCancelled) {  // shutting down (see chat)
          for (size_t i = 0; i < outcomes.size(); ++i) {
            tail += SseData(TextChunkJson(meta, "", "cancelled", include_usage, static_cast<int>(i)));
          }
        }
        tail += SseData(Json::parse(OutcomeError(*bad).ToJson()));
      } else {
        for (size_t i = 0; i < outcomes.size(); ++i) {
          tail += SseData(TextChunkJson(meta, "", gens[i]->FinishReasonText(outcomes[i]), include_usage,
                                        static_cast<int>(i)));
        }
        if (include_usage) tail += SseData(TextUsageChunkJson(meta, UsageOf(outcomes)));
      }
      return tail + SseDone();
    };
    return f;
  }
  f.events = [results](size_t i, std::vector<GenerationEvent>& events) {
    TextResult& r = (*results)[i];
    for (auto& e : events) {
      r.text += e.text;
      if (r.logprobs) {
        for (auto& t : e.logprobs) r.logprobs->push_back(std::move(t));
      }
    }
    return std::string();
  };
  f.tail = [results, gens, meta](const std::vector<JobOutcome>& outcomes) {
    if (const JobOutcome* bad = FirstFailure(outcomes)) return OutcomeError(*bad).ToJson();
    for (size_t i = 0; i < outcomes.size(); ++i) {
      (*results)[i].finish_reason = gens[i]->FinishReasonText(outcomes[i]);
    }
    return Dump(TextCompletionJson(meta, *results, UsageOf(outcomes)));
  };
  return f;
}

}  // namespace

HttpReply ApiHandlers::ChatCompletions(std::string_view body) {
  auto req = ParseChatRequest(body, options_.limits);
  if (!req.ok()) return ErrorReply(req.error());
  auto started = StartChat(*req);
  if (!started.ok()) return ErrorReply(started.error());
  ResponseMeta meta{NewId("chatcmpl-"), UnixNow(), model_.id()};
  ReplyFormat f = OpenAiChatFormat(*req, *started, meta);
  return Respond(std::move(started).value(), std::move(f));
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
  auto started = StartText(std::move(prompt), *req);
  if (!started.ok()) return ErrorReply(started.error());
  ResponseMeta meta{NewId("cmpl-"), UnixNow(), model_.id()};
  ReplyFormat f = OpenAiTextFormat(*req, *started, meta, echo);
  return Respond(std::move(started).value(), std::move(f));
}

HttpReply ApiHandlers::Tokenize(std::string_view body) {
  auto j = ParseRequestBody(body);
  if (!j.ok()) return ErrorReply(j.error());
  auto c = j->find("content");
  if (c == j->end() || !c->is_string()) {
    return ErrorReply(BadRequest("'content' must be a string", "content", "invalid_value"));
  }
  auto w = j->find("with_pieces");
  const bool with_pieces = w != j->end() && w->is_boolean() && w->get<bool>();
  auto ids = model_.Tokenize(c->get<std::string>());
  if (!ids.ok()) return ErrorReply(ids.error());
  // add_special (default false, as llama-server): the prompt's leading <bos>.
  auto a = j->find("add_special");
  std::vector<int32_t> tokens;
  if (a != j->end() && a->is_boolean() && a->get<bool>()) {
    const int32_t bos = model_.BosToken();
    if (bos >= 0 && (ids->empty() || (*ids)[0] != bos)) tokens.push_back(bos);
  }
  tokens.insert(tokens.end(), ids->begin(), ids->end());
  Json list = Json::array();
  for (int32_t t : tokens) {
    if (!with_pieces) {
      list.push_back(t);
      continue;
    }
    auto d = model_.output_vocab().NewDecoder();
    std::string piece = d->Push(t);
    piece += d->Flush();
    list.push_back({{"id", t}, {"piece", piece}});
  }
  return JsonReply(Json{{"tokens", std::move(list)}});
}

HttpReply ApiHandlers::Detokenize(std::string_view body) {
  auto j = ParseRequestBody(body);
  if (!j.ok()) return ErrorReply(j.error());
  auto t = j->find("tokens");
  if (t == j->end() || !t->is_array()) {
    return ErrorReply(BadRequest("'tokens' must be an array of token ids", "tokens", "invalid_value"));
  }
  const int32_t vocab = model_.backend().vocab_size();
  auto decoder = model_.output_vocab().NewDecoder();
  std::string text;
  for (size_t i = 0; i < t->size(); ++i) {
    const Json& v = (*t)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= vocab) {
      return ErrorReply(BadRequest("'tokens[" + std::to_string(i) + "]' is not a token id in [0, " +
                                       std::to_string(vocab) + ")",
                                   "tokens", "invalid_value"));
    }
    text += decoder->Push(static_cast<int32_t>(v.get<int64_t>()));
  }
  text += decoder->Flush();
  return JsonReply(Json{{"content", text}});
}

bool NamesModel(const std::string& name, const std::string& id) {
  return name == id || name == id + ":latest";
}

HttpReply ApiHandlers::Models() const {
  if (options_.catalog.empty()) return JsonReply(ModelListJson(model_.id(), options_.created));
  Json data = Json::array();
  for (const CatalogEntry& e : options_.catalog) data.push_back(ModelJson(e.id, e.created));
  return JsonReply(Json{{"object", "list"}, {"data", std::move(data)}});
}

HttpReply ApiHandlers::Model(const std::string& id) const {
  for (const CatalogEntry& e : options_.catalog) {
    if (id == e.id) return JsonReply(ModelJson(e.id, e.created));
  }
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
  r.body += "# HELP gemlet_audio_encodes_total Audio clips and transcription windows run through the audio "
            "tower (not found in its cache).\n# TYPE gemlet_audio_encodes_total counter\ngemlet_audio_encodes_total " +
            std::to_string(model_.AudioEncodes()) + "\n";
  r.body += "# HELP gemlet_image_encodes_total Images run through the vision tower (not found in its cache).\n"
            "# TYPE gemlet_image_encodes_total counter\ngemlet_image_encodes_total " +
            std::to_string(model_.ImageEncodes()) + "\n";
  return r;
}

}  // namespace gemlet::server
