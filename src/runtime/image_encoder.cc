#include "runtime/image_encoder.h"

#include "model/gemma4_image.h"

namespace gemlet::runtime {

Result<std::unique_ptr<ImageEncoder>> ImageEncoder::Create(const Engine& engine, const ImageEncoderOptions& options) {
  if (!model::IsSupportedImageTokenBudget(options.tokens)) {
    return InvalidArgument("the image token budget must be 70, 140, 280, 560 or 1120, got " +
                           std::to_string(options.tokens));
  }
  return std::unique_ptr<ImageEncoder>(new ImageEncoder(engine, options));
}

bool ImageEncoder::available() const { return model::Gemma4Vision::Present(engine_.file()); }

MediaTokens ImageTokens(const Engine& engine) {
  if (!model::Gemma4Vision::Present(engine.file())) return {};
  auto cfg = model::Gemma4VisionConfig::FromJson(engine.file().metadata()["vision"]);
  if (!cfg.ok()) return {};
  return MediaTokens{static_cast<int32_t>(cfg->boi_token_id), static_cast<int32_t>(cfg->image_token_id),
                     static_cast<int32_t>(cfg->eoi_token_id)};
}

Result<const model::Gemma4Vision*> ImageEncoder::Tower() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!vision_) {
    if (!available()) return Unsupported("this model has no vision tower: it reads text only");
    ASSIGN_OR_RETURN(vision_, model::Gemma4Vision::Bind(engine_.file()));
  }
  return vision_.get();
}

Result<MediaRef> ImageEncoder::Encode(std::span<const uint8_t> bytes, const std::string& name) {
  ASSIGN_OR_RETURN(const model::Gemma4Vision* vision, Tower());
  const int64_t opts[2] = {options_.tokens, options_.resize ? 1 : 0};
  const uint64_t hash = HashBytes(opts, sizeof(opts), HashBytes(bytes.data(), bytes.size()));
  if (MediaRef hit = cache_.Find(hash, bytes)) return hit;
  ASSIGN_OR_RETURN(RgbImage img, DecodeImage(bytes.data(), bytes.size(), name, options_.decode));
  auto in = model::PreprocessImage(img, options_.tokens, options_.resize, vision->config());
  if (!in.ok()) return in.status().WithContext(name);
  auto m = std::make_shared<MediaEmbedding>();
  m->kind = MediaKind::kImage;
  m->dim = vision->config().text_hidden_size;
  m->hash = hash;
  RETURN_IF_ERROR(vision->Encode(*in, engine_.mode(), engine_.pool(), &m->data).WithContext(name));
  m->rows = vision->n_soft(*in);
  GEMLET_CHECK(static_cast<int64_t>(m->data.size()) == m->rows * m->dim);
  encodes_.fetch_add(1);
  MediaRef ref = std::move(m);
  cache_.Insert(bytes, ref);
  return ref;
}

Result<MediaRef> ImageEncoder::EncodeFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadMediaFile(path, "image file"));
  return Encode(bytes, path);
}

}  // namespace gemlet::runtime
