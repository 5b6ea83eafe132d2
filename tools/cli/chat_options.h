// Flags that `gemlet chat`, `gemlet run` and `gemlet perplexity` share, read the same way
// everywhere so names, defaults and errors agree: the model (with the demo-model fallback),
// the sampling flags, and the --chat/--system/--think prompt options of `run`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "runtime/sampler.h"
#include "tools/cli/command.h"

namespace gemlet::cli {

// Help text of the sampling flags (for the usage strings).
extern const char kSamplingFlagsHelp[];

// --temp --top-k --top-p --min-p --repeat-penalty --presence-penalty --repeat-last-n --seed,
// with Gemma 4's generation_config defaults (temperature 1, top-k 64, top-p 0.95) and a random
// seed unless --seed is given. InvalidArgument names the flag.
Result<runtime::SamplerOptions> ReadSamplingFlags(Flags& flags);

// The -m/--model path, or with no -m (and allow_demo) the cached demo model, made on first
// use, with the banner printed to stderr.
Result<std::string> ResolveModel(const std::string& model_flag, bool allow_demo);

// `gemlet run`'s chat flags: --chat, --system TEXT, --think.
struct RunChatFlags {
  bool chat = false;
  std::optional<std::string> system;
  bool think = false;
  int64_t images = 0;  // --image files: placed in the prompt text (runtime::PlaceMedia)
  int64_t audios = 0;  // --audio files: the same, or with --tokens one <|audio|> id each
};
// Reads them (before flags.Finish(), so that an unknown flag is reported before any work).
RunChatFlags ReadRunChatFlags(Flags& flags);

// `gemlet run`'s chat options, applied after every flag was checked and before the prompt is
// tokenized:
//   no -p and no --tokens: the prompt is read from stdin (when it is not a terminal);
//   --chat: the prompt becomes one user turn of the Gemma 4 chat format, with --system TEXT
//   and --think; --system/--think without --chat is a usage error;
//   no -m: *model becomes the demo model (ResolveModel).
// Errors: InvalidArgument for misuse (a usage error), others for failures.
Status ApplyRunChatFlags(const RunChatFlags& flags, bool have_tokens, std::optional<std::string>* prompt,
                         std::string* model);

}  // namespace gemlet::cli
