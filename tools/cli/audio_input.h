// Audio on the command line: decode a file (16 kHz mono), compute its log-mel features and
// encode them into soft tokens with the model's audio tower (shared by `encode-audio` and
// `logits --audio`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/gemma4_audio.h"
#include "runtime/engine.h"

namespace gemlet::cli {

struct EncodedAudio {
  std::vector<float> soft;  // [n_soft, D]
  int64_t n_soft = 0;
  int64_t n_samples = 0;  // at 16 kHz, before the 30 s truncation
  model::AudioFeatures features;
};

// Decodes `path` (WAV, FLAC, Ogg, MP3, ...), extracts its features and encodes them with
// `audio` on the engine's threads and mode. Errors name the file.
Result<EncodedAudio> EncodeAudioFile(const runtime::Engine& engine, const model::Gemma4Audio& audio,
                                     const std::string& path);

// Features from a float32 .npy [n_frames, n_mels] (as --features-out writes them): the valid
// frames are those up to the last row that is not all zero (invalid rows are exactly 0).
Result<model::AudioFeatures> ReadAudioFeatures(const std::string& path);

}  // namespace gemlet::cli
