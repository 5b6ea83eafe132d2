// Images on the command line: decode a file, preprocess it for the model's vision tower and
// encode it into soft tokens (shared by `encode-image` and `logits --image`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/gemma4_vision.h"
#include "runtime/engine.h"

namespace gemlet::cli {

struct ImageFlags {
  int64_t tokens = 280;  // --image-tokens: 70, 140, 280, 560 or 1120
  bool resize = true;    // false with --no-resize: the image at its own size (sides multiples of 48)
};

struct EncodedImage {
  std::vector<float> soft;  // [n_soft, D]
  int64_t n_soft = 0;
  int64_t height = 0, width = 0;  // the size the tower saw
};

// Decodes `path` (JPEG/PNG/WebP), preprocesses and encodes it with `vision` on the engine's
// threads and mode. Errors name the file.
Result<EncodedImage> EncodeImageFile(const runtime::Engine& engine, const model::Gemma4Vision& vision,
                                     const std::string& path, const ImageFlags& flags);

}  // namespace gemlet::cli
