// libFuzzer target: the image decoders (format/image_decode.h, DecodeImage: JPEG, PNG, WebP by
// signature) and the EXIF orientation parser on arbitrary bytes, and the same bytes as a
// request's image part (tools/server/image_part.h: a data: URL, bare base64), whose decoded
// bytes go to the decoders too. Nothing may crash, leak or
// read outside the input; an accepted image has positive sides within the pixel budget and
// exactly height·width·3 bytes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "format/image_decode.h"
#include "tools/server/image_part.h"

namespace {

void Require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "image_decode_fuzz: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> buf(data, data + size);  // the exact extent, for ASan
  const int o = gemlet::ExifOrientation(buf.data(), buf.size());
  Require(o >= 1 && o <= 8, "orientation out of range");
  gemlet::ImageDecodeOptions opt;
  opt.max_pixels = 1 << 22;  // 4 MP: keeps the fuzzer's memory bounded
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (auto part : {gemlet::server::ImageFromUrl(text, "fuzz"), gemlet::server::ImageFromBase64(text, "", "fuzz")}) {
    if (!part.ok()) {
      Require(part.status().message().find("fuzz") != std::string::npos, "an image part error not naming the part");
      continue;
    }
    Require(!part->empty() && part->size() <= size, "decoded base64 longer than its text");
    (void)gemlet::DecodeImage(part->data(), part->size(), "fuzz part", opt);
  }
  auto img = gemlet::DecodeImage(buf.data(), buf.size(), "fuzz", opt);
  if (!img.ok()) {
    Require(!img.status().message().empty(), "an error without a message");
    return 0;
  }
  Require(img->height > 0 && img->width > 0, "an accepted image is empty");
  Require(img->height * img->width <= opt.max_pixels, "an accepted image is over the budget");
  Require(img->pixels.size() == static_cast<size_t>(img->height * img->width * 3), "pixel buffer size");
  return 0;
}
