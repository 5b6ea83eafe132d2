// The route logic of the OpenAI-compatible API, independent of the HTTP library: each
// handler takes the request body and returns a reply, either whole or as a stream that the
// HTTP layer drives (http_server.cc adapts it to cpp-httplib).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tools/server/api_error.h"
#include "tools/server/chat_model.h"
#include "tools/server/generation.h"
#include "tools/server/image_fetch.h"
#include "tools/server/metrics.h"
#include "tools/server/request_parser.h"
#include "tools/server/scheduler.h"

namespace gemlet::server {

// The tokens a request used, for the request log: filled by the reply's stream when the
// generation ends (read after the reply was sent).
struct ReplyTokens {
  std::atomic<int64_t> prompt{-1};
  std::atomic<int64_t> completion{-1};
};

// Writes bytes to the client; false once the client is gone.
using StreamWriter = std::function<bool(std::string_view)>;

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the body is produced by stream(write) with chunked transfer encoding; it
  // returns when the reply is complete or write failed (it then cancels the generation).
  std::function<void(const StreamWriter& write)> stream;
  // Called instead of stream() if the connection ends before streaming starts.
  std::function<void()> abandon;
  std::shared_ptr<ReplyTokens> tokens;  // set by replies that generate
};

HttpReply ErrorReply(const ApiError& e);
// A JSON body with `status`.
HttpReply JsonReply(const Json& j, int status = 200);
// What a finished generation says as an API error (only kError and kCancelled end this way).
ApiError OutcomeError(const JobOutcome& o);

// A started request: one Generation per choice (n), all on one job.
struct Started {
  std::vector<std::shared_ptr<Generation>> gens;
  std::shared_ptr<JobHandle> handle;
  int64_t dropped_messages = 0;  // --context-overflow shift: the oldest messages left out
};

// How an API writes a generation's reply (each API's translation file fills one in); the
// generation path (ApiHandlers::Respond) is shared.
struct ReplyFormat {
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  // true: events are written as they come, and keep-alives follow silence since the last
  // write; false: the reply is written whole at the end (keep-alives while waiting).
  bool streaming = false;
  std::string keepalive = " ";  // bytes that keep the connection checked ("" = none)
  std::function<std::string()> head;  // the first bytes (optional)
  // The bytes for new events of choice `index` (a non-streaming reply collects them and
  // returns "").
  std::function<std::string(size_t index, std::vector<GenerationEvent>& events)> events;
  // The last bytes, given every choice's outcome (kCancelled / kError included).
  std::function<std::string(const std::vector<JobOutcome>& outcomes)> tail;
};

// Usage of a request's choices: the prompt once, the generated tokens of all.
struct UsageTotals {
  int64_t prompt = 0, cached = 0, completion = 0;
};
UsageTotals TotalsOf(const std::vector<JobOutcome>& outcomes);

// A model the server offers (`gemlet serve` with a model store: every stored model).
struct CatalogEntry {
  std::string id;    // the name requests give ("google/gemma-4-E2B-it")
  std::string path;  // its .gemlet file
  int64_t bytes = 0;
  int64_t created = 0;  // Unix seconds
};

// "name" or "name:latest" (Ollama's tag) names the model `id`.
bool NamesModel(const std::string& name, const std::string& id);

struct HandlerOptions {
  ParseLimits limits;
  // Sampling defaults for fields a request leaves out (Gemma 4's generation_config).
  double temperature = 1.0;
  double top_p = 0.95;
  int64_t top_k = 64;
  double min_p = 0.0;
  // Longest prompt accepted (tokens); 0 = whatever the context holds.
  int64_t max_prompt_tokens = 0;
  // A chat prompt that does not fit the context with room for its reply (`gemlet serve
  // --context-overflow`): kError answers 400 with code context_length_exceeded (OpenAI's
  // shape) when the prompt leaves no room at all; kShift first drops the oldest turns after
  // the system messages and the first turn, as chat's --context-policy shift, until the
  // prompt leaves ShiftRoom positions (the reply's header X-Gemlet-Dropped-Messages says how
  // many went). Text completions have no turns: they always get the error.
  enum class ContextOverflow { kError, kShift };
  ContextOverflow context_overflow = ContextOverflow::kError;
  // Silence longer than this on an open response sends a keep-alive (an SSE comment, or a
  // space before a JSON body), which also reveals a closed connection.
  std::chrono::milliseconds keepalive{1000};
  // Image parts with http(s) URLs: refused unless allowed (--allow-image-urls), then fetched
  // with these limits (image_fetch.h).
  bool allow_image_urls = false;
  ImageFetchOptions image_fetch;
  int64_t created = 0;  // model "created" time (Unix seconds)
  int64_t model_bytes = 0;  // the model file's size (Ollama's /api/tags)
  int64_t context = 0;      // tokens per request (Ollama's /api/show, /api/ps)
  // Every model the server offers, for /v1/models and /api/tags (empty: only this one).
  std::vector<CatalogEntry> catalog;
};

// The positions --context-overflow shift keeps free for the reply in a context of `context`
// tokens: max_tokens if the request gives it, else a quarter of the context; at most half of
// it and at least 1.
int64_t ShiftRoom(std::optional<int64_t> max_tokens, int64_t context);
// The oldest turn --context-overflow shift may drop from `messages`: [first, end) with first
// after the leading system/developer messages and, if `keep_first_turn`, after the first user
// message and its replies; a turn is a user message and what follows it up to the next user
// message. The last user message and what follows it always stay. nullopt if none may go.
std::optional<std::pair<size_t, size_t>> OldestTurn(const std::vector<ChatMessage>& messages, bool keep_first_turn);

class ApiHandlers {
 public:
  ApiHandlers(ChatModel& model, Scheduler& scheduler, Metrics& metrics,
              const HandlerOptions& options);

  HttpReply ChatCompletions(std::string_view body);
  HttpReply Completions(std::string_view body);
  // llama-server's POST /tokenize {"content", "add_special", "with_pieces"} and POST
  // /detokenize {"tokens"}.
  HttpReply Tokenize(std::string_view body);
  HttpReply Detokenize(std::string_view body);
  HttpReply Models() const;
  HttpReply Model(const std::string& id) const;
  HttpReply Health() const;
  HttpReply MetricsText() const;
  // Sampling knobs a request left out, from the server's defaults.
  SamplingOptions WithDefaults(const SamplingOptions& s) const;

  const std::string& model_id() const { return model_.id(); }
  ChatModel& model() { return model_; }
  int64_t created() const { return options_.created; }
  const HandlerOptions& options() const { return options_; }

  // The shared generation path of every API: a chat request (n choices, its constraint per
  // choice), or a raw token prompt (n choices).
  ApiOr<Started> StartChat(const ChatRequest& req);
  ApiOr<Started> StartText(std::vector<int32_t> prompt, const CompletionRequest& req);
  // A prompt rendered by the model (a transcription window's turn, ChatModel::RenderWindow)
  // as one job, whose tokens `sink` receives; it stops at the model's stop tokens.
  ApiOr<std::shared_ptr<JobHandle>> StartRendered(RenderedPrompt prompt, const SamplingOptions& sampling,
                                                  int64_t max_tokens, std::shared_ptr<JobSink> sink);
  // Drives `started` to its end, writing what `format` makes of it.
  HttpReply Respond(Started started, ReplyFormat format) const;

 private:
  // The request with its image URLs fetched (allow_image_urls), or a 400 naming the part;
  // null when it has none (use the request as it is).
  ApiOr<std::unique_ptr<ChatRequest>> FetchImageUrls(const ChatRequest& req) const;
  // Checks the prompt length, builds the job (choice i samples with seed + i and
  // constraints[i]) and submits it.
  ApiOr<std::shared_ptr<JobHandle>> Start(
      std::vector<int32_t> prompt, int64_t shared_prefix, std::vector<runtime::MediaSpan> media,
      const SamplingOptions& sampling,
      std::optional<int64_t> max_tokens, bool ignore_eos,
      std::vector<std::unique_ptr<runtime::TokenConstraint>> constraints,
      const std::vector<std::shared_ptr<JobSink>>& sinks);

  ChatModel& model_;
  Scheduler& scheduler_;
  Metrics& metrics_;
  HandlerOptions options_;
};

}  // namespace gemlet::server
