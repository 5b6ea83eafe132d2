#include "runtime/transcriber.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace gemlet::runtime {
namespace transcriber_test {

// Noise everywhere but at `quiet` (seconds), where 0.2 s are silent.
std::vector<float> NoiseWithGaps(double seconds, const std::vector<double>& quiet, int64_t rate = 16000) {
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0, 0.3f);
  std::vector<float> s(static_cast<size_t>(seconds * rate));
  for (float& x : s) x = g(rng);
  for (double q : quiet) {
    for (int64_t i = static_cast<int64_t>((q - 0.1) * rate); i < static_cast<int64_t>((q + 0.1) * rate); ++i) s[i] = 0;
  }
  return s;
}

TEST(PlanAudioWindows, ShortClipIsOneWindow) {
  const std::vector<float> s(16000 * 12, 0.1f);
  const auto w = PlanAudioWindows(s, 16000);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].begin, 0);
  EXPECT_EQ(w[0].end, 16000 * 12);
  EXPECT_TRUE(PlanAudioWindows(std::vector<float>{}, 16000).empty());
}

TEST(PlanAudioWindows, CutsAtTheQuietPointsNearTheEnd) {
  // Gaps at 27.3 s (within the first window's last 5 s), 40 s (too early for the second
  // window, which ends in [52.3, 57.3]) and 55 s.
  const auto s = NoiseWithGaps(70, {27.3, 40, 55});
  const auto w = PlanAudioWindows(s, 16000);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].begin, 0);
  EXPECT_NEAR(w[0].end / 16000.0, 27.3, 0.1);
  EXPECT_EQ(w[1].begin, w[0].end);
  EXPECT_NEAR(w[1].end / 16000.0, 55, 0.1);
  EXPECT_EQ(w[2].begin, w[1].end);
  EXPECT_EQ(w[2].end, 70 * 16000);
  for (const auto& x : w) EXPECT_LE(x.end - x.begin, 30 * 16000);
}

TEST(PlanAudioWindows, NoQuietPointCutsWithinTheLimitAndLeavesNoScrap) {
  // Constant tone: the latest of equal frames; a remainder of 0.1 s is not left alone.
  std::vector<float> s(static_cast<size_t>(16000 * 30.1));
  for (size_t i = 0; i < s.size(); ++i) s[i] = 0.5f * std::sin(0.02f * static_cast<float>(i));
  const auto w = PlanAudioWindows(s, 16000);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_LE(w[0].end, 30 * 16000);
  EXPECT_GE(w[1].end - w[1].begin, 8000);
  EXPECT_EQ(w[1].end, static_cast<int64_t>(s.size()));
  // Shorter windows (--window-seconds).
  WindowOptions o;
  o.max_seconds = 10;
  o.search_seconds = 2;
  const auto w10 = PlanAudioWindows(s, 16000, o);
  EXPECT_EQ(w10.size(), 4u);
  for (const auto& x : w10) EXPECT_LE(x.end - x.begin, 10 * 16000);
}

TEST(WindowMessage, PlacesTheClipThenTheInstructionAndContext) {
  TranscribeOptions o;
  EXPECT_EQ(WindowMessage(o, "").rfind("<|audio|>Transcribe", 0), 0u);
  o.language = "de";
  EXPECT_NE(WindowMessage(o, "").find("in German into German text"), std::string::npos);
  o.translate = true;
  EXPECT_NE(WindowMessage(o, "").find("translate it into English"), std::string::npos);
  EXPECT_NE(WindowMessage(o, "so far").find("so far"), std::string::npos);
  EXPECT_EQ(LanguageName("Klingon"), "Klingon");
}

}  // namespace transcriber_test
}  // namespace gemlet::runtime
