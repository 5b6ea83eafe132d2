// `gemlet serve`: loads a model and runs the OpenAI-compatible server until SIGINT/SIGTERM.
// The CLI subcommand (tools/cli/cmd_serve.cc) only parses flags into ServeOptions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/tensor_type.h"
#include "runtime/image_encoder.h"
#include "runtime/speculative_options.h"
#include "tools/server/api_handlers.h"
#include "tools/server/http_server.h"
#include "tools/server/scheduler.h"

namespace gemlet::server {

struct ServeOptions {
  // The model to serve; with `stored` non-empty it may be empty (then every request names
  // one of those, and requests naming none get the most recently used).
  std::string model_path;
  // Other models a request may name (the model store's): loaded on first use, at most
  // max_models at once besides model_path's (least recently used first out).
  std::vector<CatalogEntry> stored;
  size_t max_models = 1;
  std::string alias;     // model id in the API; default: the file name without .gemlet
  int threads = 0;       // compute threads (0 = one per hardware thread)
  bool exact = false;    // f32 reference matmuls instead of the fast int8 kernels
  std::optional<TensorType> kv_type;  // KV cache rows (runtime::EngineOptions::kv_type)
  std::optional<TensorType> kv_type_full, kv_type_sliding;  // per layer kind (the same)
  int64_t context = 4096;  // tokens per request (prompt + reply)
  // Image parts: the soft-token budget (--image-tokens) and the decoder's pixel budget.
  runtime::ImageEncoderOptions images;
  // On SIGINT/SIGTERM: no new connections or requests; running generations get this long
  // to finish, then they are cut (a stream ends with finish_reason "cancelled", an error
  // event and [DONE]).
  double shutdown_grace_s = 5;
  // The request log on stderr: one line per request, text or JSON; --verbose adds a line
  // per scheduler step.
  bool request_log = true;
  LogFormat log_format = LogFormat::kText;
  bool verbose = false;
  // Speculative decoding for a request that decodes alone, per loaded model: the mode (none:
  // auto for a model that has a drafter, else off), drafts per round at most and fixed K, for
  // every model; an MTP drafter file (runtime::EngineOptions::drafter_path) belongs to the
  // model it was made for, model_path's (it needs one): a stored model drafts with the
  // drafter embedded in its own file, if any. With `draft` kMtp the model_path model must
  // have a drafter; a stored one without it does not draft (said on stderr when it is
  // loaded).
  std::optional<runtime::DraftMode> draft;
  int64_t draft_max = 8;
  bool draft_fixed = false;
  std::string drafter_path;
  HttpOptions http;
  SchedulerOptions scheduler;
  HandlerOptions handlers;
};

// Serves until a SIGINT or SIGTERM arrives, then shuts down gracefully and returns.
// Errors: the model cannot be loaded, the address cannot be bound.
Status Serve(const ServeOptions& options);

}  // namespace gemlet::server
