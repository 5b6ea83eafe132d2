// gemlet transcribe: speech to text with the model's audio tower (runtime/transcriber.h):
// audio of any length in 30 s windows cut on quiet points, each transcribed with the text so
// far as context, written as text, JSON, SRT or WebVTT with each window's timestamps.
#include <cstdio>
#include <string>

#include "base/clock.h"
#include "runtime/audio_encoder.h"
#include "runtime/engine.h"
#include "runtime/transcriber.h"
#include "runtime/transcript.h"
#include "tools/cli/command.h"

namespace gemlet::cli {
namespace cmd_transcribe {

constexpr char kUsage[] =
    R"(usage: gemlet transcribe -m MODEL.gemlet FILE [--language L] [--translate] [--prompt TEXT]
                         [--format text|json|verbose_json|srt|vtt] [-o OUT] [flags]

Transcribes the speech in FILE (WAV, FLAC, Ogg Vorbis/Opus, MP3; channels averaged, resampled
to 16 kHz) with the model's audio tower. Audio longer than 30 s (what the tower hears at once)
is cut into windows of at most 30 s, each ending at the quietest 50 ms in its last 5 s; each
window is one chat turn (its soft tokens, the instruction, the text so far as context) and
the answers are joined. The timestamps are the windows' bounds.

flags:
  -m, --model FILE        a .gemlet model with an audio tower
  --language L            the speech's language (ISO 639-1 code such as en, de, or a name)
  --translate             translate the speech into English instead
  --prompt TEXT           text the audio continues (context for the first window)
  --format F              text (default), json ({"text"}), verbose_json (OpenAI's: segments
                          with start, end, text, tokens), srt or vtt
  -o, --out FILE          write the transcript there instead of stdout
  -n, --max-tokens N      tokens per window at most (default 448)
  --max-tokens-per-second R
                          also at most R tokens per second of each window (0 = no cap; with
                          random weights nothing else ends a window)
  --window-seconds S      window length at most (default 30, the tower's input; 1 to 30)
  --temp T                temperature (default 0: greedy)
  --seed N                sampling seed (with --temp > 0)
  --exact                 f32 reference matmuls instead of the int8 kernels
  --threads N             worker threads (default: all cores)
  -q, --quiet             no progress on stderr

examples:
  gemlet transcribe -m e2b.gemlet meeting.mp3 --format srt -o meeting.srt
  gemlet transcribe -m e2b.gemlet interview.wav --language de --translate
)";

int Run(Flags& flags) {
  const std::string model = flags.Str({"-m", "--model"}, "");
  const std::string language = flags.Str({"--language"}, "");
  const bool translate = flags.Bool({"--translate"});
  const std::string prompt = flags.Str({"--prompt"}, "");
  const std::string format_name = flags.Str({"--format"}, "text");
  const std::string out_path = flags.Str({"-o", "--out"}, "");
  auto max_tokens = flags.Int({"-n", "--max-tokens"}, 448);
  auto per_second = flags.Float({"--max-tokens-per-second"}, 0.0);
  auto window = flags.Float({"--window-seconds"}, 30.0);
  auto temp = flags.Float({"--temp"}, 0.0);
  auto seed = flags.Int({"--seed"}, 0);
  auto threads = flags.Int({"--threads"}, 0);
  const bool exact = flags.Bool({"--exact"});
  const bool quiet = flags.Bool({"-q", "--quiet"});
  for (const Status* st : {&max_tokens.status(), &per_second.status(), &window.status(), &temp.status(),
                           &seed.status(), &threads.status()}) {
    if (!st->ok()) return UsageError("transcribe", st->message());
  }
  if (Status st = flags.Finish(); !st.ok()) return UsageError("transcribe", st.message());
  if (model.empty()) return UsageError("transcribe", "-m MODEL is required");
  if (flags.Positional().size() != 1) return UsageError("transcribe", "give exactly one audio FILE");
  const std::string file = flags.Positional()[0];
  auto format = runtime::ParseTranscriptFormat(format_name);
  if (!format.ok()) return UsageError("transcribe", "--format: " + format.status().message());
  if (*max_tokens < 1) return UsageError("transcribe", "-n must be >= 1");
  if (*per_second < 0) return UsageError("transcribe", "--max-tokens-per-second must be >= 0");
  if (*window < 1 || *window > 30) return UsageError("transcribe", "--window-seconds must be in [1, 30]");
  if (*temp < 0) return UsageError("transcribe", "--temp must be >= 0");
  if (*threads < 0 || *threads > 1024) return UsageError("transcribe", "--threads must be in [0, 1024]");

  runtime::EngineOptions eo;
  eo.threads = static_cast<int>(*threads);
  eo.mode = exact ? ops::MatMulMode::kExact : ops::MatMulMode::kFast;
  auto engine = runtime::Engine::Open(model, eo);
  if (!engine.ok()) return ReportModelError("transcribe", engine.status());
  const runtime::Engine& eng = **engine;
  if (eng.tokenizer() == nullptr)
    return ReportError("transcribe", Corrupt(model + ": the model file has no vocabulary"));
  auto encoder = runtime::AudioEncoder::Create(eng);
  if (!encoder->available())
    return ReportError("transcribe", Unsupported(model + ": this model has no audio tower: it reads no audio"));

  const auto t0 = SteadyClock::now();
  auto bytes = runtime::ReadMediaFile(file, "audio file");
  if (!bytes.ok()) return ReportError("transcribe", bytes.status());
  auto clip = encoder->Decode(*bytes, file);
  if (!clip.ok()) return ReportError("transcribe", clip.status());
  const double decode_ms = MsSince(t0);

  runtime::TranscribeOptions to;
  to.language = language;
  to.translate = translate;
  to.prompt = prompt;
  to.max_tokens = *max_tokens;
  to.max_tokens_per_second = *per_second;
  to.windows.max_seconds = *window;
  to.windows.search_seconds = std::min(5.0, *window / 6);
  to.sampler.temperature = *temp;
  to.sampler.seed = static_cast<uint64_t>(*seed);
  if (Status st = to.sampler.Validate(); !st.ok()) return UsageError("transcribe", st.message());
  to.on_segment = [&](const runtime::TranscriptSegment& s, int64_t windows) {
    if (!quiet) {
      std::fprintf(stderr, "[window %lld/%lld %s --> %s: %zu tokens]\n", static_cast<long long>(s.index + 1),
                   static_cast<long long>(windows), runtime::FormatTimestamp(s.start, '.').c_str(),
                   runtime::FormatTimestamp(s.end, '.').c_str(), s.ids.size());
    }
    return true;
  };
  const uint64_t hash = runtime::HashBytes(bytes->data(), bytes->size());
  auto t = runtime::Transcribe(*encoder, clip->samples, hash, file, to,
                               runtime::SessionWindowRunner(eng, *eng.tokenizer()));
  if (!t.ok()) return ReportError("transcribe", t.status());
  const std::string text = runtime::FormatTranscript(*t, *format);
  if (out_path.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (*format == runtime::TranscriptFormat::kJson || *format == runtime::TranscriptFormat::kVerboseJson)
      std::printf("\n");
    std::fflush(stdout);
  } else {
    FILE* f = std::fopen(out_path.c_str(), "wb");
    if (!f) return ReportError("transcribe", IoError(out_path + ": cannot write the transcript"));
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok) return ReportError("transcribe", IoError(out_path + ": cannot write the transcript"));
  }
  if (!quiet) {
    const double total = decode_ms + t->encode_ms + t->generate_ms;
    std::fprintf(stderr,
                 "%.1f s of audio in %zu window%s: decode %.0f ms, encode %.0f ms, generate %.0f ms (%lld tokens); "
                 "real-time factor %.3f; %d thread%s\n",
                 t->duration, t->segments.size(), t->segments.size() == 1 ? "" : "s", decode_ms, t->encode_ms,
                 t->generate_ms, static_cast<long long>(t->generated_tokens), total / 1000.0 / t->duration,
                 eng.threads(), eng.threads() == 1 ? "" : "s");
  }
  return kExitOk;
}

}  // namespace cmd_transcribe

GEMLET_COMMAND(transcribe, "transcribe", "transcribe speech (any length, in 30 s windows) as text, JSON, SRT or VTT",
               cmd_transcribe::kUsage, cmd_transcribe::Run);

}  // namespace gemlet::cli
