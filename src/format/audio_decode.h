// Decoding audio files into 16 kHz mono float samples with Debian's libraries: libsndfile
// (WAV, FLAC, Ogg/Vorbis, Ogg/Opus, MP3 and the other containers it reads) and libsoxr (the
// resampler librosa.load uses through soxr_hq), as transformers' audio_utils.load_audio does
// for Gemma 4: the mean of the channels, then resampling. PCM samples are scaled by 1/32768
// (libsndfile's normalized float read; HF's PCM16 / 32768).
//
// Audio comes from outside (files, requests), so every failure is a Status that names the
// input: an unknown or unsupported format, a truncated or corrupt stream, 0 samples, or a
// duration over the limit, which is refused from the header before any sample is decoded.
// Built without libsndfile/libsoxr (the Arm64 cross build), every call is an Unsupported error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace gemlet {

struct AudioClip {
  int64_t sample_rate = 0;     // of `samples` (the target rate)
  std::vector<float> samples;  // [n] mono
  // What the file held.
  int64_t source_rate = 0;
  int source_channels = 0;
  std::string source_format;  // "wav", "flac", "ogg", "mp3", ...
};

struct AudioDecodeOptions {
  int64_t target_rate = 16000;
  double max_seconds = 4 * 3600.0;  // a longer file (as its header declares it) is refused
};

// True if this build can decode audio files (libsndfile and libsoxr were found).
bool AudioDecodingAvailable();

// Decodes an in-memory file; `name` names it in errors (a path, "request part 2").
Result<AudioClip> DecodeAudio(const uint8_t* data, size_t size, const std::string& name,
                              const AudioDecodeOptions& options = {});
Result<AudioClip> DecodeAudioFile(const std::string& path, const AudioDecodeOptions& options = {});

// Mono `in` [n] at `in_rate` resampled to `out_rate` (libsoxr, high quality); a copy when
// the rates are equal.
Result<std::vector<float>> ResampleMono(const std::vector<float>& in, int64_t in_rate, int64_t out_rate);

}  // namespace gemlet
