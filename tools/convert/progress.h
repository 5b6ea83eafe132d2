// Conversion progress on stderr: a redrawn bar with rate and ETA on a terminal, plain lines
// every 10% otherwise (logs, CI). Disabled progress prints nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace gemlet::convert {

class Progress {
 public:
  // `out` defaults to stderr; `tty` is detected from it unless forced.
  Progress(uint64_t total_bytes, bool enabled, std::FILE* out = nullptr, int force_tty = -1);
  // `bytes` more of the total are done; `what` names the current tensor.
  void Add(uint64_t bytes, const std::string& what);
  void Finish();

  // "1:05", "12:00:03"
  static std::string FormatDuration(double seconds);
  // "812 KB", "1.23 GB"
  static std::string FormatBytes(uint64_t bytes);

 private:
  void Draw(bool final);

  uint64_t total_;
  uint64_t done_ = 0;
  bool enabled_;
  bool tty_ = false;
  std::FILE* out_;
  int next_decile_ = 1;
  std::string what_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::mutex mu_;
};

}  // namespace gemlet::convert
