// ImageEncoder: image files or bytes to soft tokens (MediaEmbedding, runtime/media.h) for one
// engine — decoded by format/image_decode, preprocessed by model/gemma4_image as HF's
// processor does for the soft-token budget, encoded by the vision tower (model/gemma4_vision),
// which is bound on the first image, so a text-only run never touches the tower's pages.
// Results are kept in a MediaCache (runtime/media_cache.h), so a second turn, or a second
// request, about the same image does not run the tower again. Thread-safe: concurrent requests may
// share one encoder (the tower runs on the engine's pool, which serializes its callers).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/image_decode.h"
#include "model/gemma4_vision.h"
#include "runtime/engine.h"
#include "runtime/media.h"
#include "runtime/media_cache.h"

namespace gemlet::runtime {

struct ImageEncoderOptions {
  int64_t tokens = 280;  // soft-token budget: 70, 140, 280, 560 or 1120 (--image-tokens)
  bool resize = true;    // false: the image at its own size (sides multiples of 48; --no-resize)
  size_t cache_entries = 16;  // encoded images kept (0: none)
  ImageDecodeOptions decode;  // the pixel budget
};

// The image placeholder ids (boi, image, eoi) of the engine's vision config; {-1, -1, -1} if
// the model has no vision tower.
MediaTokens ImageTokens(const Engine& engine);

class ImageEncoder {
 public:
  // `engine` must outlive the encoder. InvalidArgument for an unsupported budget.
  static Result<std::unique_ptr<ImageEncoder>> Create(const Engine& engine, const ImageEncoderOptions& options = {});

  // True if the model file has a vision tower (nothing is bound by asking).
  bool available() const;
  // The soft tokens of an image file's bytes; `name` names it in errors ("image 2", a path).
  // Unsupported if the model has no vision tower.
  Result<MediaRef> Encode(std::span<const uint8_t> bytes, const std::string& name);
  Result<MediaRef> EncodeFile(const std::string& path);

  const ImageEncoderOptions& options() const { return options_; }
  // True once the tower is bound (the first image; a text-only run never binds it).
  bool bound() const {
    std::lock_guard<std::mutex> lock(mu_);
    return vision_ != nullptr;
  }
  // Images the tower encoded so far (cache misses).
  int64_t encodes() const { return encodes_.load(); }

 private:
  ImageEncoder(const Engine& engine, const ImageEncoderOptions& options)
      : engine_(engine), options_(options), cache_(options.cache_entries) {}
  Result<const model::Gemma4Vision*> Tower();

  const Engine& engine_;
  ImageEncoderOptions options_;
  mutable std::mutex mu_;  // guards vision_
  std::unique_ptr<model::Gemma4Vision> vision_;
  MediaCache cache_;
  std::atomic<int64_t> encodes_{0};
};

}  // namespace gemlet::runtime
