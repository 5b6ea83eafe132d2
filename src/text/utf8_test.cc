#include "text/utf8.h"

#include <gtest/gtest.h>

namespace gemlet::utf8 {
namespace utf8_test {

TEST(Utf8, DecodeCharAcceptsExactlyTheValidForms) {
  uint32_t cp = 0;
  EXPECT_EQ(DecodeChar("A", 0, &cp), 1);
  EXPECT_EQ(cp, 0x41u);
  EXPECT_EQ(DecodeChar("\xC3\xA9", 0, &cp), 2);
  EXPECT_EQ(cp, 0xE9u);
  EXPECT_EQ(DecodeChar("\xE2\x96\x81", 0, &cp), 3);
  EXPECT_EQ(cp, 0x2581u);
  EXPECT_EQ(DecodeChar("\xF0\x9F\x99\x82", 0, &cp), 4);
  EXPECT_EQ(cp, 0x1F642u);
  EXPECT_EQ(DecodeChar("\xF4\x8F\xBF\xBF", 0, &cp), 4);  // U+10FFFF
  EXPECT_EQ(DecodeChar("\xEF\xBB\xBF", 0, &cp), 3);      // BOM is a character
  // Invalid: continuation, overlong, surrogate, > U+10FFFF, truncated, bad continuation.
  for (const char* bad : {"\x80", "\xC0\xAF", "\xC1\xBF", "\xE0\x80\xAF", "\xED\xA0\x80",
                          "\xF0\x80\x80\xAF", "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xFF",
                          "\xC3", "\xE2\x96", "\xF0\x9F\x99", "\xC3(", "\xE2\x28\xA1"}) {
    EXPECT_EQ(DecodeChar(bad, 0, &cp), 0) << "bytes " << bad;
  }
}

TEST(Utf8, IsValidAndSanitize) {
  EXPECT_TRUE(IsValid(""));
  EXPECT_TRUE(IsValid("plain ascii that is longer than eight bytes"));
  EXPECT_TRUE(
      IsValid("Gr\xC3\xBC\xC3\x9F"
              "e \xE4\xB8\x96 \xF0\x9F\x99\x82"));
  EXPECT_FALSE(IsValid("long ascii prefix then \xC3"));
  EXPECT_FALSE(IsValid("\xED\xBF\xBF"));
  EXPECT_EQ(Sanitize("a\xFF"
                     "b\xC3"),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
  EXPECT_EQ(Sanitize("\xE2\x96\x81"), "\xE2\x96\x81");
}

TEST(Utf8, TrimAsciiSpaceDropsOnlyOuterAsciiWhitespace) {
  EXPECT_EQ(TrimAsciiSpace(" \t\n\r\f\vab c\n "), "ab c");
  EXPECT_EQ(TrimAsciiSpace(" \n\t "), "");
  EXPECT_EQ(TrimAsciiSpace(""), "");
  EXPECT_EQ(TrimAsciiSpace("\xc2\xa0x\xc2\xa0"), "\xc2\xa0x\xc2\xa0");  // U+00A0 is kept
}

TEST(Utf8, AppendEncodes) {
  std::string s;
  Append(0x41, &s);
  Append(0xE9, &s);
  Append(0x2581, &s);
  Append(0x1F642, &s);
  EXPECT_EQ(s, "A\xC3\xA9\xE2\x96\x81\xF0\x9F\x99\x82");
  s.clear();
  Append(0xD800, &s);
  Append(0x110000, &s);
  EXPECT_EQ(s, "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Utf8, IncompleteTail) {
  EXPECT_EQ(IncompleteTailLength(""), 0u);
  EXPECT_EQ(IncompleteTailLength("abc"), 0u);
  EXPECT_EQ(IncompleteTailLength("a\xC3"), 1u);
  EXPECT_EQ(IncompleteTailLength("a\xE2\x96"), 2u);
  EXPECT_EQ(IncompleteTailLength("a\xF0\x9F\x99"), 3u);
  EXPECT_EQ(IncompleteTailLength("a\xF0\x9F\x99\x82"), 0u);  // complete
  EXPECT_EQ(IncompleteTailLength("a\xED\xA0"), 0u);          // can never become valid
  EXPECT_EQ(IncompleteTailLength("\x80\x80"), 0u);
}

}  // namespace utf8_test
}  // namespace gemlet::utf8
