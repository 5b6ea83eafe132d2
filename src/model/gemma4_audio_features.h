// Gemma 4's audio features (HF Gemma4AudioFeatureExtractor, feature_extraction_gemma4.py;
// spec-multimodal §2.1, ../shared/oracle/tiny-e2b-audio/README.md "HF conventions"): 16 kHz mono
// samples → log-mel frames [n_frames, 128] with the frame mask applied, on ops/log_mel.h.
//   truncate to 480000 samples (30 s); right-pad with zeros to a multiple of 128; prepend 160
//   zeros; 321-sample windows every 160 with the last sample dropped; periodic Hann(320);
//   |rfft(512)|; 128 HTK mel bands 0–8000 Hz; ln(mel + 0.001). Frame i is valid iff sample
//   i·160 + 320 of the left-padded signal is real audio; invalid frames are 0.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace gemlet::model {

struct AudioFeatures {
  int64_t n_frames = 0;  // rows of `mel` (frames of the 128-padded clip)
  int64_t n_valid = 0;   // the leading valid frames (the mask is a prefix)
  int64_t n_mels = 128;
  std::vector<float> mel;  // [n_frames, n_mels], invalid rows 0
};

inline constexpr int64_t kAudioSampleRate = 16000;
inline constexpr int64_t kAudioMaxSamples = 480000;  // HF max_length: 30 s

// The features of one clip (16 kHz mono); at most kAudioMaxSamples are used. An error for a
// clip too short to make a frame.
Result<AudioFeatures> ExtractAudioFeatures(const std::vector<float>& samples);

// Frames (and valid frames) of a clip of n samples, before truncation: what
// ExtractAudioFeatures returns, without computing it.
int64_t AudioFrameCount(int64_t n_samples);
int64_t AudioValidFrameCount(int64_t n_samples);
// The soft tokens a clip of n samples gives: ceil(ceil(valid/2)/2) (processor's
// _compute_audio_num_tokens; 25 per second, 750 at most).
int64_t AudioSoftTokenCount(int64_t n_samples);

}  // namespace gemlet::model
