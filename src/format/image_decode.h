// Decoding image files (JPEG, PNG, WebP) into 8-bit RGB with Debian's libraries (libjpeg-turbo,
// libpng, libwebp), as Pillow's `Image.open(f).convert("RGB")` does for the same file: alpha
// dropped (not composited), grey and palette expanded, 16-bit samples cut to their high byte,
// JPEG EXIF orientation applied (transformers' load_image calls ImageOps.exif_transpose).
//
// Images come from outside (files, requests), so every failure is a Status that names the
// input: an unknown format, a truncated or corrupt stream, a 0×0 image, or a declared size over
// the pixel budget, which is refused from the header before any pixel is decoded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace gemlet {

struct RgbImage {
  int64_t height = 0;
  int64_t width = 0;
  std::vector<uint8_t> pixels;  // [height, width, 3], row-major, channel fastest
};

struct ImageDecodeOptions {
  int64_t max_pixels = 50'000'000;  // width·height above this is refused before decoding
  bool apply_exif_orientation = true;
};

// The container a buffer holds, from its magic bytes: "jpeg", "png", "webp", or "" if unknown.
const char* SniffImageFormat(const uint8_t* data, size_t size);

// Decodes an in-memory file; `name` names it in errors (a path, "request part 2").
Result<RgbImage> DecodeImage(const uint8_t* data, size_t size, const std::string& name,
                             const ImageDecodeOptions& options = {});
Result<RgbImage> DecodeImageFile(const std::string& path, const ImageDecodeOptions& options = {});

// The EXIF orientation (1–8) of a JPEG APP1 "Exif\0\0" payload (TIFF header onwards after the
// six-byte prefix); 1 when absent or unreadable (a broken EXIF block is ignored, as Pillow does).
int ExifOrientation(const uint8_t* app1, size_t size);
// Applies EXIF orientation `o` (2–8; 1 is the identity) to `img` in place.
void ApplyExifOrientation(int o, RgbImage* img);

}  // namespace gemlet
