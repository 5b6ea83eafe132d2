#include "tools/server/audio_part.h"

#include <gtest/gtest.h>

#include "tools/server/base64.h"

namespace gemlet::server {
namespace audio_part_test {

std::string Err(const Result<std::vector<uint8_t>>& r) { return r.ok() ? "" : r.status().message(); }

TEST(AudioPart, BareBase64AndDataUrl) {
  const std::vector<uint8_t> riff = {'R', 'I', 'F', 'F'};
  auto bare = AudioFromBase64("UklGRg==", "wav", "messages[0].content[1].input_audio");
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(*bare, riff);
  auto url = AudioFromBase64("data:audio/wav;base64,UklGRg", "", "p");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(*url, riff);
  for (const char* f : {"mp3", "flac", "ogg", "opus"}) EXPECT_TRUE(AudioFromBase64("UklGRg==", f, "p").ok()) << f;
}

TEST(AudioPart, ErrorsNameThePart) {
  const std::string part = "messages[0].content[1].input_audio";
  struct Case {
    std::string data, format, says;
  } cases[] = {
      {"UklGRg==", "aac", part + ".format"},
      {"", "wav", part + ".data' holds no audio"},
      {"Ukl$Rg==", "wav", part + ".data' is not valid base64"},
      {"UklGR", "wav", "its length"},
      {"data:image/png;base64,UklGRg==", "", "media type 'image/png'"},
      {"data:audio/wav,raw", "", "base64 data: URL"},
  };
  for (const Case& c : cases) {
    auto r = AudioFromBase64(c.data, c.format, part);
    ASSERT_FALSE(r.ok()) << c.data;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(Err(r).find(c.says), std::string::npos) << c.data << ": " << Err(r);
  }
  AudioLimits small;
  small.max_bytes = 3;
  EXPECT_NE(Err(AudioFromBase64("UklGRg==", "wav", part, small)).find("audio limit of 3 bytes"), std::string::npos);
}

TEST(Base64, MediaTypes) {
  EXPECT_TRUE(IsMediaType("audio/wav", "audio"));
  EXPECT_TRUE(IsMediaType("Image/PNG", "image"));
  EXPECT_FALSE(IsMediaType("audio/", "audio"));
  EXPECT_FALSE(IsMediaType("audiox/wav", "audio"));
  EXPECT_FALSE(IsMediaType("image/png", "audio"));
  std::string_view type;
  auto p = DataUrlPayload("data:audio/mpeg;codecs=mp3;base64,QUJD", "audio", "x", &type);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, "QUJD");
  EXPECT_EQ(type, "audio/mpeg");
}

}  // namespace audio_part_test
}  // namespace gemlet::server
