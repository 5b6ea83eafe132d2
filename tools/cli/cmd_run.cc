// gemlet run: prefill a prompt and generate, streaming the text (or one JSON object).
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "base/clock.h"
#include "format/npy.h"
#include "model/gemma4_image.h"
#include "runtime/engine.h"
#include "runtime/generate.h"
#include "runtime/grammar_constraint.h"
#include "runtime/audio_encoder.h"
#include "runtime/image_encoder.h"
#include "runtime/session.h"
#include "text/tokenizer.h"
#include "base/mapped_file.h"
#include "tools/cli/chat_input.h"
#include "tools/cli/chat_options.h"
#include "tools/cli/command.h"
#include "tools/cli/draft_flags.h"
#include "tools/cli/grammar_flags.h"
#include "tools/cli/kv_type_flag.h"
#include "tools/cli/prefill_progress.h"
#include "tools/cli/verify.h"

namespace gemlet::cli {
namespace cmd_run {

constexpr char kUsage[] =
    R"(usage: gemlet run [-m MODEL.gemlet] (-p PROMPT | -f FILE | --tokens IDS | --tokens-file IDS.npy | < FILE)
                  [-n N] [--ctx N] [sampling flags] [--json] [-q]
       gemlet run [-m MODEL.gemlet] --chat [--system TEXT] [--think] -p PROMPT ...
       gemlet run --verify

Prefills the prompt, then generates token by token and streams the text to stdout until an
end-of-generation token (the model's eog_ids: <eos>, <turn|>, <|tool_response>), N tokens
(-n) or the end of the context (--ctx).
Raw completion: no chat template is applied unless --chat. Timings go to stderr. A long
prompt's prefill shows its progress on stderr when that is a terminal (tokens done, tok/s,
ETA; not with -q). Ctrl+C during the prefill stops it (what was prefilled is reported, exit
code 130); during generation it stops the generation (the timings are printed, exit code 0).
The exit code is 0 on success, 1 on failure, 2 for bad flags, 3 when --verify fails.

flags:
  -m, --model FILE        a .gemlet model (gemlet convert)
  -p, --prompt TEXT       prompt text; special tokens written as text (<|turn>, ...) are
                          recognized, and <bos> is put first unless the text starts with it
  -f, --file FILE         the prompt is the text of FILE (as -p; for long documents)
  --tokens IDS            the prompt as comma-separated token ids, fed as given
  --tokens-file FILE      the prompt as token ids in a one-dimensional int32 (or int64) .npy
                          array, fed as given (for prompts too long for a command line)
  --no-bos                do not put <bos> before a -p prompt
  -n, --n-predict N       generate at most N tokens (default, or -1: until the context is
                          full, as chat does)
  --ctx N                 context limit of the session: prompt + N must fit, up to the model's
                          positions (default 4096, or prompt + N when larger, up to the model's
                          positions; the KV cache grows with the tokens held, not with --ctx)
  --json                  print {"ids": [...], "text": ..., "stop": "eog"|"length"|"grammar_dead_end",
                          "seed": ..., "timings": {...}} instead of streaming; "ids" includes
                          the end-of-generation token when one ended the run, "text" does not;
                          with --grammar/--json-schema the timings add constraint_ms (time in
                          the grammar's calls), constraint_masks and constraint_share (of decode);
                          timings.kv_bytes is the KV memory the session holds at the end
  --ignore-eos            keep generating after end-of-generation tokens
  -q, --quiet             no prefill progress and no timings line on stderr
  --threads N             worker threads (default: all cores)
  --chunk N               prefill chunk size in tokens (default 256)
  --kv-type T             KV cache rows: f16 (default; half the memory of f32), f32, or q8
                          (8-bit blocks: half the memory of f16); or
                          per layer kind: full=T,sliding=T (either part), e.g.
                          full=q8,sliding=f16: the full-attention layers hold the whole
                          context, the sliding ones a ring of the window
  --exact                 f32 reference matmuls instead of the int8 kernels (KV f32 unless
                          --kv-type says otherwise)
  --chat                  wrap the prompt in the Gemma 4 chat format as one user turn
                          (<bos><|turn>user\nPROMPT<turn|>\n<|turn>model\n)
  --system TEXT           with --chat: a system turn first
  --think                 with --chat: thinking on (<|think|> in the system turn); the
                          thoughts come out between <|channel> and <channel|>
  --image FILE            an image (JPEG, PNG or WebP) for a model with a vision tower;
                          repeatable. {image} or <|image|> in the prompt places each in turn,
                          else they come before the text; each becomes <|image>, its soft
                          tokens, <image|>
  --image-tokens N        soft tokens per image: 70, 140, 280 (default), 560 or 1120
  --audio FILE            an audio clip (WAV, FLAC, Ogg/Vorbis, Opus, MP3; downmixed and
                          resampled to 16 kHz mono; its first 30 s) for a model with an audio
                          tower; repeatable. {audio} or <|audio|> in the prompt places each in
                          turn, else they come before the text; each becomes <|audio>, its soft
                          tokens (25 per second), <audio|>. With --tokens, each audio token id
                          (<|audio|>, from the model's config) in the ids is the next clip
)" GEMLET_GRAMMAR_FLAGS_HELP GEMLET_DRAFT_FLAGS_HELP R"(  (no -p, no --tokens*)   the prompt is read from stdin: echo Hello | gemlet run --chat
  (no -m)                 the tiny demo model: random weights, made once in ~/.cache/gemlet
  --verify                check this build on this CPU, no model needed: every kernel tier
                          against its scalar twin on random data, and a tiny synthetic model's
                          prefill against token-by-token decode; prints PASS, or FAIL with the
                          failing check (exit code 3). Test hook: GEMLET_VERIFY_INJECT_FAULT=NAME
                          breaks kernel NAME (gemv_q4, gemm_q8, ...) to see verify fail

sampling (defaults follow Gemma 4's generation_config: temperature 1, top-k 64, top-p 0.95):
  --temp T                temperature; 0 = greedy (ties: the lowest id)
  --top-k K               keep the K most likely tokens (0 = all)
  --top-p P               keep the smallest set with probability >= P
  --min-p P               drop tokens below P x the top token's probability (default 0)
  --repeat-penalty R      divide positive / multiply negative logits of recent tokens (default 1)
  --presence-penalty P    subtract P from the logits of recent tokens (default 0)
  --repeat-last-n N       tokens the penalties look back at (default 64, 0 = all)
  --seed S                RNG seed (default: random, printed with --json)

examples:
  gemlet run -m e2b.gemlet -p "The capital of France is" -n 32 --temp 0
  gemlet run -m e2b.gemlet -p $'<|turn>user\nHello<turn|>\n<|turn>model\n' --seed 7
  gemlet run -m tiny.gemlet --tokens 2,105,437,107 -n 8 --temp 0 --json
  gemlet run -m e2b.gemlet --drafter e2b-drafter.gemlet -p "Repeat: ..." --draft auto --json
  gemlet run -m e2b.gemlet --chat --system "Answer in one line." -p "Why is the sky blue?"
  gemlet run -m e2b.gemlet --chat --image cat.jpg -p "Describe this image."
  gemlet run -m e2b.gemlet --chat -f report.txt --ctx 131072 -n 512
  gemlet run --verify
)";

int Run(Flags& flags) {
  if (flags.Bool({"--verify"})) return RunVerifyCommand(flags);  // tools/cli/verify.h
  std::string model = flags.Str({"-m", "--model"}, "");
  auto prompt = flags.Str({"-p", "--prompt"});
  const std::string prompt_file = flags.Str({"-f", "--file"}, "");
  const bool quiet = flags.Bool({"-q", "--quiet"});
  auto tokens = flags.IntList({"--tokens"});
  const std::string tokens_file = flags.Str({"--tokens-file"}, "");
  const bool no_bos = flags.Bool({"--no-bos"});
  auto n_predict = flags.Int({"-n", "--n-predict"}, -1);  // -1: until the context is full
  auto ctx = flags.Int({"--ctx"}, 0);  // 0: not given
  const bool json = flags.Bool({"--json"});
  const bool ignore_eos = flags.Bool({"--ignore-eos"});
  auto threads = flags.Int({"--threads"}, 0);
  auto chunk = flags.Int({"--chunk"}, 256);
  const std::string kv_type = flags.Str({"--kv-type"}, "");
  const bool exact = flags.Bool({"--exact"});
  auto temp = flags.Float({"--temp"}, 1.0);
  auto top_k = flags.Int({"--top-k"}, 64);
  auto top_p = flags.Float({"--top-p"}, 0.95);
  auto min_p = flags.Float({"--min-p"}, 0.0);
  auto rep = flags.Float({"--repeat-penalty"}, 1.0);
  auto presence = flags.Float({"--presence-penalty"}, 0.0);
  auto last_n = flags.Int({"--repeat-last-n"}, 64);
  auto seed = flags.Int({"--seed"}, -1);
  const std::vector<std::string> images = flags.StrAll({"--image"});
  auto image_tokens = flags.Int({"--image-tokens"}, 280);
  const std::vector<std::string> audios = flags.StrAll({"--audio"});
  for (const Status* st : {&image_tokens.status(), &tokens.status(), &n_predict.status(), &ctx.status(), &threads.status(),
                           &chunk.status(), &temp.status(), &top_k.status(), &top_p.status(), &min_p.status(),
                           &rep.status(), &presence.status(), &last_n.status(), &seed.status()}) {
    if (!st->ok()) return UsageError("run", st->message());
  }
  const DraftFlags draft_flags = ReadDraftFlags(flags);
  RunChatFlags chat_flags = ReadRunChatFlags(flags);
  chat_flags.images = static_cast<int64_t>(images.size());
  chat_flags.audios = static_cast<int64_t>(audios.size());
  const GrammarFlags grammar_flags = ReadGrammarFlags(flags);
  if (Status st = flags.Finish(); !st.ok()) return UsageError("run", st.message());
  auto gbnf = GrammarFlagsToGbnf(grammar_flags);
  if (!gbnf.ok()) return UsageError("run", gbnf.status().message());
  runtime::EngineOptions kv;
  if (!ParseKvType(kv_type, &kv)) return UsageError("run", KvTypeError(kv_type));
  if (!flags.Positional().empty())
    return UsageError("run", "unexpected argument '" + flags.Positional()[0] + "'");
  // --chat/--system/--think, the prompt from stdin, the demo model without -m (chat_options.h).
  const bool have_ids = !tokens->empty() || !tokens_file.empty();
  if (!tokens->empty() && !tokens_file.empty()) return UsageError("run", "give at most one of --tokens and --tokens-file");
  if (!prompt_file.empty()) {
    if (prompt.has_value() || have_ids) return UsageError("run", "give one of -p PROMPT, -f FILE, --tokens IDS or --tokens-file");
    auto text = ReadFileToString(prompt_file);
    if (!text.ok()) return ReportError("run", text.status());
    if (text->empty()) return UsageError("run", "-f " + prompt_file + ": the file is empty");
    prompt = std::move(text).value();
  }
  if (Status st = ApplyRunChatFlags(chat_flags, have_ids, &prompt, &model); !st.ok()) {
    return st.code() == ErrorCode::kInvalidArgument ? UsageError("run", st.message())
                                                    : ReportError("run", st);
  }
  if (model.empty()) return UsageError("run", "-m MODEL is required");
  if (prompt.has_value() == have_ids)
    return UsageError("run", "give exactly one of -p PROMPT, -f FILE, --tokens IDS or --tokens-file IDS.npy");
  if (prompt && prompt->empty()) return UsageError("run", "-p: the prompt is empty");
  if (*n_predict < -1) return UsageError("run", "-n must be >= 0 (or -1: until the context is full)");
  if (*ctx < 0) return UsageError("run", "--ctx must be >= 1");
  if (*threads < 0 || *threads > 1024) return UsageError("run", "--threads must be in [0, 1024]");
  if (*chunk < 1) return UsageError("run", "--chunk must be >= 1");
  if (!model::IsSupportedImageTokenBudget(*image_tokens))
    return UsageError("run", "--image-tokens must be 70, 140, 280, 560 or 1120");

  runtime::SamplerOptions so;
  so.temperature = *temp;
  so.top_k = *top_k;
  so.top_p = *top_p;
  so.min_p = *min_p;
  so.repetition_penalty = *rep;
  so.presence_penalty = *presence;
  so.penalty_last_n = *last_n;
  so.seed = *seed >= 0 ? static_cast<uint64_t>(*seed) : std::random_device{}();
  if (Status st = so.Validate(); !st.ok()) return UsageError("run", st.message());

  runtime::EngineOptions eo;
  eo.threads = static_cast<int>(*threads);
  SetKvTypes(kv, &eo);
  ApplyDrafter(draft_flags, &eo);
  eo.mode = exact ? ops::MatMulMode::kExact : ops::MatMulMode::kFast;
  auto engine_or = runtime::Engine::Open(model, eo);
  if (!engine_or.ok()) return ReportModelError("run", engine_or.status());
  const runtime::Engine& engine = **engine_or;
  auto spec = SpeculativeFromFlags(draft_flags, engine);
  if (!spec.ok()) return UsageError("run", spec.status().message());
  const auto& cfg = engine.config();
  const Tokenizer* tok = engine.tokenizer();

  // The prompt as ids.
  std::vector<int32_t> ids;
  if (prompt) {
    if (!tok) return ReportError("run", Corrupt(model + ": the model file has no vocabulary, use --tokens"));
    auto enc = tok->Encode(*prompt);
    if (!enc.ok()) return ReportError("run", enc.status());
    ids = std::move(*enc);
    if (!no_bos && (ids.empty() || ids[0] != engine.bos_id())) ids.insert(ids.begin(), engine.bos_id());
    if (ids.empty()) return UsageError("run", "-p: the prompt has no tokens");
  } else if (!tokens_file.empty()) {
    auto file_ids = ReadNpyIds(tokens_file);
    if (!file_ids.ok()) return ReportError("run", file_ids.status());
    if (file_ids->empty()) return ReportError("run", InvalidArgument(tokens_file + ": no token ids"));
    ids = std::move(*file_ids);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] >= cfg.vocab_size) {
        return UsageError("run", tokens_file + ": id " + std::to_string(ids[i]) + " (item " + std::to_string(i + 1) +
                                     ") is outside the vocabulary [0, " + std::to_string(cfg.vocab_size) + ")");
      }
    }
  } else {
    for (size_t i = 0; i < tokens->size(); ++i) {
      const int64_t id = (*tokens)[i];
      if (id < 0 || id >= cfg.vocab_size) {
        return UsageError("run", "--tokens: id " + std::to_string(id) + " (item " + std::to_string(i + 1) +
                                     ") is outside the vocabulary [0, " + std::to_string(cfg.vocab_size) +
                                     ")");
      }
      ids.push_back(static_cast<int32_t>(id));
    }
  }

  // Images and audio clips: encoded, and each placeholder expanded to its open token, its
  // soft tokens and its close token (<|image> ... <image|>, <|audio> ... <audio|>).
  runtime::MediaPrompt media_prompt;
  double media_ms = 0;  // encoding the images and clips (part of the time to the first token)
  if (!images.empty() || !audios.empty()) {
    const auto media_start = SteadyClock::now();
    runtime::ImageEncoderOptions io;
    io.tokens = *image_tokens;
    auto encoder = runtime::ImageEncoder::Create(engine, io);
    if (!encoder.ok()) return ReportError("run", encoder.status());
    auto audio_encoder = runtime::AudioEncoder::Create(engine);
    std::vector<runtime::MediaRef> media;
    for (const std::string& path : images) {
      auto m = (*encoder)->EncodeFile(path);
      if (!m.ok()) return ReportError("run", m.status());
      media.push_back(std::move(*m));
    }
    for (const std::string& path : audios) {
      auto m = audio_encoder->EncodeFile(path);
      if (!m.ok()) return ReportError("run", m.status());
      media.push_back(std::move(*m));
    }
    auto expanded = runtime::ExpandMedia(ids, media, runtime::MediaKindTokens(engine));
    if (!expanded.ok()) return ReportError("run", expanded.status());
    media_prompt = std::move(*expanded);
    media_ms = MsSince(media_start);
  } else {
    media_prompt.tokens = std::move(ids);
  }
  // The context check comes before any work, with the numbers.
  const int64_t n_prompt = media_prompt.size();
  if (*ctx == 0) {  // KV memory follows the tokens held, so a larger limit costs nothing
    // (-n not given: room for the prompt and 256 tokens at least)
    *ctx = std::min<int64_t>(std::max<int64_t>(4096, n_prompt + (*n_predict >= 0 ? *n_predict : 256)),
                             cfg.max_position_embeddings);
  }
  if (*ctx > cfg.max_position_embeddings) {
    return UsageError("run", "--ctx " + std::to_string(*ctx) + " exceeds the model's " +
                                 std::to_string(cfg.max_position_embeddings) + " positions");
  }
  if (*n_predict < 0 && n_prompt >= *ctx) {
    return UsageError("run", "the prompt (" + std::to_string(n_prompt) +
                                 " tokens) leaves no room to generate within --ctx " + std::to_string(*ctx));
  }
  // Without -n: generate until the context is full.
  const int64_t max_new = *n_predict >= 0 ? *n_predict : *ctx - n_prompt;
  if (n_prompt + max_new > *ctx) {
    return UsageError("run", "the prompt (" + std::to_string(n_prompt) + " tokens) + -n " +
                                 std::to_string(*n_predict) + " = " + std::to_string(n_prompt + *n_predict) +
                                 " tokens do not fit the context limit --ctx " + std::to_string(*ctx));
  }

  runtime::Session session(engine, runtime::SessionOptions{*ctx, *chunk});
  session.set_sampler(so);
  runtime::GenerateOptions go;
  go.max_tokens = max_new;
  go.stop_at_eog = !ignore_eos;
  go.speculative = *spec;
  std::unique_ptr<runtime::GrammarConstraint> constraint;
  if (!gbnf->empty()) {
    if (!tok) return UsageError("run", "--grammar and --json-schema need a model with a vocabulary");
    auto vocab = runtime::GrammarVocabulary(*tok);
    if (!vocab.ok()) return ReportError("run", vocab.status());
    auto c = runtime::GrammarConstraint::Create(
        *gbnf, *vocab, runtime::ChatAnswerSchedule(chat_flags.chat && chat_flags.think));
    if (!c.ok()) return UsageError("run", "the grammar: " + c.status().message());
    constraint = std::move(c).value();
    go.constraint = constraint.get();
  }

  // Ctrl+C stops the prefill (between chunks) or the generation; the progress line is drawn
  // on a terminal only.
  InstallInterruptHandler();
  InterruptFlag().store(false);
  PrefillProgressLine progress(!json && PrefillProgressLine::Wanted(quiet));
  go.on_prefill = [&](int64_t done, int64_t total) {
    if (InterruptFlag().load()) return false;
    progress.Update(done, total);
    return true;
  };
  std::string stream_error;
  std::unique_ptr<StreamDecoder> stream;
  bool interrupted = false;
  if (tok && !json) stream = std::make_unique<StreamDecoder>(*tok);
  auto on_token = [&](int32_t id) {
    if (InterruptFlag().exchange(false)) {
      interrupted = true;
      return false;
    }
    if (json) return true;
    if (go.stop_at_eog && engine.IsEog(id)) return true;  // the stop token is not printed
    std::string piece;
    if (stream) {
      if (Status st = stream->Push(id, &piece); !st.ok()) {
        stream_error = st.message();
        return false;
      }
    } else {
      piece.append("[").append(std::to_string(id)).append("]");
    }
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return true;
  };
  auto result = runtime::Generate(session, media_prompt, go, on_token);
  progress.Clear();
  if (!result.ok()) return ReportError("run", result.status());
  if (result->prefill_stopped) {
    std::fprintf(stderr, "gemlet run: interrupted during the prefill: %lld of %lld prompt tokens prefilled in %.1f ms\n",
                 static_cast<long long>(result->timings.prompt_tokens), static_cast<long long>(n_prompt),
                 result->timings.prefill_ms);
    return 130;
  }
  if (!stream_error.empty()) return ReportError("run", Internal(stream_error));
  const auto& t = result->timings;

  if (json) {
    std::vector<int32_t> text_ids = result->ids;
    if (result->stopped_at_eog && !text_ids.empty()) text_ids.pop_back();
    std::string text;
    if (tok) {
      auto dec = tok->Decode(text_ids);
      if (!dec.ok()) return ReportError("run", dec.status());
      text = std::move(*dec);
    }
    nlohmann::json j;
    j["ids"] = result->ids;
    j["text"] = text;
    j["stop"] = result->stopped_at_eog ? "eog"
                : result->dead_end     ? "grammar_dead_end"
                : interrupted          ? "interrupted"
                                       : "length";
    j["seed"] = so.seed;
    j["prompt_tokens"] = n_prompt;
    j["timings"] = {{"prompt_tokens", t.prompt_tokens},   {"generated_tokens", t.generated_tokens},
                    {"prefill_ms", t.prefill_ms},         {"decode_ms", t.decode_ms},
                    {"prefill_tok_s", t.prefill_tok_s()}, {"decode_tok_s", t.decode_tok_s()},
                    {"sample_ms", t.sample_ms},           {"threads", engine.threads()},
                    // The KV memory the session holds at the end (it grows with the tokens held).
                    {"kv_bytes", session.kv_cache().bytes_allocated()}};
    if (!images.empty() || !audios.empty()) j["timings"]["media_encode_ms"] = media_ms;
    if (go.speculative.mode != runtime::DraftMode::kOff) {
      const auto& sp = t.speculative;
      j["timings"]["speculative"] = {{"draft", runtime::DraftModeName(go.speculative.mode)},
                                     {"rounds", sp.rounds},
                                     {"plain_steps", sp.plain_steps},
                                     {"drafted", sp.drafted},
                                     {"accepted", sp.accepted},
                                     {"acceptance_rate", sp.acceptance_rate()},
                                     {"mean_accepted", sp.mean_accepted()},
                                     {"mtp_rounds", sp.mtp_rounds},
                                     {"lookup_rounds", sp.lookup_rounds},
                                     {"draft_ms", sp.draft_ms},
                                     {"verify_ms", sp.verify_ms}};
    }
    if (constraint) {
      j["timings"]["constraint_ms"] = t.constraint_ms;
      j["timings"]["constraint_masks"] = t.masks;
      // The constraint's share of the generation (its calls, not the sampler's second draw).
      j["timings"]["constraint_share"] = t.decode_ms > 0 ? t.constraint_ms / t.decode_ms : 0.0;
    }
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return kExitOk;
  }
  if (stream) {
    std::string rest;
    stream->Flush(&rest);
    std::fwrite(rest.data(), 1, rest.size(), stdout);
  }
  std::printf("\n");
  std::fflush(stdout);
  if (quiet) return kExitOk;
  std::fprintf(stderr,
               "prompt: %lld tokens in %.1f ms (%.1f tok/s); generated: %lld tokens in %.1f ms (%.1f tok/s); "
               "stop: %s; %d thread%s\n",
               static_cast<long long>(t.prompt_tokens), t.prefill_ms, t.prefill_tok_s(),
               static_cast<long long>(t.generated_tokens), t.decode_ms, t.decode_tok_s(),
               result->stopped_at_eog ? "end-of-generation token"
               : result->dead_end     ? "the grammar allows no next token"
               : interrupted          ? "interrupted (Ctrl+C)"
               : *n_predict < 0       ? "the context is full"
                                      : "token limit (-n)",
               engine.threads(), engine.threads() == 1 ? "" : "s");
  if (!images.empty() || !audios.empty()) {
    auto count = [](size_t n, const char* what) {
      return n == 0 ? std::string() : std::to_string(n) + " " + what + (n == 1 ? "" : "s");
    };
    std::string what = count(images.size(), "image");
    if (!audios.empty()) what += (what.empty() ? "" : " and ") + count(audios.size(), "audio clip");
    std::fprintf(stderr, "media: %s encoded in %.1f ms (first token after %.1f ms)\n", what.c_str(), media_ms,
                 media_ms + t.prefill_ms);
  }
  if (go.speculative.mode != runtime::DraftMode::kOff) {
    const auto& sp = t.speculative;
    std::fprintf(stderr,
                 "draft %s: %lld rounds, %lld plain steps; %lld drafted, %lld accepted (%.1f %%), %.2f per round\n",
                 runtime::DraftModeName(go.speculative.mode), static_cast<long long>(sp.rounds),
                 static_cast<long long>(sp.plain_steps), static_cast<long long>(sp.drafted),
                 static_cast<long long>(sp.accepted), 100 * sp.acceptance_rate(), sp.mean_accepted());
  }
  return kExitOk;
}

}  // namespace cmd_run

GEMLET_COMMAND(run, "run", "generate text from a prompt (streamed, or --json), greedy or sampled", cmd_run::kUsage,
               cmd_run::Run);

}  // namespace gemlet::cli
