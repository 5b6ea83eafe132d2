#include "runtime/transcript.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gemlet::runtime {
namespace transcript_test {

Transcript Two() {
  Transcript t;
  t.duration = 3725.5;
  t.language = "en";
  TranscriptSegment a;
  a.index = 0;
  a.start = 0;
  a.end = 29.25;
  a.text = "hello there";
  a.ids = {5, 6};
  TranscriptSegment empty;
  empty.index = 1;
  empty.start = 29.25;
  empty.end = 58;
  TranscriptSegment b;
  b.index = 2;
  b.start = 58;
  b.end = 3725.5;
  b.text = "bye";
  b.ids = {7};
  t.segments = {a, empty, b};
  t.text = "hello there bye";
  return t;
}

TEST(Transcript, Timestamps) {
  EXPECT_EQ(FormatTimestamp(0, ','), "00:00:00,000");
  EXPECT_EQ(FormatTimestamp(62.345, ','), "00:01:02,345");
  EXPECT_EQ(FormatTimestamp(3725.5, '.'), "01:02:05.500");
  EXPECT_EQ(FormatTimestamp(-1, '.'), "00:00:00.000");
}

TEST(Transcript, Formats) {
  const Transcript t = Two();
  EXPECT_EQ(FormatTranscript(t, TranscriptFormat::kText), "hello there bye\n");
  EXPECT_EQ(nlohmann::json::parse(FormatTranscript(t, TranscriptFormat::kJson)), nlohmann::json({{"text", t.text}}));
  const auto v = nlohmann::json::parse(FormatTranscript(t, TranscriptFormat::kVerboseJson));
  EXPECT_EQ(v["task"], "transcribe");
  EXPECT_EQ(v["language"], "en");
  EXPECT_DOUBLE_EQ(v["duration"].get<double>(), 3725.5);
  ASSERT_EQ(v["segments"].size(), 3u);
  EXPECT_DOUBLE_EQ(v["segments"][2]["start"].get<double>(), 58);
  EXPECT_EQ(v["segments"][0]["tokens"], nlohmann::json::array({5, 6}));
  // Cues leave the empty window out and number the rest.
  EXPECT_EQ(FormatTranscript(t, TranscriptFormat::kSrt),
            "1\n00:00:00,000 --> 00:00:29,250\nhello there\n\n2\n00:00:58,000 --> 01:02:05,500\nbye\n\n");
  EXPECT_EQ(FormatTranscript(t, TranscriptFormat::kVtt),
            "WEBVTT\n\n00:00:00.000 --> 00:00:29.250\nhello there\n\n00:00:58.000 --> 01:02:05.500\nbye\n\n");
  for (const char* f : {"text", "json", "verbose_json", "srt", "vtt"}) EXPECT_TRUE(ParseTranscriptFormat(f).ok()) << f;
  EXPECT_FALSE(ParseTranscriptFormat("docx").ok());
  EXPECT_STREQ(TranscriptContentType(TranscriptFormat::kVtt), "text/vtt; charset=utf-8");
}

}  // namespace transcript_test
}  // namespace gemlet::runtime
