// AudioEncoder: audio files or bytes to soft tokens (MediaEmbedding, runtime/media.h) for one
// engine — decoded, downmixed and resampled to 16 kHz mono by format/audio_decode, turned
// into log-mel features by model/gemma4_audio_features as HF's feature extractor does (at
// most 30 s: HF truncates there; runtime/transcriber.h windows longer audio), and encoded by
// the conformer and embed_audio (model/gemma4_audio), which is bound on the first clip, so a
// text-only run never touches the tower's pages. 25 soft tokens per second of audio.
// Results are kept in a MediaCache (runtime/media_cache.h) keyed by the bytes. Thread-safe:
// concurrent requests may share one encoder (the tower runs on the engine's pool).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/audio_decode.h"
#include "model/gemma4_audio.h"
#include "runtime/engine.h"
#include "runtime/media.h"
#include "runtime/media_cache.h"

namespace gemlet::runtime {

struct AudioEncoderOptions {
  size_t cache_entries = 8;   // encoded clips kept (0: none)
  AudioDecodeOptions decode;  // the length limit (max_seconds)
};

// The audio placeholder ids (boa, audio, eoa) of the engine's audio config; {-1, -1, -1} if
// the model has no audio tower.
MediaTokens AudioTokens(const Engine& engine);

// The placeholder ids of every media kind the engine reads, indexed by MediaKind (for
// ExpandMedia).
std::vector<MediaTokens> MediaKindTokens(const Engine& engine);

class AudioEncoder {
 public:
  // `engine` must outlive the encoder.
  static std::unique_ptr<AudioEncoder> Create(const Engine& engine, const AudioEncoderOptions& options = {});

  // True if the model file has an audio tower (nothing is bound by asking).
  bool available() const;

  // The soft tokens of an audio file's bytes (its first 30 s); `name` names it in errors
  // ("audio 2", a path). Unsupported if the model has no audio tower.
  Result<MediaRef> Encode(std::span<const uint8_t> bytes, const std::string& name);
  Result<MediaRef> EncodeFile(const std::string& path);
  // The soft tokens of 16 kHz mono samples (at most 30 s; a window of a longer clip).
  // `hash` identifies the samples (e.g. HashBytes of the source and the window's bounds).
  Result<MediaRef> EncodeSamples(std::span<const float> samples, uint64_t hash, const std::string& name);

  // Decodes bytes to 16 kHz mono with the encoder's limits (no tower needed).
  Result<AudioClip> Decode(std::span<const uint8_t> bytes, const std::string& name) const;

  const AudioEncoderOptions& options() const { return options_; }
  // True once the tower is bound (the first clip; a text-only run never binds it).
  bool bound() const {
    std::lock_guard<std::mutex> lock(mu_);
    return audio_ != nullptr;
  }
  // Clips the tower encoded so far (cache misses).
  int64_t encodes() const { return encodes_.load(); }

 private:
  AudioEncoder(const Engine& engine, const AudioEncoderOptions& options)
      : engine_(engine), options_(options), cache_(options.cache_entries) {}
  Result<const model::Gemma4Audio*> Tower();

  const Engine& engine_;
  AudioEncoderOptions options_;
  mutable std::mutex mu_;  // guards audio_
  std::unique_ptr<model::Gemma4Audio> audio_;
  MediaCache cache_;
  std::atomic<int64_t> encodes_{0};
};

}  // namespace gemlet::runtime
