#include "model/gemma4_audio_features.h"

#include <algorithm>

#include "ops/log_mel.h"

namespace gemlet::model {

namespace {
constexpr int64_t kFrame = 320, kHop = 160, kPadMultiple = 128;

int64_t Padded(int64_t n) { return (n + kPadMultiple - 1) / kPadMultiple * kPadMultiple; }

const ops::LogMel& GemmaLogMel() {
  static const ops::LogMel* m = new ops::LogMel(ops::LogMelParams{}, ops::PeriodicHannF32(kFrame));
  return *m;
}
}  // namespace

int64_t AudioFrameCount(int64_t n) {
  const int64_t p = Padded(std::min(n, kAudioMaxSamples));
  return p < kFrame + 1 - kHop ? 0 : (p + kHop - (kFrame + 1)) / kHop + 1;
}

int64_t AudioValidFrameCount(int64_t n) {
  n = std::min(n, kAudioMaxSamples);
  return n < kFrame + 1 - kHop ? 0 : (n + kHop - (kFrame + 1)) / kHop + 1;
}

int64_t AudioSoftTokenCount(int64_t n) {
  const int64_t v = AudioValidFrameCount(n);
  return ((v + 1) / 2 + 1) / 2;
}

Result<AudioFeatures> ExtractAudioFeatures(const std::vector<float>& samples) {
  const int64_t n = std::min<int64_t>(static_cast<int64_t>(samples.size()), kAudioMaxSamples);
  AudioFeatures f;
  f.n_frames = AudioFrameCount(n);
  f.n_valid = AudioValidFrameCount(n);
  if (f.n_valid <= 0) {
    return OutOfRange("audio: " + std::to_string(n) + " samples are too short for one feature frame (" +
                           std::to_string(kFrame + 1 - kHop) + " at 16 kHz)");
  }
  // [160 zeros | the clip | zeros to the 128-multiple], then frames at f·160.
  std::vector<float> sig(static_cast<size_t>(kHop + Padded(n)), 0.0f);
  std::copy(samples.begin(), samples.begin() + n, sig.begin() + kHop);
  const ops::LogMel& lm = GemmaLogMel();
  f.n_mels = lm.params().n_mels;
  f.mel.assign(static_cast<size_t>(f.n_frames * f.n_mels), 0.0f);
  lm.Compute(sig.data(), f.n_valid, kHop, f.mel.data());  // the invalid rows stay 0 (the mask)
  return f;
}

}  // namespace gemlet::model
