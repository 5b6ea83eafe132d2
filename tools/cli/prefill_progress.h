// Prefill progress on a terminal, for run and chat: one line on stderr, "prefill 12288 of
// 32768 tokens, 410 tok/s, ETA 50 s", redrawn at most every 0.2 s once the prefill has run
// for 0.5 s (a short prompt shows nothing), and erased when it ends. Nothing at all unless
// enabled (stderr is a terminal and no -q). The runtime only reports (runtime::
// PrefillProgress, TurnCallbacks::on_prefill); the terminal is the CLI's.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace gemlet::cli {

// The line's text for `done` of `total` tokens after `seconds`.
inline std::string PrefillProgressText(int64_t done, int64_t total, double seconds) {
  char buf[160];
  const double rate = seconds > 0 ? done / seconds : 0;
  if (done <= 0 || rate <= 0) {
    std::snprintf(buf, sizeof(buf), "prefill %lld of %lld tokens", static_cast<long long>(done),
                  static_cast<long long>(total));
  } else {
    const double eta = (total - done) / rate;
    std::snprintf(buf, sizeof(buf), "prefill %lld of %lld tokens, %.0f tok/s, ETA %.0f s", static_cast<long long>(done),
                  static_cast<long long>(total), rate, eta);
  }
  return buf;
}

class PrefillProgressLine {
 public:
  // `enabled`: draw at all. The delay before the first line is GEMLET_PROGRESS_DELAY_MS
  // (default 500; tests set 0).
  explicit PrefillProgressLine(bool enabled) : enabled_(enabled) {
    if (const char* d = std::getenv("GEMLET_PROGRESS_DELAY_MS")) delay_s_ = std::atof(d) / 1000.0;
  }
  ~PrefillProgressLine() { Clear(); }
  // Whether a progress line belongs on this process's stderr: a terminal, and not quiet.
  static bool Wanted(bool quiet) { return !quiet && ::isatty(STDERR_FILENO) == 1; }

  // A new prefill of `total` tokens has `done` of them; the first call starts the clock.
  void Update(int64_t done, int64_t total) {
    if (!enabled_) return;
    const auto now = Clock::now();
    if (!started_) {
      started_ = true;
      t0_ = now;
    }
    if (done >= total) {  // the end: the answer's text comes next
      Clear();
      return;
    }
    const double s = Seconds(t0_, now);
    if (s < delay_s_ || (drawn_ && Seconds(last_, now) < 0.2)) return;
    last_ = now;
    drawn_ = true;
    std::fprintf(stderr, "\r\x1b[2K%s", PrefillProgressText(done, total, s).c_str());
    std::fflush(stderr);
  }
  // Erases the line (if one was drawn); the next Update starts a new prefill.
  void Clear() {
    if (drawn_) {
      std::fputs("\r\x1b[2K", stderr);
      std::fflush(stderr);
    }
    drawn_ = started_ = false;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }
  bool enabled_;
  double delay_s_ = 0.5;
  bool started_ = false, drawn_ = false;
  Clock::time_point t0_, last_;
};

}  // namespace gemlet::cli
