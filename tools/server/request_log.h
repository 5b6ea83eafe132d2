// The server's request log: one line per HTTP request (time, method, path, status, prompt and
// generated tokens, duration, client), as text or as one JSON object per line, and with
// --verbose one line per scheduler step (its rows and wall time). Thread-safe; lines go to
// one stream (stderr for `gemlet serve`), each written whole.
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace gemlet::server {

enum class LogFormat { kText, kJson };

// "text" or "json"; false for anything else.
bool ParseLogFormat(const std::string& name, LogFormat* out);

struct RequestLogEntry {
  int64_t unix_ms = 0;  // when the request arrived (its headers were read)
  std::string method;
  std::string path;
  int status = 0;
  int64_t prompt_tokens = -1;     // -1: the request generated nothing
  int64_t completion_tokens = -1;
  double duration_ms = 0;  // from arrival to the last byte of the reply
  std::string client;      // "ADDR:PORT"
  std::string user_agent;
};

// What the scheduler did in one step (--verbose).
struct StepLogEntry {
  int64_t decode_rows = 0;   // one per generating sequence
  int64_t prefill_rows = 0;  // prompt tokens
  int64_t sequences = 0;
  double duration_ms = 0;
};

// text: 2026-12-02T02:50:01.123Z POST /v1/chat/completions 200 prompt=12 generated=16 812.3ms 127.0.0.1:41234 "openai/6.49"
// json: {"time":"…","method":"POST","path":…,"status":200,"prompt_tokens":12,…}
std::string FormatRequestLine(const RequestLogEntry& e, LogFormat format);
std::string FormatStepLine(const StepLogEntry& e, LogFormat format);
// ISO 8601 UTC with milliseconds, e.g. 2026-12-02T02:50:01.123Z.
std::string IsoTime(int64_t unix_ms);

class RequestLog {
 public:
  // `out` null: nothing is written (the lines are still formatted by nobody).
  RequestLog(std::FILE* out, LogFormat format, bool verbose)
      : out_(out), format_(format), verbose_(verbose) {}
  void Request(const RequestLogEntry& e);
  void Step(const StepLogEntry& e);  // only when verbose
  bool verbose() const { return verbose_ && out_ != nullptr; }

 private:
  void WriteLine(const std::string& line);
  std::FILE* out_;
  LogFormat format_;
  bool verbose_;
  std::mutex mu_;
};

}  // namespace gemlet::server
