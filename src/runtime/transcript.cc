#include "runtime/transcript.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace gemlet::runtime {

Result<TranscriptFormat> ParseTranscriptFormat(std::string_view name) {
  if (name == "text") return TranscriptFormat::kText;
  if (name == "json") return TranscriptFormat::kJson;
  if (name == "verbose_json") return TranscriptFormat::kVerboseJson;
  if (name == "srt") return TranscriptFormat::kSrt;
  if (name == "vtt") return TranscriptFormat::kVtt;
  return InvalidArgument("the transcript format must be text, json, verbose_json, srt or vtt, got '" +
                         std::string(name) + "'");
}

const char* TranscriptContentType(TranscriptFormat format) {
  switch (format) {
    case TranscriptFormat::kJson:
    case TranscriptFormat::kVerboseJson:
      return "application/json";
    case TranscriptFormat::kVtt:
      return "text/vtt; charset=utf-8";
    default:
      return "text/plain; charset=utf-8";
  }
}

std::string FormatTimestamp(double seconds, char decimal) {
  const int64_t ms = static_cast<int64_t>(std::llround(std::max(0.0, seconds) * 1000.0));
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%02lld:%02lld:%02lld%c%03lld", static_cast<long long>(ms / 3600000),
                static_cast<long long>(ms / 60000 % 60), static_cast<long long>(ms / 1000 % 60), decimal,
                static_cast<long long>(ms % 1000));
  return buf;
}

namespace {

std::string Dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// Cues: a segment without text is left out (SRT and WebVTT have no empty cues).
std::string Cues(const Transcript& t, bool vtt) {
  std::string out = vtt ? "WEBVTT\n\n" : "";
  int64_t n = 0;
  for (const TranscriptSegment& s : t.segments) {
    if (s.text.empty()) continue;
    if (!vtt) out += std::to_string(++n) + "\n";
    out += FormatTimestamp(s.start, vtt ? '.' : ',') + " --> " + FormatTimestamp(s.end, vtt ? '.' : ',') + "\n";
    out += s.text + "\n\n";
  }
  return out;
}

}  // namespace

std::string FormatTranscript(const Transcript& t, TranscriptFormat format) {
  switch (format) {
    case TranscriptFormat::kText:
      return t.text + "\n";
    case TranscriptFormat::kJson:
      return Dump(nlohmann::json{{"text", t.text}});
    case TranscriptFormat::kVerboseJson: {
      nlohmann::json segs = nlohmann::json::array();
      for (const TranscriptSegment& s : t.segments) {
        segs.push_back({{"id", s.index},
                        {"seek", static_cast<int64_t>(std::llround(s.start * 100))},  // in 10 ms frames
                        {"start", s.start},
                        {"end", s.end},
                        {"text", s.text},
                        {"tokens", s.ids},
                        {"temperature", 0.0}});
      }
      return Dump(nlohmann::json{{"task", t.task},
                                 {"language", t.language},
                                 {"duration", t.duration},
                                 {"text", t.text},
                                 {"segments", segs}});
    }
    case TranscriptFormat::kSrt:
      return Cues(t, false);
    case TranscriptFormat::kVtt:
      return Cues(t, true);
  }
  return t.text;
}

}  // namespace gemlet::runtime
