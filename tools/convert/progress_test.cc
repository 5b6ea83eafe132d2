#include "tools/convert/progress.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace gemlet::convert {
namespace progress_test {

std::string ReadAll(std::FILE* f) {
  std::rewind(f);
  std::string s;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

std::string Capture(bool tty, bool enabled) {
  std::FILE* f = std::tmpfile();
  {
    Progress p(1000, enabled, f, tty ? 1 : 0);
    for (int i = 0; i < 10; ++i) p.Add(100, "blk." + std::to_string(i) + ".ffn_up");
    p.Finish();
  }
  return ReadAll(f);
}

// The last speed in `s` ("... 12.3 MB/s" or "812 KB/s") in MB/s, or -1.
double LastRateMBs(const std::string& s) {
  const size_t at = s.rfind("B/s");
  if (at == std::string::npos || at < 3) return -1;
  const char unit = s[at - 1];
  const size_t from = s.rfind(' ', at - 3);
  const double v = std::atof(s.substr(from + 1, at - 2 - from - 1).c_str());
  return unit == 'G' ? v * 1000 : unit == 'M' ? v : unit == 'K' ? v / 1000 : -1;
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
  EXPECT_NE(s.find("/s  took "), std::string::npos) << s;  // the speed, then the time taken
  EXPECT_EQ(s.back(), '\n');
}

// The lines carry their label (a pull's download is not "convert:"), the speed and the ETA.
TEST(Progress, PlainLinesHaveTheLabelSpeedAndEta) {
  std::FILE* f = std::tmpfile();
  {
    Progress p(100'000'000, true, f, 0, "pull");
    p.Add(50'000'000, "model.safetensors");
    p.Finish();
  }
  const std::string s = ReadAll(f);
  EXPECT_EQ(s.rfind("pull:  50% 50.0 MB / 100.0 MB, ", 0), 0u) << s;
  EXPECT_NE(s.find("B/s, "), std::string::npos) << s;  // KB, MB or GB per second
  EXPECT_NE(s.find(", ETA "), std::string::npos) << s;
  EXPECT_NE(s.find("pull: 100% "), std::string::npos) << s;
  EXPECT_EQ(s.find("convert:"), std::string::npos) << s;
}

// Bytes done before this run (a resumed download) count as done but not in the speed: 90 MB
// skipped and 10 MB added over at least 0.2 s is at most 50 MB/s (counting the skipped bytes
// it was 100 MB over the same time: over 50 MB/s unless the test stalled for 2 s).
TEST(Progress, SkippedBytesAreNotInTheSpeed) {
  for (bool tty : {false, true}) {
    std::FILE* f = std::tmpfile();
    {
      Progress p(100'000'000, true, f, tty ? 1 : 0, "pull");
      p.Skip(90'000'000, "model.safetensors");
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      p.Add(10'000'000, "model.safetensors");
      p.Finish();
    }
    const std::string s = ReadAll(f);
    const double rate = LastRateMBs(s);
    EXPECT_GE(rate, 0) << s;
    EXPECT_LE(rate, 50.05) << s;
    EXPECT_NE(s.find("100.0 MB / 100.0 MB"), std::string::npos) << s;
  }
}

TEST(Progress, DisabledPrintsNothing) { EXPECT_EQ(Capture(false, false), ""); }

TEST(Progress, Formats) {
  EXPECT_EQ(Progress::FormatDuration(65), "1:05");
  EXPECT_EQ(Progress::FormatDuration(3600 * 12 + 3), "12:00:03");
  EXPECT_EQ(Progress::FormatBytes(2'660'000'000ull), "2.66 GB");
  EXPECT_EQ(Progress::FormatBytes(812'000), "812 KB");
  EXPECT_EQ(Progress::FormatBytes(12'300'000), "12.3 MB");
}

}  // namespace progress_test
}  // namespace gemlet::convert
