#include "tools/cli/audio_input.h"

#include "format/audio_decode.h"
#include "format/npy.h"
#include "model/gemma4_audio_features.h"

namespace gemlet::cli {

Result<EncodedAudio> EncodeAudioFile(const runtime::Engine& engine, const model::Gemma4Audio& audio,
                                     const std::string& path) {
  ASSIGN_OR_RETURN(AudioClip clip, DecodeAudioFile(path));
  EncodedAudio out;
  out.n_samples = static_cast<int64_t>(clip.samples.size());
  auto f = model::ExtractAudioFeatures(clip.samples);
  if (!f.ok()) return f.status().WithContext(path);
  out.features = std::move(*f);
  RETURN_IF_ERROR(audio.Encode(out.features, engine.mode(), engine.pool(), &out.soft).WithContext(path));
  out.n_soft = model::Gemma4Audio::n_soft(out.features.n_valid);
  return out;
}

Result<model::AudioFeatures> ReadAudioFeatures(const std::string& path) {
  ASSIGN_OR_RETURN(NpyArray a, ReadNpy(path));
  if (a.shape.size() != 2 || a.shape[0] <= 0 || a.shape[1] <= 0) {
    return InvalidArgument(path + ": features must be a float32 [n_frames, n_mels] array");
  }
  model::AudioFeatures f;
  f.n_frames = a.shape[0];
  f.n_mels = a.shape[1];
  for (int64_t r = 0; r < f.n_frames; ++r) {
    for (int64_t m = 0; m < f.n_mels; ++m) {
      if (a.data[r * f.n_mels + m] != 0.0f) {
        f.n_valid = r + 1;
        break;
      }
    }
  }
  if (f.n_valid == 0) return InvalidArgument(path + ": every feature frame is 0 (no valid frame)");
  f.mel = std::move(a.data);
  return f;
}

}  // namespace gemlet::cli
