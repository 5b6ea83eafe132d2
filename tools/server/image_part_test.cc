#include "tools/server/image_part.h"

#include <gtest/gtest.h>

namespace gemlet::server {
namespace image_part_test {

std::string Err(const Result<std::vector<uint8_t>>& r) { return r.ok() ? "" : r.status().message(); }

TEST(ImagePart, DataUrlBase64) {
  auto r = ImageFromUrl("data:image/png;base64,iVBORw0KGgo=", "messages[0].content[1].image_url.url");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, (std::vector<uint8_t>{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}));
  auto bare = ImageFromBase64("/9j/4A", "", "images[0]");  // no padding (Ollama clients vary)
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(*bare, (std::vector<uint8_t>{0xff, 0xd8, 0xff, 0xe0}));
  EXPECT_TRUE(ImageFromUrl("DATA:Image/JPEG;base64,/9j/4A==", "p").ok());
}

TEST(ImagePart, ErrorsNameThePart) {
  const std::string part = "messages[0].content[2].image_url.url";
  for (const char* url : {"https://example.com/cat.png", "http://10.0.0.1/x.jpg", "file:///etc/passwd",
                          "data:text/plain;base64,aGVsbG8=", "data:image/png,rawbytes", "data:image/png;base64,",
                          "data:image/png;base64,a$b=", "data:image/png;base64,QQ=x", "data:image/png;base64,Q",
                          "data:image/png;base64"}) {
    auto r = ImageFromUrl(url, part);
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << url;
    EXPECT_NE(Err(r).find(part), std::string::npos) << url << ": " << Err(r);
  }
  EXPECT_NE(Err(ImageFromUrl("data:text/plain;base64,aGVsbG8=", part)).find("text/plain"), std::string::npos);
  EXPECT_NE(Err(ImageFromUrl("https://example.com/a.png", part)).find("not fetched"), std::string::npos);
  EXPECT_FALSE(ImageFromBase64("aGVsbG8=", "application/pdf", "source").ok());
  ImageLimits small;
  small.max_bytes = 4;
  EXPECT_NE(Err(ImageFromBase64("aGVsbG8=", "", "images[1]", small)).find("limit"), std::string::npos);
}

}  // namespace image_part_test
}  // namespace gemlet::server
