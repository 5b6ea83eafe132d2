#include "runtime/audio_encoder.h"

#include "model/gemma4_audio_features.h"
#include "runtime/image_encoder.h"

namespace gemlet::runtime {

MediaTokens AudioTokens(const Engine& engine) {
  if (!model::Gemma4Audio::Present(engine.file())) return {};
  auto cfg = model::Gemma4AudioConfig::FromJson(engine.file().metadata()["audio"]);
  if (!cfg.ok()) return {};
  return MediaTokens{static_cast<int32_t>(cfg->boa_token_id), static_cast<int32_t>(cfg->audio_token_id),
                     static_cast<int32_t>(cfg->eoa_token_id)};
}

std::vector<MediaTokens> MediaKindTokens(const Engine& engine) {
  std::vector<MediaTokens> kinds(2);
  kinds[static_cast<size_t>(MediaKind::kImage)] = ImageTokens(engine);
  kinds[static_cast<size_t>(MediaKind::kAudio)] = AudioTokens(engine);
  return kinds;
}

std::unique_ptr<AudioEncoder> AudioEncoder::Create(const Engine& engine, const AudioEncoderOptions& options) {
  return std::unique_ptr<AudioEncoder>(new AudioEncoder(engine, options));
}

bool AudioEncoder::available() const { return model::Gemma4Audio::Present(engine_.file()); }

Result<const model::Gemma4Audio*> AudioEncoder::Tower() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!audio_) {
    if (!available()) return Unsupported("this model has no audio tower: it reads no audio");
    ASSIGN_OR_RETURN(audio_, model::Gemma4Audio::Bind(engine_.file()));
  }
  return audio_.get();
}

Result<AudioClip> AudioEncoder::Decode(std::span<const uint8_t> bytes, const std::string& name) const {
  return DecodeAudio(bytes.data(), bytes.size(), name, options_.decode);
}

Result<MediaRef> AudioEncoder::Encode(std::span<const uint8_t> bytes, const std::string& name) {
  ASSIGN_OR_RETURN(const model::Gemma4Audio* audio, Tower());
  (void)audio;
  const uint64_t hash = HashBytes("audio", 5, HashBytes(bytes.data(), bytes.size()));
  if (MediaRef hit = cache_.Find(hash, bytes)) return hit;
  ASSIGN_OR_RETURN(AudioClip clip, Decode(bytes, name));
  ASSIGN_OR_RETURN(MediaRef ref, EncodeSamples(clip.samples, hash, name));
  cache_.Insert(bytes, ref);
  return ref;
}

Result<MediaRef> AudioEncoder::EncodeSamples(std::span<const float> samples, uint64_t hash, const std::string& name) {
  ASSIGN_OR_RETURN(const model::Gemma4Audio* audio, Tower());
  const size_t n = std::min<size_t>(samples.size(), model::kAudioMaxSamples);
  auto f = model::ExtractAudioFeatures(std::vector<float>(samples.begin(), samples.begin() + n));
  if (!f.ok()) return f.status().WithContext(name);
  auto m = std::make_shared<MediaEmbedding>();
  m->kind = MediaKind::kAudio;
  m->dim = audio->config().text_hidden_size;
  m->hash = hash;
  RETURN_IF_ERROR(audio->Encode(*f, engine_.mode(), engine_.pool(), &m->data).WithContext(name));
  m->rows = model::Gemma4Audio::n_soft(f->n_valid);
  GEMLET_CHECK(static_cast<int64_t>(m->data.size()) == m->rows * m->dim);
  encodes_.fetch_add(1);
  return MediaRef(std::move(m));
}

Result<MediaRef> AudioEncoder::EncodeFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadMediaFile(path, "audio file"));
  return Encode(bytes, path);
}

}  // namespace gemlet::runtime
