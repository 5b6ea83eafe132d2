// gemlet serve: the OpenAI-compatible HTTP server (tools/server).
#include <cstdio>

#include "tools/cli/chat_options.h"
#include "tools/cli/command.h"
#include "tools/cli/draft_flags.h"
#include "tools/cli/kv_type_flag.h"
#include "tools/hub/model_store.h"
#include "tools/server/image_fetch.h"
#include "tools/server/serve.h"

namespace gemlet::cli {
namespace cmd_serve {

constexpr char kUsage[] = R"usage(usage: gemlet serve [-m MODEL] [--host ADDR] [--port N] [--api-key KEY] [flags]

Serves the model over an OpenAI-compatible HTTP API until Ctrl+C (SIGINT) or SIGTERM:
  POST /v1/chat/completions   chat (streaming or not, tools, thinking via reasoning_effort)
  POST /v1/completions        raw text completion
  POST /v1/messages           Anthropic's Messages API
  POST /api/chat, /api/generate, GET /api/tags, ...   Ollama's API
  POST /tokenize, /detokenize  llama-server's shapes
  GET  /v1/models, /health, /metrics (Prometheus), and a chat page at /
Concurrent requests share each decode step (one pass over the weights for all of them).

Every model of the model store (gemlet pull, gemlet list) is offered too: /v1/models and
/api/tags list them, and a request's "model" field picks one, loaded on first use (one at a
time besides -m's; --max-models keeps more). Requests naming no known model get the -m model,
or without -m the most recently used one (an unknown name is then a 404).

flags:
  -m, --model FILE|NAME   a .gemlet model (gemlet convert) or a stored model's name; default:
                          the store's models, or the tiny demo model when the store is empty
  --max-models N          stored models kept loaded at once besides -m's, least recently used
                          out first (default 1)
  --host ADDR             address to listen on (default 127.0.0.1: this machine only)
  --port N                TCP port (default 8080; 0 = any free port, printed at start)
  --api-key KEY           require "Authorization: Bearer KEY" on every /v1 route
                          (default: the GEMLET_API_KEY environment variable, if set)
  --alias NAME            the model id clients see (default: the file name)
  --replica NAME          add the header X-Gemlet-Replica: NAME to every response (which
                          replica behind a load balancer answered; tools/server/README.md)
  --cors ORIGIN           let web pages from ORIGIN (e.g. http://localhost:3000, or * for
                          any) call the API from a browser; default: no cross-origin access
  --ctx N                 context per request, prompt + reply, in tokens (default 4096)
  --max-prompt N          longest prompt accepted, in tokens (default: the context)
  --context-overflow P    a chat prompt too long for the context:
                            error  400 with code context_length_exceeded, OpenAI's error
                                   (default; only when it leaves no room at all, a reply
                                   that reaches the context's end has finish_reason length)
                            shift  drop the oldest turns after the system messages and the
                                   first turn (that too if need be) until the prompt leaves
                                   room for the reply (max_tokens, else a quarter of the
                                   context; at most half); the reply's header
                                   X-Gemlet-Dropped-Messages counts them. Text completions
                                   always get the error
  --slots N               requests generating at once (default 4)
  --queue N               requests waiting for a slot before 503 + Retry-After (default 16)
  --cache-sessions N      finished sessions kept for prompt-prefix reuse (default 4; 0 = off)
  --prefill-chunk N       prompt tokens per scheduler step (default 256)
  --max-body BYTES        largest request body (default 8388608); larger ones get 413
  --max-upload BYTES      largest audio upload to /v1/audio/* (default 26214400, OpenAI's 25 MB)
  --threads N             compute threads (default: one per hardware thread)
  --http-threads N        connection threads (default 128; each open connection holds one;
                          a client that sends nothing for 5 s is disconnected)
  --shutdown-grace S      on SIGINT/SIGTERM, seconds running requests get to finish before
                          they are cut (default 5; a cut stream still ends properly)
  --log-format text|json  the request log on stderr, one line per request: time, method,
                          path, status, prompt and generated tokens, duration, client
                          (default text)
  --no-log                no request log
  --verbose               also a log line per scheduler step (rows and wall time)
  --exact                 f32 reference matmuls instead of the fast int8 kernels
  --kv-type T             KV cache rows: f16, f32 or q8 (default f16; f32 with --exact; q8
                          is 8-bit blocks, half the memory of f16); or
                          per layer kind: full=T,sliding=T (either part), e.g.
                          full=q8,sliding=f16: the full-attention layers hold the whole
                          context, the sliding ones a ring of the window
  --image-tokens N        soft tokens per image part: 70, 140, 280 (default), 560 or 1120
                          (OpenAI image_url data: URLs, Ollama images, Anthropic image blocks;
                          the model needs a vision tower)
  --allow-image-urls      fetch image parts given as http(s) URLs (default: refused, the
                          server makes no requests to other hosts); 20 MB and 10 s at most
  --temp X, --top-k N, --top-p X, --min-p X
                          sampling defaults for requests that leave them out
                          (default 1.0, 64, 0.95, 0)
)usage" GEMLET_DRAFT_FLAGS_HELP R"usage(                          The server drafts for a request that decodes alone (with
                          several, the batch already shares each pass over the weights);
                          /metrics counts the drafts (gemlet_draft_*). --drafter is the -m
                          model's drafter (it needs -m); a stored model drafts with the one
                          embedded in its file, and with --draft mtp but none, not at all

examples:
  gemlet serve -m e2b-q4.gemlet
  gemlet serve -m e2b-q4.gemlet --host 0.0.0.0 --port 9000 --api-key "$(cat key.txt)"
  curl http://127.0.0.1:8080/v1/chat/completions -H 'Content-Type: application/json' \
    -d '{"model": "e2b-q4", "messages": [{"role": "user", "content": "Hello"}]}'
)usage";

int Run(Flags& flags) {
  server::ServeOptions o;
  const std::string model_flag = flags.Str({"-m", "--model"}, "");
  auto max_models = flags.Int({"--max-models"}, 1);
  o.http.host = flags.Str({"--host"}, "127.0.0.1");
  auto port = flags.Int({"--port"}, 8080);
  const char* env_key = std::getenv("GEMLET_API_KEY");
  o.http.api_key = flags.Str({"--api-key"}, env_key ? env_key : "");
  o.alias = flags.Str({"--alias"}, "");
  o.http.cors_origin = flags.Str({"--cors"}, "");
  o.http.replica = flags.Str({"--replica"}, "");
  auto ctx = flags.Int({"--ctx"}, 4096);
  auto max_prompt = flags.Int({"--max-prompt"}, 0);
  const std::string overflow = flags.Str({"--context-overflow"}, "error");
  auto slots = flags.Int({"--slots"}, 4);
  auto queue = flags.Int({"--queue"}, 16);
  auto cache = flags.Int({"--cache-sessions"}, 4);
  auto chunk = flags.Int({"--prefill-chunk"}, 256);
  auto max_body = flags.Int({"--max-body"}, 8 << 20);
  auto max_upload = flags.Int({"--max-upload"}, 25 << 20);
  auto threads = flags.Int({"--threads"}, 0);
  auto http_threads = flags.Int({"--http-threads"}, 128);
  auto grace = flags.Float({"--shutdown-grace"}, 5.0);
  o.exact = flags.Bool({"--exact"});
  const std::string log_format = flags.Str({"--log-format"}, "text");
  o.request_log = !flags.Bool({"--no-log"});
  o.verbose = flags.Bool({"--verbose"});
  const std::string kv_type = flags.Str({"--kv-type"}, "");
  auto image_tokens = flags.Int({"--image-tokens"}, 280);
  o.handlers.allow_image_urls = flags.Bool({"--allow-image-urls"});
  auto temp = flags.Float({"--temp"}, 1.0);
  auto top_k = flags.Int({"--top-k"}, 64);
  auto top_p = flags.Float({"--top-p"}, 0.95);
  auto min_p = flags.Float({"--min-p"}, 0.0);
  const DraftFlags draft_flags = ReadDraftFlags(flags);
  for (const Status& st : {max_models.status(), port.status(), ctx.status(), max_prompt.status(), slots.status(), queue.status(),
                           cache.status(), chunk.status(), max_body.status(), max_upload.status(), threads.status(),
                           http_threads.status(), grace.status(), temp.status(), top_k.status(), top_p.status(),
                           min_p.status(), image_tokens.status()}) {
    if (!st.ok()) return UsageError("serve", st.message());
  }
  if (Status st = flags.Finish(); !st.ok()) return UsageError("serve", st.message());
  if (!flags.Positional().empty()) return UsageError("serve", "unexpected argument '" + flags.Positional()[0] + "'");
  if (*port < 0 || *port > 65535) return UsageError("serve", "--port must be in [0, 65535]");
  if (o.http.host.empty()) return UsageError("serve", "--host must not be empty");
  for (char c : o.http.replica) {
    if (c < 0x21 || c > 0x7e) return UsageError("serve", "--replica must be printable ASCII without spaces");
  }
  if (!server::ParseLogFormat(log_format, &o.log_format)) {
    return UsageError("serve", "--log-format must be text or json");
  }
  if (*ctx < 16) return UsageError("serve", "--ctx must be at least 16");
  if (overflow != "error" && overflow != "shift") {
    return UsageError("serve", "--context-overflow must be error or shift, not '" + overflow + "'");
  }
  o.handlers.context_overflow = overflow == "shift" ? server::HandlerOptions::ContextOverflow::kShift
                                                    : server::HandlerOptions::ContextOverflow::kError;
  runtime::EngineOptions kv;
  if (!ParseKvType(kv_type, &kv)) return UsageError("serve", KvTypeError(kv_type));
  o.kv_type = kv.kv_type;
  o.kv_type_full = kv.kv_type_full;
  o.kv_type_sliding = kv.kv_type_sliding;
  if (*max_prompt < 0 || *max_prompt >= *ctx) return UsageError("serve", "--max-prompt must be in [0, --ctx) (0 = the whole context)");
  if (*slots < 1 || *slots > 256) return UsageError("serve", "--slots must be in [1, 256]");
  if (*queue < 0 || *queue > 100000) return UsageError("serve", "--queue must be in [0, 100000]");
  if (*cache < 0 || *cache > 1024) return UsageError("serve", "--cache-sessions must be in [0, 1024]");
  if (*chunk < 1) return UsageError("serve", "--prefill-chunk must be >= 1");
  if (*max_body < 1024) return UsageError("serve", "--max-body must be at least 1024");
  if (*max_upload < 1024) return UsageError("serve", "--max-upload must be at least 1024");
  if (*threads < 0 || *threads > 1024) return UsageError("serve", "--threads must be in [0, 1024]");
  if (*http_threads < 4 || *http_threads > 4096) return UsageError("serve", "--http-threads must be in [4, 4096]");
  if (*grace < 0 || *grace > 3600) return UsageError("serve", "--shutdown-grace must be in [0, 3600]");
  if (*image_tokens != 70 && *image_tokens != 140 && *image_tokens != 280 && *image_tokens != 560 &&
      *image_tokens != 1120) {
    return UsageError("serve", "--image-tokens must be 70, 140, 280, 560 or 1120");
  }
  o.images.tokens = *image_tokens;
  if (o.handlers.allow_image_urls && !server::ImageFetchAvailable()) {
    return UsageError("serve", "--allow-image-urls: this build has no libcurl (scripts/deps.sh)");
  }
  if (*temp < 0 || *temp > 2) return UsageError("serve", "--temp must be in [0, 2]");
  if (*top_k < 0) return UsageError("serve", "--top-k must be >= 0");
  if (*top_p <= 0 || *top_p > 1) return UsageError("serve", "--top-p must be in (0, 1]");
  if (*min_p < 0 || *min_p > 1) return UsageError("serve", "--min-p must be in [0, 1]");
  if (!draft_flags.status.ok()) return UsageError("serve", draft_flags.status.message());
  if (!draft_flags.mode.empty()) {
    auto mode = runtime::ParseDraftMode(draft_flags.mode);
    if (!mode.ok()) return UsageError("serve", mode.status().message());
    o.draft = *mode;
  }
  {
    runtime::SpeculativeOptions check;
    check.mode = runtime::DraftMode::kLookup;
    check.draft_max = draft_flags.draft_max;
    if (Status st = check.Validate(); !st.ok()) return UsageError("serve", st.message());
  }
  o.draft_max = draft_flags.draft_max;
  o.draft_fixed = draft_flags.fixed;
  o.drafter_path = draft_flags.drafter;
  if (!o.drafter_path.empty() && model_flag.empty()) {
    return UsageError("serve", "--drafter FILE belongs to the model it was made for: give that model with -m");
  }

  if (*max_models < 1 || *max_models > 64) return UsageError("serve", "--max-models must be in [1, 64]");
  o.max_models = static_cast<size_t>(*max_models);
  // The model store's models (-m NAME was made a path already, tools/cli/main.cc).
  if (auto store = hub::ModelStore::Open(); store.ok()) {
    for (const hub::StoredModel& m : store->List()) {
      o.stored.push_back(server::CatalogEntry{m.name, m.path, m.bytes, m.pulled_at});
      if (o.alias.empty() && m.path == model_flag) o.alias = m.name;  // -m NAME keeps its name
    }
  }
  if (!model_flag.empty() || o.stored.empty()) {
    auto model = ResolveModel(model_flag, /*allow_demo=*/true);
    if (!model.ok()) return ReportError("serve", model.status());
    o.model_path = *model;
  }
  o.http.port = static_cast<int>(*port);
  o.http.max_body_bytes = static_cast<size_t>(*max_body);
  o.http.max_upload_bytes = static_cast<size_t>(*max_upload);
  o.http.threads = static_cast<int>(*http_threads);
  o.context = *ctx;
  o.shutdown_grace_s = *grace;
  o.threads = static_cast<int>(*threads);
  o.scheduler.slots = static_cast<int>(*slots);
  o.scheduler.queue_capacity = static_cast<size_t>(*queue);
  o.scheduler.cache_sessions = static_cast<size_t>(*cache);
  o.scheduler.prefill_chunk = *chunk;
  o.scheduler.max_context = *ctx;
  o.handlers.max_prompt_tokens = *max_prompt;
  o.handlers.temperature = *temp;
  o.handlers.top_k = *top_k;
  o.handlers.top_p = *top_p;
  o.handlers.min_p = *min_p;
  // Serve fails only on the model (loading it) or the address (binding it): exit code 1.
  if (Status st = server::Serve(o); !st.ok()) return ReportModelError("serve", st);
  return kExitOk;
}

}  // namespace cmd_serve

GEMLET_COMMAND(serve, "serve", "OpenAI-compatible HTTP server with batched decoding and a chat page", cmd_serve::kUsage,
               cmd_serve::Run);

}  // namespace gemlet::cli
