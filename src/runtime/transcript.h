// A transcript: the text of an audio clip by window, with each window's bounds in seconds as
// its timestamps, and the formats OpenAI's /v1/audio/transcriptions writes it in (its
// response_format): text, json, verbose_json, srt and vtt.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gemlet::runtime {

struct TranscriptSegment {
  int64_t index = 0;
  double start = 0, end = 0;  // seconds
  std::string text;           // trimmed
  std::vector<int32_t> ids;   // generated ids (the end-of-turn token left out)
};

struct Transcript {
  std::vector<TranscriptSegment> segments;
  std::string text;  // the segments' texts joined by spaces
  double duration = 0;  // seconds of audio
  std::string language;
  std::string task = "transcribe";  // or "translate"
  int64_t generated_tokens = 0;
  double encode_ms = 0, generate_ms = 0;
};

enum class TranscriptFormat { kText, kJson, kVerboseJson, kSrt, kVtt };
// "text", "json", "verbose_json", "srt", "vtt"; InvalidArgument otherwise.
Result<TranscriptFormat> ParseTranscriptFormat(std::string_view name);
// The MIME type of a format's body.
const char* TranscriptContentType(TranscriptFormat format);

// "00:01:02,345" (SRT) or "00:01:02.345" (WebVTT) for 62.345 s.
std::string FormatTimestamp(double seconds, char decimal);

// The transcript written in `format` (text ends with a newline; json is {"text"}).
std::string FormatTranscript(const Transcript& t, TranscriptFormat format);

}  // namespace gemlet::runtime
