#include "tools/server/request_log.h"

#include <ctime>

#include "tools/server/json_util.h"

namespace gemlet::server {

bool ParseLogFormat(const std::string& name, LogFormat* out) {
  if (name == "text") {
    *out = LogFormat::kText;
  } else if (name == "json") {
    *out = LogFormat::kJson;
  } else {
    return false;
  }
  return true;
}

std::string IsoTime(int64_t unix_ms) {
  const std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];  // room for any int in each field, so that no output can be cut
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(unix_ms % 1000));
  return buf;
}

namespace {

std::string Millis(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", ms);
  return buf;
}

// Text fields a client chose (path, user agent) with control characters escaped, so that a
// hostile request cannot forge log lines.
std::string Printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f || c == '"' || c == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string FormatRequestLine(const RequestLogEntry& e, LogFormat format) {
  if (format == LogFormat::kJson) {
    Json j = {{"time", IsoTime(e.unix_ms)}, {"method", e.method}, {"path", e.path},
              {"status", e.status}};
    j["prompt_tokens"] = e.prompt_tokens >= 0 ? Json(e.prompt_tokens) : Json(nullptr);
    j["completion_tokens"] = e.completion_tokens >= 0 ? Json(e.completion_tokens) : Json(nullptr);
    j["duration_ms"] = static_cast<double>(static_cast<int64_t>(e.duration_ms * 10 + 0.5)) / 10;
    j["client"] = e.client;
    j["user_agent"] = e.user_agent;
    return Dump(j);
  }
  std::string line = IsoTime(e.unix_ms) + ' ' + Printable(e.method) + ' ' + Printable(e.path) + ' ' +
                     std::to_string(e.status);
  if (e.prompt_tokens >= 0) line += " prompt=" + std::to_string(e.prompt_tokens);
  if (e.completion_tokens >= 0) line += " generated=" + std::to_string(e.completion_tokens);
  line += ' ' + Millis(e.duration_ms) + "ms " + e.client;
  if (!e.user_agent.empty()) line += " \"" + Printable(e.user_agent) + '"';
  return line;
}

std::string FormatStepLine(const StepLogEntry& e, LogFormat format) {
  if (format == LogFormat::kJson) {
    return Dump(Json{{"step", {{"sequences", e.sequences},
                               {"decode_rows", e.decode_rows},
                               {"prefill_rows", e.prefill_rows},
                               {"duration_ms", e.duration_ms}}}});
  }
  return "step sequences=" + std::to_string(e.sequences) + " decode=" + std::to_string(e.decode_rows) +
         " prefill=" + std::to_string(e.prefill_rows) + ' ' + Millis(e.duration_ms) + "ms";
}

void RequestLog::WriteLine(const std::string& line) {
  if (out_ == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::fputs(line.c_str(), out_);
  std::fputc('\n', out_);
  std::fflush(out_);
}

void RequestLog::Request(const RequestLogEntry& e) { WriteLine(FormatRequestLine(e, format_)); }

void RequestLog::Step(const StepLogEntry& e) {
  if (verbose()) WriteLine(FormatStepLine(e, format_));
}

}  // namespace gemlet::server
