#include "format/image_decode.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/mapped_file.h"

#if GEMLET_HAVE_WEBP
#include <webp/encode.h>
#endif

namespace gemlet {
namespace image_decode_test {

#ifdef GEMLET_SHARED_DIR
const std::string kVision = std::string(GEMLET_SHARED_DIR) + "/oracle/tiny-e2b-vision/";
#endif

std::vector<uint8_t> ReadBytes(const std::string& path) {
  auto s = ReadFileToString(path);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::vector<uint8_t>(s->begin(), s->end()) : std::vector<uint8_t>{};
}

uint32_t Crc32(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

void PutBe32(std::vector<uint8_t>* v, uint32_t x) {
  for (int s = 24; s >= 0; s -= 8) v->push_back(static_cast<uint8_t>(x >> s));
}

// A PNG signature and an IHDR chunk (valid CRC) declaring w×h, 8-bit RGB; no image data.
std::vector<uint8_t> PngHeader(uint32_t w, uint32_t h) {
  std::vector<uint8_t> v = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  PutBe32(&v, 13);
  const size_t type_at = v.size();
  for (char c : std::string("IHDR")) v.push_back(static_cast<uint8_t>(c));
  PutBe32(&v, w);
  PutBe32(&v, h);
  for (uint8_t b : {8, 2, 0, 0, 0}) v.push_back(b);
  PutBe32(&v, Crc32(v.data() + type_at, 17));
  return v;
}

void ExpectError(const std::vector<uint8_t>& bytes, const std::string& needle) {
  auto r = DecodeImage(bytes.data(), bytes.size(), "test-image");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("test-image"), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().ToString();
}

TEST(ImageDecode, Sniff) {
  const uint8_t jpg[] = {0xFF, 0xD8, 0xFF, 0xE0};
  EXPECT_STREQ(SniffImageFormat(jpg, 4), "jpeg");
  const std::vector<uint8_t> png = PngHeader(1, 1);
  EXPECT_STREQ(SniffImageFormat(png.data(), png.size()), "png");
  const char webp[] = "RIFF\0\0\0\0WEBPVP8 ";
  EXPECT_STREQ(SniffImageFormat(reinterpret_cast<const uint8_t*>(webp), 16), "webp");
  EXPECT_STREQ(SniffImageFormat(jpg, 2), "");
}

TEST(ImageDecode, RandomBytesAndEmptyAreRefused) {
  std::mt19937 rng(7);
  std::vector<uint8_t> junk(4096);
  for (auto& b : junk) b = static_cast<uint8_t>(rng());
  junk[0] = 'x';
  ExpectError(junk, "not a JPEG, PNG or WebP");
  ExpectError({}, "not a JPEG, PNG or WebP");
}

#if GEMLET_HAVE_PNG
TEST(ImageDecode, PngDeclaredSizesAreCheckedBeforeDecoding) {
  ExpectError(PngHeader(100000, 100000), "over the budget");
  ExpectError(PngHeader(0, 0), "empty image (0×0)");
  // Within the budget the header passes and the missing data is reported as truncation.
  ExpectError(PngHeader(64, 64), "truncated");
  // A custom budget.
  const auto hdr = PngHeader(100, 100);
  ImageDecodeOptions o;
  o.max_pixels = 9999;
  auto r = DecodeImage(hdr.data(), hdr.size(), "small-budget", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kOutOfRange) << r.status().ToString();
}

TEST(ImageDecode, PngBrokenCrcAndTruncation) {
  std::vector<uint8_t> png = ReadBytes(kVision + "image-B.png");
  ASSERT_GT(png.size(), 100u);
  auto ok = DecodeImage(png.data(), png.size(), "image-B.png");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->width, 100);
  EXPECT_EQ(ok->height, 75);
  std::vector<uint8_t> bad = png;
  bad[8 + 8 + 13] ^= 0x01;  // IHDR's CRC
  ExpectError(bad, "CRC");
  std::vector<uint8_t> bad_data = png;
  bad_data[bad_data.size() / 2] ^= 0x55;  // inside IDAT: its CRC no longer matches
  ExpectError(bad_data, "corrupt or truncated PNG");
  std::vector<uint8_t> cut(png.begin(), png.begin() + png.size() / 2);
  ExpectError(cut, "corrupt or truncated PNG");
}
#endif

#if GEMLET_HAVE_JPEG
TEST(ImageDecode, JpegDecodesAndTruncationIsAnError) {
  std::vector<uint8_t> jpg = ReadBytes(kVision + "image-B.jpg");
  auto ok = DecodeImage(jpg.data(), jpg.size(), "image-B.jpg");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->width, 100);
  EXPECT_EQ(ok->height, 75);
  EXPECT_EQ(ok->pixels.size(), 100u * 75 * 3);
  std::vector<uint8_t> cut(jpg.begin(), jpg.begin() + jpg.size() * 2 / 3);
  ExpectError(cut, "corrupt or truncated JPEG");
  std::vector<uint8_t> head(jpg.begin(), jpg.begin() + 40);
  ExpectError(head, "corrupt or truncated JPEG");
}
#endif

#if GEMLET_HAVE_WEBP
TEST(ImageDecode, WebpLosslessRoundTrip) {
  const int w = 5, h = 3;
  std::vector<uint8_t> rgb(w * h * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 37 + 11);
  uint8_t* enc = nullptr;
  const size_t n = WebPEncodeLosslessRGB(rgb.data(), w, h, w * 3, &enc);
  ASSERT_GT(n, 0u);
  std::vector<uint8_t> file(enc, enc + n);
  WebPFree(enc);
  auto img = DecodeImage(file.data(), file.size(), "tiny.webp");
  ASSERT_TRUE(img.ok()) << img.status().ToString();
  EXPECT_EQ(img->width, w);
  EXPECT_EQ(img->height, h);
  EXPECT_EQ(img->pixels, rgb);
  std::vector<uint8_t> cut(file.begin(), file.begin() + file.size() - 4);
  ExpectError(cut, "WebP");
}
#endif

// An EXIF TIFF block (after "Exif\0\0") holding one orientation entry.
std::vector<uint8_t> ExifBlock(bool le, uint16_t orientation) {
  std::vector<uint8_t> v;
  auto u16 = [&](uint16_t x) {
    if (le) {
      v.push_back(x & 0xFF), v.push_back(x >> 8);
    } else {
      v.push_back(x >> 8), v.push_back(x & 0xFF);
    }
  };
  auto u32 = [&](uint32_t x) {
    u16(le ? x & 0xFFFF : x >> 16);
    u16(le ? x >> 16 : x & 0xFFFF);
  };
  v.push_back(le ? 'I' : 'M');
  v.push_back(le ? 'I' : 'M');
  u16(42);
  u32(8);
  u16(2);                                        // two entries
  u16(0x010F), u16(2), u32(4), u32(0);           // Make (ignored)
  u16(0x0112), u16(3), u32(1), u16(orientation), u16(0);
  u32(0);
  return v;
}

TEST(ImageDecode, ExifOrientationParser) {
  for (bool le : {true, false}) {
    for (uint16_t o = 1; o <= 8; ++o) {
      const auto b = ExifBlock(le, o);
      EXPECT_EQ(ExifOrientation(b.data(), b.size()), o) << le;
    }
    const auto b = ExifBlock(le, 9);
    EXPECT_EQ(ExifOrientation(b.data(), b.size()), 1);
    for (size_t n = 0; n < ExifBlock(le, 6).size() - 6; ++n) {  // every cut: no read past the end
      auto c = ExifBlock(le, 6);
      c.resize(n);
      EXPECT_EQ(ExifOrientation(c.data(), c.size()), 1) << n;
    }
  }
}

TEST(ImageDecode, ExifOrientationTransforms) {
  // 3 wide, 2 high; pixel value = 10·row + column in every channel.
  RgbImage base;
  base.height = 2;
  base.width = 3;
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x)
      for (int c = 0; c < 3; ++c) base.pixels.push_back(static_cast<uint8_t>(10 * y + x));
  auto grid = [](const RgbImage& im) {
    std::vector<int> g;
    for (int64_t i = 0; i < im.height * im.width; ++i) g.push_back(im.pixels[i * 3]);
    return g;
  };
  // Pillow's ImageOps.exif_transpose of the same 3×2 image.
  const std::vector<std::vector<int>> want = {
      {},
      {0, 1, 2, 10, 11, 12},
      {2, 1, 0, 12, 11, 10},
      {12, 11, 10, 2, 1, 0},
      {10, 11, 12, 0, 1, 2},
      {0, 10, 1, 11, 2, 12},
      {10, 0, 11, 1, 12, 2},
      {12, 2, 11, 1, 10, 0},
      {2, 12, 1, 11, 0, 10},
  };
  for (int o = 1; o <= 8; ++o) {
    RgbImage im = base;
    ApplyExifOrientation(o, &im);
    EXPECT_EQ(grid(im), want[o]) << "orientation " << o;
    EXPECT_EQ(im.height, o >= 5 ? 3 : 2);
  }
}

}  // namespace image_decode_test
}  // namespace gemlet
