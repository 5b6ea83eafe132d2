#include "tools/server/multipart_form.h"

#include <gtest/gtest.h>

namespace gemlet::server {
namespace multipart_form_test {

TEST(MultipartForm, Boundary) {
  EXPECT_EQ(*MultipartBoundary("multipart/form-data; boundary=abc123"), "abc123");
  EXPECT_EQ(*MultipartBoundary("Multipart/Form-Data;boundary=\"a b;c\""), "a b;c");
  EXPECT_EQ(*MultipartBoundary("multipart/form-data; charset=utf-8; boundary=----x"), "----x");
  EXPECT_FALSE(MultipartBoundary("application/json").ok());
  EXPECT_FALSE(MultipartBoundary("multipart/form-data").ok());
}

TEST(MultipartForm, FieldsAndFile) {
  using namespace std::string_literals;  // the file's bytes hold a NUL: the literal must keep it
  const std::string body =
      "preamble\r\n"
      "--XyZ\r\n"
      "Content-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n"
      "Content-Type: audio/wav\r\n\r\n"
      "RIFF\r\n--Xy\0bytes\r\n"
      "--XyZ\r\n"
      "content-disposition: form-data; name=model\r\n\r\n"
      "gemma\r\n"
      "--XyZ\r\n"
      "Content-Disposition: form-data; name=\"response_format\"\r\n\r\n"
      "srt\r\n"
      "--XyZ--\r\n"s;
  auto f = ParseMultipartForm(std::string_view(body.data(), body.size()), "XyZ");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->parts.size(), 3u);
  EXPECT_EQ(f->parts[0].name, "file");
  EXPECT_EQ(f->parts[0].filename, "a.wav");
  EXPECT_EQ(f->parts[0].content_type, "audio/wav");
  EXPECT_EQ(f->parts[0].data, std::string_view("RIFF\r\n--Xy\0bytes", 16));
  EXPECT_EQ(f->Find("model")->data, "gemma");
  EXPECT_EQ(f->Find("response_format")->data, "srt");
  EXPECT_EQ(f->Find("language"), nullptr);
}

TEST(MultipartForm, MalformedBodiesAreErrors) {
  for (const std::string body : {"", "no boundary here", "--b\r\nContent-Disposition: form-data; name=x\r\n",
                                 "--b\r\nContent-Disposition: form-data; name=x\r\n\r\nvalue without end",
                                 "--bjunk"}) {
    auto f = ParseMultipartForm(body, "b");
    EXPECT_FALSE(f.ok()) << body;
  }
  std::string many;
  for (int i = 0; i < 5; ++i) many += "--b\r\nContent-Disposition: form-data; name=x\r\n\r\nv\r\n";
  many += "--b--";
  EXPECT_TRUE(ParseMultipartForm(many, "b").ok());
  auto f = ParseMultipartForm(many, "b", 4);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("more than 4 parts"), std::string::npos);
}

}  // namespace multipart_form_test
}  // namespace gemlet::server
