// Gemma 4's image preprocessing (HF Gemma4ImageProcessor, torchvision backend; spec-multimodal
// §1.2, ../shared/oracle/tiny-e2b-vision/README.md "HF conventions" 2–5): the aspect-ratio
// preserving target size for a soft-token budget, the bicubic antialias resize
// (ops/image_resize.h), rescaling and row-major patches.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "format/image_decode.h"
#include "model/gemma4_vision_tensors.h"

namespace gemlet::model {

// The processor's soft-token budgets (_SUPPORTED_SOFT_TOKENS); the default is 280.
bool IsSupportedImageTokenBudget(int64_t budget);
extern const int64_t kImageTokenBudgets[5];  // 70, 140, 280, 560, 1120

// get_aspect_ratio_preserving_size: max_patches = budget·k², factor = √(max_patches·p²/(H·W)),
// H' = ⌊factor·H/(p·k)⌋·(p·k), W' likewise; a side that rounds to 0 becomes p·k and the other
// min(⌊long/short⌋·p·k, budget·p·k). Returns {H', W'}.
struct ImageSize {
  int64_t height = 0;
  int64_t width = 0;
};
ImageSize VisionTargetSize(int64_t height, int64_t width, int64_t budget, const Gemma4VisionConfig& cfg);

// The tower's input: the patches of one image.
struct VisionInput {
  int64_t grid_h = 0, grid_w = 0;  // patches per column / row (multiples of k)
  // [grid_h·grid_w, p·p·3]: patch (row r, column c) at index r·grid_w + c, flattened as
  // (row, column, channel), channel fastest; values u8/255 (HF rescale, no mean/std).
  std::vector<float> patches;
  int64_t n_patches() const { return grid_h * grid_w; }
};

// The image resized to VisionTargetSize (a copy when it already has that size).
RgbImage ResizeForVision(const RgbImage& image, int64_t budget, const Gemma4VisionConfig& cfg);

// Patches of an image whose sides are multiples of p·k (an error naming the sides otherwise,
// and for a grid side beyond the position table).
Result<VisionInput> Patchify(const RgbImage& image, const Gemma4VisionConfig& cfg);

// ResizeForVision then Patchify; with resize = false the image is taken at its own size.
Result<VisionInput> PreprocessImage(const RgbImage& image, int64_t budget, bool resize,
                                    const Gemma4VisionConfig& cfg);

}  // namespace gemlet::model
