#include "model/gemma4_image.h"

#include <algorithm>
#include <cmath>

#include "ops/image_resize.h"

namespace gemlet::model {

const int64_t kImageTokenBudgets[5] = {70, 140, 280, 560, 1120};

bool IsSupportedImageTokenBudget(int64_t b) {
  return std::find(std::begin(kImageTokenBudgets), std::end(kImageTokenBudgets), b) != std::end(kImageTokenBudgets);
}

ImageSize VisionTargetSize(int64_t H, int64_t W, int64_t budget, const Gemma4VisionConfig& cfg) {
  const int64_t k = cfg.pooling_kernel_size, p = cfg.patch_size, m = cfg.pixel_multiple();
  const double max_patches = static_cast<double>(budget * k * k);
  const double factor = std::sqrt(max_patches * static_cast<double>(p * p) / (static_cast<double>(H) * W));
  ImageSize s;
  s.height = static_cast<int64_t>(std::floor(factor * H / m)) * m;
  s.width = static_cast<int64_t>(std::floor(factor * W / m)) * m;
  const int64_t cap = budget * m;  // (max_patches / k²)·m
  if (s.height == 0 && s.width == 0) {
    s.height = s.width = m;
  } else if (s.height == 0) {
    s.height = m;
    s.width = std::min((W / H) * m, cap);
  } else if (s.width == 0) {
    s.width = m;
    s.height = std::min((H / W) * m, cap);
  }
  return s;
}

RgbImage ResizeForVision(const RgbImage& image, int64_t budget, const Gemma4VisionConfig& cfg) {
  const ImageSize s = VisionTargetSize(image.height, image.width, budget, cfg);
  if (s.height == image.height && s.width == image.width) return image;
  RgbImage out;
  out.height = s.height;
  out.width = s.width;
  out.pixels.resize(static_cast<size_t>(s.height * s.width * 3));
  ops::ResizeBicubicAntialias(image.pixels.data(), image.height, image.width, 3, s.height, s.width,
                              out.pixels.data());
  return out;
}

Result<VisionInput> Patchify(const RgbImage& img, const Gemma4VisionConfig& cfg) {
  const int64_t p = cfg.patch_size, m = cfg.pixel_multiple();
  if (img.height <= 0 || img.width <= 0 || img.height % m != 0 || img.width % m != 0) {
    return InvalidArgument("image of " + std::to_string(img.width) + "×" + std::to_string(img.height) +
                           " pixels: taken at its own size, both sides must be positive multiples of " +
                           std::to_string(m));
  }
  VisionInput in;
  in.grid_h = img.height / p;
  in.grid_w = img.width / p;
  if (in.grid_h > cfg.position_embedding_size || in.grid_w > cfg.position_embedding_size) {
    return InvalidArgument("image of " + std::to_string(img.width) + "×" + std::to_string(img.height) +
                           " pixels has more patches per side than the position table's " +
                           std::to_string(cfg.position_embedding_size));
  }
  const int64_t P = cfg.patch_dim();
  in.patches.resize(static_cast<size_t>(in.n_patches() * P));
  for (int64_t r = 0; r < in.grid_h; ++r) {
    for (int64_t c = 0; c < in.grid_w; ++c) {
      float* out = in.patches.data() + (r * in.grid_w + c) * P;
      for (int64_t y = 0; y < p; ++y) {
        const uint8_t* src = img.pixels.data() + ((r * p + y) * img.width + c * p) * 3;
        for (int64_t i = 0; i < p * 3; ++i) out[y * p * 3 + i] = static_cast<float>(src[i] / 255.0);
      }
    }
  }
  return in;
}

Result<VisionInput> PreprocessImage(const RgbImage& image, int64_t budget, bool resize,
                                    const Gemma4VisionConfig& cfg) {
  if (!resize) return Patchify(image, cfg);
  if (!IsSupportedImageTokenBudget(budget)) {
    return InvalidArgument("image token budget " + std::to_string(budget) + " is not one of 70, 140, 280, 560, 1120");
  }
  return Patchify(ResizeForVision(image, budget, cfg), cfg);
}

}  // namespace gemlet::model
