// gemlet chat: interactive multi-turn chat in the Gemma 4 format (runtime/conversation.h).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "base/mapped_file.h"
#include "runtime/conversation.h"
#include "model/gemma4_image.h"
#include "runtime/engine.h"
#include "runtime/audio_encoder.h"
#include "runtime/image_encoder.h"
#include "tools/cli/chat_input.h"
#include "tools/cli/chat_options.h"
#include "tools/cli/command.h"
#include "tools/cli/draft_flags.h"
#include "tools/cli/grammar_flags.h"
#include "tools/cli/kv_type_flag.h"
#include "tools/cli/demo_model.h"
#include "tools/cli/prefill_progress.h"

namespace gemlet::cli {
namespace cmd_chat {

constexpr char kUsageHead[] = R"(usage: gemlet chat [-m MODEL.gemlet] [--system TEXT] [--think] [--ctx N] [-n N] [flags]

Interactive multi-turn chat in the Gemma 4 chat format; answers stream as they are generated.
The KV cache carries across turns: each new turn prefills only its own tokens. With no -m it
uses the tiny demo model (random weights: meaningless text), made once in ~/.cache/gemlet.

at the prompt:
  /help                 the commands
  /reset                start a new conversation (the system prompt and /think stay)
  /system [TEXT]        set the system prompt (no TEXT: remove it); the conversation so far
                        is prefilled again at the next message
  /think on|off         thinking mode; thoughts are shown apart from the answer (dimmed)
  /save FILE            save the conversation and its KV cache (versioned, tied to the model)
  /load FILE            resume a saved conversation without prefilling it again
  /image PATH           attach an image (JPEG, PNG, WebP; a model with a vision tower) to
                        the next message: {image} or <|image|> in it places the image, else
                        it comes before the text; repeatable
  /audio PATH           attach an audio clip (WAV, FLAC, Ogg, Opus, MP3; its first 30 s; a
                        model with an audio tower) to the next message: {audio} or <|audio|>
                        in it places the clip, else it comes before the text; repeatable
  /file PATH            send the text of the file PATH as the message (a long document);
                        its prefill shows progress, and Ctrl+C stops it keeping what was
                        prefilled
  /stats                time to first token, prefill and decode speed, tokens prefilled by
                        the last turn, context used of the limit
  /quit                 leave (as Ctrl+D does)
  Ctrl+C stops the answer being generated (at the prompt: clears the line); Ctrl+D exits.
  On a terminal: line editing and history (~/.cache/gemlet/history). Other input (a pipe,
  a file) is read line by line, so chats can be scripted.

flags:
  -m, --model FILE        a .gemlet model (gemlet convert); default: the tiny demo model
  --system TEXT           system prompt
  --think                 start with thinking on
  --ctx N                 context limit in tokens (default 4096)
  -n, --n-predict N       most tokens per answer (default 1024)
  --context-policy P      when a message does not fit the context:
                            stop         refuse it with a notice; /reset starts over (default)
                            drop-oldest  drop whole old turns (the system prompt stays) and
                                         prefill the rest again
                            shift        keep the system prompt and the first turn, drop
                                         the oldest turns after them; only what follows
                                         the kept start is prefilled again
  --ignore-eos            keep generating after end-of-turn tokens (until -n or the context)
  --threads N             worker threads (default: all cores)
  --chunk N               prefill chunk size in tokens (default 256)
  --kv-type T             KV cache rows: f16 (default; half the memory of f32), f32, or q8
                          (8-bit blocks: half the memory of f16); or
                          per layer kind: full=T,sliding=T (either part), e.g.
                          full=q8,sliding=f16: the full-attention layers hold the whole
                          context, the sliding ones a ring of the window
  --exact                 f32 reference matmuls instead of the int8 kernels (KV f32 unless
                          --kv-type says otherwise)
  --no-history            do not read or write the history file
  --image-tokens N        soft tokens per /image: 70, 140, 280 (default), 560 or 1120
  -q, --quiet             no prefill progress line (it is drawn on stderr only when that
                          is a terminal: tokens done, tok/s, ETA)
)" GEMLET_GRAMMAR_FLAGS_HELP GEMLET_DRAFT_FLAGS_HELP;

constexpr char kUsageTail[] = R"(
examples:
  gemlet chat                                   # the demo model (random weights)
  gemlet chat -m e2b.gemlet --system "Answer briefly." --temp 0.7
  gemlet chat -m e2b.gemlet --ctx 8192 --context-policy drop-oldest
  printf 'Hello\n/stats\n' | gemlet chat -m e2b.gemlet --temp 0

exit codes: 0 at Ctrl+D, /quit or the end of the input; 1 if the model cannot be loaded;
2 for bad flags. Errors during the chat are printed as one line and the chat goes on.
)";

// The usage text, with the sampling flags every generating command shares.
const char* Usage() {
  static const std::string usage = std::string(kUsageHead) + "\n" + kSamplingFlagsHelp + kUsageTail;
  return usage.c_str();
}

constexpr char kHelp[] =
    "commands: /help, /reset, /system [TEXT], /think on|off, /save FILE, /load FILE, /image PATH, /audio PATH, /file PATH, /stats, /quit\n"
    "Ctrl+C stops an answer, Ctrl+D exits.\n";

// Model text as a terminal may show it: control characters (C0 but newline and tab, DEL, and
// the C1 range U+0080..U+009F) are dropped, so that generated bytes (a model can emit any byte
// through its byte tokens) never move the cursor, ring the bell or start an escape sequence.
std::string ForTerminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) continue;
    if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      ++i;
      continue;
    }
    out.push_back(static_cast<char>(c));
  }
  return out;
}

// Prints the streamed answer: thoughts dimmed on a terminal, between [thinking] markers otherwise.
class AnswerPrinter {
 public:
  explicit AnswerPrinter(bool tty) : tty_(tty) {}
  void Text(std::string_view text, bool thinking) {
    if (thinking != in_thought_) {
      if (thinking) {
        std::fputs(tty_ ? "\x1b[2m" : "[thinking]\n", stdout);
      } else {
        std::fputs(tty_ ? "\x1b[0m\n" : "\n[/thinking]\n", stdout);
      }
      in_thought_ = thinking;
    }
    line_open_ = true;
    if (tty_) {
      const std::string shown = ForTerminal(text);
      std::fwrite(shown.data(), 1, shown.size(), stdout);
    } else {
      std::fwrite(text.data(), 1, text.size(), stdout);
    }
    std::fflush(stdout);
  }
  void End() {
    if (in_thought_) std::fputs(tty_ ? "\x1b[0m" : "\n[/thinking]", stdout);
    in_thought_ = false;
    std::fputs("\n", stdout);
    std::fflush(stdout);
    line_open_ = false;
  }
  // A notice during a turn ("[context full …]") goes on a line of its own: the answer's
  // line is ended first if it has text.
  void Notice(const std::string& notice) {
    if (line_open_) End();
    std::printf("[%s]\n", notice.c_str());
    std::fflush(stdout);
  }
  // After the turn: ends the answer's line, unless a notice already did and nothing followed.
  void EndTurn(bool noticed) {
    if (line_open_ || !noticed) End();
  }

 private:
  bool tty_;
  bool in_thought_ = false;
  bool line_open_ = false;  // answer text printed since the last newline End() wrote
};

void PrintStats(const runtime::Conversation& conv) {
  const double pct = conv.context_limit() ? 100.0 * conv.position() / conv.context_limit() : 0;
  if (conv.turns().empty()) {
    std::printf("no turn yet\n");
  } else {
    const runtime::TurnStats& t = conv.turns().back();
    const char* ended = t.interrupted      ? "interrupted"
                        : t.stopped_at_eog ? "end of turn"
                        : t.context_full   ? "context full"
                                           : "token limit (-n)";
    std::printf("last turn: prefilled %lld tokens (%s; %lld reused from the cache), generated %lld tokens, ended: %s\n",
                static_cast<long long>(t.prefill_tokens),
                t.full_prefill ? "the whole conversation" : "this turn only",
                static_cast<long long>(t.cached_tokens), static_cast<long long>(t.generated_tokens), ended);
    std::printf("  time to first token %.1f ms, prefill %.1f tok/s, decode %.1f tok/s\n", t.ttft_ms,
                t.prefill_tok_s(), t.decode_tok_s());
  }
  std::printf("context: %lld of %lld tokens (%.1f%%), %zu messages, %s policy\n",
              static_cast<long long>(conv.position()), static_cast<long long>(conv.context_limit()), pct,
              conv.messages().size(),
              conv.options().policy == runtime::ContextPolicy::kStop    ? "stop"
              : conv.options().policy == runtime::ContextPolicy::kShift ? "shift"
                                                                        : "drop-oldest");
}

// Images and audio clips attached with /image and /audio for the next message.
struct PendingMedia {
  runtime::ImageEncoder* encoder = nullptr;
  runtime::AudioEncoder* audio = nullptr;
  std::vector<runtime::MediaRef> media;
};

// Runs one slash command; false for /quit.
bool Command(runtime::Conversation& conv, PendingMedia& images, const std::string& line) {
  const size_t sp = line.find(' ');
  const std::string cmd = line.substr(0, sp);
  std::string arg = sp == std::string::npos ? "" : line.substr(sp + 1);
  while (!arg.empty() && arg.front() == ' ') arg.erase(arg.begin());
  while (!arg.empty() && arg.back() == ' ') arg.pop_back();
  if (cmd == "/quit" || cmd == "/exit") return false;
  if (cmd == "/help") {
    std::fputs(kHelp, stdout);
  } else if (cmd == "/reset") {
    conv.Reset();
    images.media.clear();
    std::printf("[new conversation]\n");
  } else if (cmd == "/system") {
    const bool changes = conv.position() > 0 && arg != conv.system();
    conv.SetSystem(arg);
    std::printf("[system prompt %s%s]\n", arg.empty() ? "removed" : "set",
                changes ? "; the conversation is prefilled again at the next message" : "");
  } else if (cmd == "/think") {
    if (arg.empty()) {
      std::printf("thinking is %s (/think on|off)\n", conv.thinking() ? "on" : "off");
    } else if (arg != "on" && arg != "off") {
      std::printf("error: /think takes on or off, not '%s'\n", arg.c_str());
    } else {
      const bool on = arg == "on";
      const bool changes = conv.position() > 0 && on != conv.thinking();
      conv.SetThinking(on);
      std::printf("[thinking %s%s]\n", on ? "on" : "off",
                  changes ? "; the conversation is prefilled again at the next message" : "");
    }
  } else if (cmd == "/save" || cmd == "/load") {
    if (arg.empty()) {
      std::printf("error: %s needs a file name\n", cmd.c_str());
    } else if (Status st = cmd == "/save" ? conv.Save(arg) : conv.Load(arg); !st.ok()) {
      std::printf("error: %s\n", st.message().c_str());
    } else {
      std::printf("[%s %s: %zu messages, %lld tokens%s]\n", cmd == "/save" ? "saved" : "loaded", arg.c_str(),
                  conv.messages().size(), static_cast<long long>(conv.position()),
                  cmd == "/load" ? ", KV cache restored: no prefill needed" : "");
    }
  } else if (cmd == "/image") {
    if (arg.empty()) {
      std::printf("error: /image needs a file name\n");
    } else if (auto m = images.encoder->EncodeFile(arg); !m.ok()) {
      std::printf("error: %s\n", m.status().message().c_str());
    } else {
      images.media.push_back(*m);
      std::printf("[image %zu attached: %s, %lld soft tokens; it goes with the next message]\n",
                  images.media.size(), arg.c_str(), static_cast<long long>((*m)->rows));
    }
  } else if (cmd == "/audio") {
    if (arg.empty()) {
      std::printf("error: /audio needs a file name\n");
    } else if (auto m = images.audio->EncodeFile(arg); !m.ok()) {
      std::printf("error: %s\n", m.status().message().c_str());
    } else {
      images.media.push_back(*m);
      std::printf("[audio attached: %s, %lld soft tokens (%.2f s); it goes with the next message]\n", arg.c_str(),
                  static_cast<long long>((*m)->rows), (*m)->rows / 25.0);
    }
  } else if (cmd == "/stats") {
    PrintStats(conv);
  } else {
    std::printf("error: unknown command %s (see /help)\n", cmd.c_str());
  }
  std::fflush(stdout);
  return true;
}

int Run(Flags& flags) {
  const std::string model_flag = flags.Str({"-m", "--model"}, "");
  runtime::ConversationOptions co;
  co.system = flags.Str({"--system"}, "");
  co.thinking = flags.Bool({"--think"});
  auto ctx = flags.Int({"--ctx"}, 4096);
  auto n_predict = flags.Int({"-n", "--n-predict"}, 1024);
  const std::string policy = flags.Str({"--context-policy"}, "stop");
  co.stop_at_eog = !flags.Bool({"--ignore-eos"});
  auto threads = flags.Int({"--threads"}, 0);
  auto chunk = flags.Int({"--chunk"}, 256);
  const std::string kv_type = flags.Str({"--kv-type"}, "");
  const bool no_history = flags.Bool({"--no-history"});
  const bool quiet = flags.Bool({"-q", "--quiet"});
  const bool exact = flags.Bool({"--exact"});
  auto image_tokens = flags.Int({"--image-tokens"}, 280);
  auto sampling = ReadSamplingFlags(flags);
  const GrammarFlags grammar_flags = ReadGrammarFlags(flags);
  const DraftFlags draft_flags = ReadDraftFlags(flags);
  for (const Status* st : {&ctx.status(), &n_predict.status(), &threads.status(), &chunk.status(),
                           &image_tokens.status()}) {
    if (!st->ok()) return UsageError("chat", st->message());
  }
  if (!sampling.ok()) return UsageError("chat", sampling.status().message());
  if (Status st = flags.Finish(); !st.ok()) return UsageError("chat", st.message());
  auto gbnf = GrammarFlagsToGbnf(grammar_flags);
  if (!gbnf.ok()) return UsageError("chat", gbnf.status().message());
  co.grammar = std::move(gbnf).value();
  if (!flags.Positional().empty()) {
    return UsageError("chat", "unexpected argument '" + flags.Positional()[0] + "' (the model goes after -m)");
  }
  auto pol = runtime::ParseContextPolicy(policy);
  if (!pol.ok()) return UsageError("chat", pol.status().message());
  if (*ctx < 2) return UsageError("chat", "--ctx must be >= 2");
  if (*n_predict < 1) return UsageError("chat", "-n must be >= 1");
  if (*threads < 0 || *threads > 1024) return UsageError("chat", "--threads must be in [0, 1024]");
  if (*chunk < 1) return UsageError("chat", "--chunk must be >= 1");
  if (!model::IsSupportedImageTokenBudget(*image_tokens))
    return UsageError("chat", "--image-tokens must be 70, 140, 280, 560 or 1120");
  runtime::EngineOptions kv;
  if (!ParseKvType(kv_type, &kv)) return UsageError("chat", KvTypeError(kv_type));
  co.policy = *pol;
  co.max_tokens = *n_predict;
  co.sampler = *sampling;
  co.session = runtime::SessionOptions{*ctx, *chunk};

  auto model = ResolveModel(model_flag, /*allow_demo=*/true);
  if (!model.ok()) return ReportError("chat", model.status());
  runtime::EngineOptions eo;
  eo.threads = static_cast<int>(*threads);
  SetKvTypes(kv, &eo);
  eo.mode = exact ? ops::MatMulMode::kExact : ops::MatMulMode::kFast;
  ApplyDrafter(draft_flags, &eo);
  auto engine = runtime::Engine::Open(*model, eo);
  if (!engine.ok()) return ReportModelError("chat", engine.status());
  auto spec = SpeculativeFromFlags(draft_flags, **engine);
  if (!spec.ok()) return UsageError("chat", spec.status().message());
  co.speculative = *spec;
  const auto& cfg = (*engine)->config();
  if (*ctx > cfg.max_position_embeddings) {
    return UsageError("chat", "--ctx " + std::to_string(*ctx) + " exceeds the model's " +
                                  std::to_string(cfg.max_position_embeddings) + " positions");
  }
  const Tokenizer* tok = (*engine)->tokenizer();
  if (tok == nullptr) return ReportError("chat", Corrupt(*model + ": the model file has no vocabulary"));
  runtime::Conversation conv(**engine, *tok, co);
  runtime::ImageEncoderOptions io;
  io.tokens = *image_tokens;
  auto encoder = runtime::ImageEncoder::Create(**engine, io);
  if (!encoder.ok()) return ReportError("chat", encoder.status());
  auto audio_encoder = runtime::AudioEncoder::Create(**engine);
  PendingMedia images{encoder->get(), audio_encoder.get(), {}};

  std::string history;
  if (!no_history) {
    if (auto dir = CacheDir(); dir.ok()) {
      std::error_code ec;
      std::filesystem::create_directories(*dir, ec);
      if (!ec) history = *dir + "/history";
    }
  }
  auto reader = LineReader::Create(history);
  const bool tty = reader->interactive();
  InstallInterruptHandler();
  if (tty) {
    std::printf("gemlet chat: %s, context %lld tokens. /help for commands, Ctrl+D to quit.\n", model->c_str(),
                static_cast<long long>(conv.context_limit()));
  }

  AnswerPrinter printer(tty);
  PrefillProgressLine progress(PrefillProgressLine::Wanted(quiet));
  runtime::TurnCallbacks cb;
  cb.on_text = [&](std::string_view text, bool thinking) {
    progress.Clear();
    printer.Text(text, thinking);
  };
  cb.on_prefill = [&](int64_t done, int64_t total) { progress.Update(done, total); };
  cb.should_stop = [] { return InterruptFlag().exchange(false); };
  bool noticed = false;
  cb.on_notice = [&](const std::string& notice) {
    printer.Notice(notice);
    noticed = true;
  };
  std::string line;
  for (;;) {
    const auto r = reader->Read(">>> ", &line);
    if (r == LineReader::Result::kEof) break;
    if (r == LineReader::Result::kInterrupted) continue;
    reader->Remember(line);
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    std::string message = line;
    if (line.compare(b, 6, "/file ") == 0 || line.substr(b) == "/file") {
      // /file PATH: the file's text is the message.
      std::string path = line.substr(std::min(line.size(), b + 6));
      while (!path.empty() && (path.front() == ' ' || path.front() == '\t')) path.erase(path.begin());
      while (!path.empty() && (path.back() == ' ' || path.back() == '\t')) path.pop_back();
      if (path.empty()) {
        std::printf("error: /file needs a file name\n");
        std::fflush(stdout);
        continue;
      }
      auto text = ReadFileToString(path);
      if (!text.ok()) {
        std::printf("error: %s\n", text.status().message().c_str());
        std::fflush(stdout);
        continue;
      }
      message = std::move(text).value();
    } else if (line[b] == '/') {
      if (!Command(conv, images, line.substr(b))) break;
      continue;
    }
    InterruptFlag().store(false);
    noticed = false;
    auto turn = conv.Send(message, images.media, cb);
    images.media.clear();
    progress.Clear();
    if (!turn.ok()) {
      printer.EndTurn(noticed);
      std::printf("error: %s\n", turn.status().message().c_str());
      std::fflush(stdout);
      continue;
    }
    printer.EndTurn(noticed);
    if (turn->interrupted) std::printf("[interrupted]\n");
    std::fflush(stdout);
  }
  return kExitOk;
}

}  // namespace cmd_chat

GEMLET_COMMAND(chat, "chat", "interactive multi-turn chat (Gemma 4 format, streaming, /save and /load)",
               cmd_chat::Usage(), cmd_chat::Run);

}  // namespace gemlet::cli
