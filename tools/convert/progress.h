// Progress of a long byte count on stderr (a conversion, a download): a redrawn bar with rate
// and ETA on a terminal, plain lines every 10% otherwise (logs, CI), each starting with its
// label ("convert", "pull"). Disabled progress prints nothing.
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
  Progress(uint64_t total_bytes, bool enabled, std::FILE* out = nullptr, int force_tty = -1,
           std::string label = "convert");
  // `bytes` more of the total are done; `what` names the current tensor or file.
  void Add(uint64_t bytes, const std::string& what);
  // `bytes` of the total were done before this run (a resumed download, a file already
  // there): counted as done, but not in the rate, so speed and ETA are this run's.
  void Skip(uint64_t bytes, const std::string& what);
  void Finish();

  // "1:05", "12:00:03"
  static std::string FormatDuration(double seconds);
  // "812 KB", "1.23 GB"
  static std::string FormatBytes(uint64_t bytes);

 private:
  void Draw(bool final);

  uint64_t total_;
  uint64_t done_ = 0;
  uint64_t skipped_ = 0;  // part of done_, not in the rate
  bool enabled_;
  bool tty_ = false;
  std::FILE* out_;
  int next_decile_ = 1;
  std::string what_;
  std::string label_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::mutex mu_;
};

}  // namespace gemlet::convert
