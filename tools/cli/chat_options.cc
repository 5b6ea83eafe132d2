#include "tools/cli/chat_options.h"

#include <unistd.h>

#include <iterator>
#include <random>
#include <iostream>

#include "runtime/media.h"
#include "text/chat_format.h"
#include "tools/cli/demo_model.h"

namespace gemlet::cli {

const char kSamplingFlagsHelp[] =
    R"(sampling (defaults follow Gemma 4's generation_config: temperature 1, top-k 64, top-p 0.95):
  --temp T                temperature; 0 = greedy (ties: the lowest id)
  --top-k K               keep the K most likely tokens (0 = all)
  --top-p P               keep the smallest set with probability >= P
  --min-p P               drop tokens below P x the top token's probability (default 0)
  --repeat-penalty R      divide positive / multiply negative logits of recent tokens (default 1)
  --presence-penalty P    subtract P from the logits of recent tokens (default 0)
  --repeat-last-n N       tokens the penalties look back at (default 64, 0 = all)
  --seed S                RNG seed (default: random)
)";

Result<runtime::SamplerOptions> ReadSamplingFlags(Flags& flags) {
  runtime::SamplerOptions so;
  ASSIGN_OR_RETURN(so.temperature, flags.Float({"--temp"}, 1.0));
  ASSIGN_OR_RETURN(so.top_k, flags.Int({"--top-k"}, 64));
  ASSIGN_OR_RETURN(so.top_p, flags.Float({"--top-p"}, 0.95));
  ASSIGN_OR_RETURN(so.min_p, flags.Float({"--min-p"}, 0.0));
  ASSIGN_OR_RETURN(so.repetition_penalty, flags.Float({"--repeat-penalty"}, 1.0));
  ASSIGN_OR_RETURN(so.presence_penalty, flags.Float({"--presence-penalty"}, 0.0));
  ASSIGN_OR_RETURN(so.penalty_last_n, flags.Int({"--repeat-last-n"}, 64));
  ASSIGN_OR_RETURN(int64_t seed, flags.Int({"--seed"}, -1));
  so.seed = seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}();
  RETURN_IF_ERROR(so.Validate());
  return so;
}

Result<std::string> ResolveModel(const std::string& model_flag, bool allow_demo) {
  if (!model_flag.empty()) return model_flag;
  if (!allow_demo) return InvalidArgument("-m MODEL is required");
  ASSIGN_OR_RETURN(std::string path, EnsureDemoModel());
  PrintDemoBanner(stderr, path);
  return path;
}

RunChatFlags ReadRunChatFlags(Flags& flags) {
  RunChatFlags f;
  f.chat = flags.Bool({"--chat"});
  f.system = flags.Str({"--system"});
  f.think = flags.Bool({"--think"});
  return f;
}

Status ApplyRunChatFlags(const RunChatFlags& flags, bool have_tokens, std::optional<std::string>* prompt,
                         std::string* model) {
  const bool chat = flags.chat;
  const auto& system = flags.system;
  const bool think = flags.think;
  if (!chat && (system || think)) return InvalidArgument("--system and --think need --chat");
  if (chat && have_tokens) return InvalidArgument("--chat applies to a text prompt, not to --tokens");
  if (!prompt->has_value() && !have_tokens) {
    if (isatty(STDIN_FILENO)) return InvalidArgument("give a prompt with -p PROMPT, --tokens IDS or on stdin");
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    if (std::cin.bad()) return IoError("cannot read the prompt from stdin");
    if (text.empty()) return InvalidArgument("the prompt on stdin is empty");
    *prompt = std::move(text);
  }
  if (flags.images > 0) {
    if (have_tokens) return InvalidArgument("--image needs a text prompt (-p or stdin), not --tokens");
    ASSIGN_OR_RETURN(**prompt, runtime::PlaceMedia(**prompt, flags.images, gemma4::kImage, "{image}"));
  }
  // With --tokens, the ids hold one audio placeholder id per clip (ExpandMedia checks).
  if (flags.audios > 0 && !have_tokens) {
    ASSIGN_OR_RETURN(**prompt, runtime::PlaceMedia(**prompt, flags.audios, gemma4::kAudio, "{audio}"));
  }
  if (chat) {
    std::vector<ChatMessage> msgs(system ? 2 : 1);
    if (system) {
      msgs[0].role = "system";
      msgs[0].content = *system;
    }
    msgs.back().role = "user";
    msgs.back().content = **prompt;
    ChatOptions co;
    co.add_generation_prompt = true;
    co.enable_thinking = think;
    ASSIGN_OR_RETURN(*prompt, RenderChat(msgs, co));
  }
  if (model->empty()) {
    ASSIGN_OR_RETURN(*model, ResolveModel(*model, /*allow_demo=*/true));
  }
  return Status::Ok();
}

}  // namespace gemlet::cli
