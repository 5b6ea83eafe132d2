#include "tools/convert/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace gemlet::convert {
namespace {

std::string Capture(bool tty, bool enabled) {
  std::FILE* f = std::tmpfile();
  {
    Progress p(1000, enabled, f, tty ? 1 : 0);
    for (int i = 0; i < 10; ++i) p.Add(100, "blk." + std::to_string(i) + ".ffn_up");
    p.Finish();
  }
  std::rewind(f);
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

TEST(Progress, PlainLinesEveryTenPercent) {
  const std::string s = Capture(false, true);
  int lines = 0;
  for (char c : s) lines += c == '\n';
  EXPECT_EQ(lines, 10) << s;
  EXPECT_NE(s.find("convert:  10% "), std::string::npos) << s;
  EXPECT_NE(s.find(" 50% "), std::string::npos) << s;
  EXPECT_NE(s.find("100% "), std::string::npos) << s;
  EXPECT_EQ(s.find('\r'), std::string::npos);
}

TEST(Progress, TerminalBarRedrawsInPlace) {
  const std::string s = Capture(true, true);
  EXPECT_NE(s.find('\r'), std::string::npos);
  EXPECT_NE(s.find("[##############################]"), std::string::npos) << s;
  EXPECT_EQ(s.back(), '\n');
}

TEST(Progress, DisabledPrintsNothing) { EXPECT_EQ(Capture(false, false), ""); }

TEST(Progress, Formats) {
  EXPECT_EQ(Progress::FormatDuration(65), "1:05");
  EXPECT_EQ(Progress::FormatDuration(3600 * 12 + 3), "12:00:03");
  EXPECT_EQ(Progress::FormatBytes(2'660'000'000ull), "2.66 GB");
  EXPECT_EQ(Progress::FormatBytes(812'000), "812 KB");
  EXPECT_EQ(Progress::FormatBytes(12'300'000), "12.3 MB");
}

}  // namespace
}  // namespace gemlet::convert
