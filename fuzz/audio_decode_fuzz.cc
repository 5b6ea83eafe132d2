// libFuzzer target: the audio decoder (format/audio_decode.h, DecodeAudio: libsndfile's
// containers, the WAV header check, downmix and libsoxr) on arbitrary bytes, and the log-mel
// features of what it accepts (model/gemma4_audio_features.h) when the clip is short. Nothing
// may crash, leak or read outside the input; an accepted clip has at least one 16 kHz sample,
// all finite, within the length limit.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "format/audio_decode.h"
#include "model/gemma4_audio_features.h"

namespace {

void Require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "audio_decode_fuzz: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> buf(data, data + size);  // the exact extent, for ASan
  gemlet::AudioDecodeOptions opt;
  opt.max_seconds = 20;  // keeps the fuzzer's memory and time bounded
  auto clip = gemlet::DecodeAudio(buf.data(), buf.size(), "fuzz", opt);
  if (!clip.ok()) {
    Require(!clip.status().message().empty(), "an error without a message");
    return 0;
  }
  Require(clip->sample_rate == 16000 && !clip->samples.empty(), "an accepted clip is empty");
  Require(clip->samples.size() <= static_cast<size_t>(20 * 16000 + 16), "an accepted clip is over the limit");
  for (float v : clip->samples) Require(std::isfinite(v), "a non-finite sample");
  if (clip->samples.size() <= 16000) {
    auto f = gemlet::model::ExtractAudioFeatures(clip->samples);
    if (f.ok()) {
      Require(f->n_valid > 0 && f->n_valid <= f->n_frames, "frame counts");
      Require(f->mel.size() == static_cast<size_t>(f->n_frames * f->n_mels), "feature size");
    }
  }
  return 0;
}
