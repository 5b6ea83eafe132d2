// gemlet encode-audio: the soft tokens of one audio clip (log-mel features, the audio tower
// and embed_audio), as a NumPy file, for checking the tower against a reference.
#include <cstdio>
#include <string>

#include "base/clock.h"
#include "format/npy.h"
#include "runtime/engine.h"
#include "tools/cli/audio_input.h"
#include "tools/cli/command.h"

namespace gemlet::cli {
namespace cmd_encode_audio {

constexpr char kUsage[] =
    R"(usage: gemlet encode-audio -m MODEL.gemlet (--audio FILE | --features-in F.npy) -o SOFT.npy
                           [--features-out F.npy] [--exact] [--threads N]

Decodes the audio (WAV, FLAC, Ogg Vorbis/Opus, MP3; channels averaged, resampled to 16 kHz),
computes Hugging Face's Gemma 4 log-mel features (the first 30 s), runs the audio tower and
embed_audio, and writes the soft tokens as float32 [n_soft, hidden] to a NumPy .npy file
(25 per second of audio).

flags:
  -m, --model FILE      a .gemlet model converted from a checkpoint with an audio tower
  --audio FILE          the audio file
  --features-in F.npy   feed these log-mel features [n_frames, 128] to the tower instead
                        (invalid frames 0, as --features-out writes them)
  --features-out F.npy  also write the features computed from --audio
  -o, --out FILE        output .npy file
  --exact               f32 math over dequantized weights (the reference path)
  --threads N           worker threads (default: all cores)

examples:
  gemlet encode-audio -m e2b.gemlet --audio speech.wav -o soft.npy
  gemlet encode-audio -m tiny.gemlet --features-in features.npy --exact -o soft.npy
)";

int Run(Flags& flags) {
  const std::string model = flags.Str({"-m", "--model"}, "");
  const std::string audio = flags.Str({"--audio"}, "");
  const std::string features_in = flags.Str({"--features-in"}, "");
  const std::string features_out = flags.Str({"--features-out"}, "");
  const std::string out = flags.Str({"-o", "--out"}, "");
  auto threads = flags.Int({"--threads"}, 0);
  const bool exact = flags.Bool({"--exact"});
  if (!threads.ok()) return UsageError("encode-audio", threads.status().message());
  if (Status st = flags.Finish(); !st.ok()) return UsageError("encode-audio", st.message());
  if (!flags.Positional().empty())
    return UsageError("encode-audio", "unexpected argument '" + flags.Positional()[0] + "'");
  if (model.empty()) return UsageError("encode-audio", "-m MODEL is required");
  if (audio.empty() == features_in.empty())
    return UsageError("encode-audio", "give exactly one of --audio FILE and --features-in F.npy");
  if (!features_out.empty() && audio.empty())
    return UsageError("encode-audio", "--features-out needs --audio");
  if (out.empty()) return UsageError("encode-audio", "-o SOFT.npy is required");
  if (*threads < 0 || *threads > 1024) return UsageError("encode-audio", "--threads must be in [0, 1024]");

  runtime::EngineOptions eo;
  eo.threads = static_cast<int>(*threads);
  eo.mode = exact ? ops::MatMulMode::kExact : ops::MatMulMode::kFast;
  auto engine = runtime::Engine::Open(model, eo);
  if (!engine.ok()) return ReportError("encode-audio", engine.status());
  auto tower = model::Gemma4Audio::Bind((*engine)->file());
  if (!tower.ok()) return ReportError("encode-audio", tower.status());
  const auto t0 = SteadyClock::now();
  EncodedAudio enc;
  if (!audio.empty()) {
    auto e = EncodeAudioFile(**engine, **tower, audio);
    if (!e.ok()) return ReportError("encode-audio", e.status());
    enc = std::move(*e);
  } else {
    auto f = ReadAudioFeatures(features_in);
    if (!f.ok()) return ReportError("encode-audio", f.status());
    enc.features = std::move(*f);
    if (Status st = (*tower)->Encode(enc.features, (*engine)->mode(), (*engine)->pool(), &enc.soft); !st.ok())
      return ReportError("encode-audio", st.WithContext(features_in));
    enc.n_soft = model::Gemma4Audio::n_soft(enc.features.n_valid);
  }
  const double ms = MsSince(t0);
  if (!features_out.empty()) {
    if (Status st = WriteNpyF32(features_out, enc.features.mel.data(), {enc.features.n_frames, enc.features.n_mels});
        !st.ok())
      return ReportError("encode-audio", st);
  }
  const int64_t D = (*tower)->config().text_hidden_size;
  if (Status st = WriteNpyF32(out, enc.soft.data(), {enc.n_soft, D}); !st.ok()) return ReportError("encode-audio", st);
  std::printf("wrote %s: float32 [%lld, %lld] from %lld feature frames (%lld valid), %s, %d threads, %.1f ms\n",
              out.c_str(), static_cast<long long>(enc.n_soft), static_cast<long long>(D),
              static_cast<long long>(enc.features.n_frames), static_cast<long long>(enc.features.n_valid),
              ops::MatMulModeName((*engine)->mode()), (*engine)->threads(), ms);
  return kExitOk;
}

}  // namespace cmd_encode_audio

GEMLET_COMMAND(encode_audio, "encode-audio", "write the soft tokens of an audio clip (audio tower) to a .npy file",
               cmd_encode_audio::kUsage, cmd_encode_audio::Run);

}  // namespace gemlet::cli
