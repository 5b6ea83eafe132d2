#include "tools/convert/progress.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "base/clock.h"

namespace gemlet::convert {

Progress::Progress(uint64_t total_bytes, bool enabled, std::FILE* out, int force_tty, std::string label)
    : total_(total_bytes), enabled_(enabled), out_(out ? out : stderr), label_(std::move(label)) {
  tty_ = force_tty >= 0 ? force_tty != 0 : ::isatty(::fileno(out_)) != 0;
  start_ = last_draw_ = SteadyClock::now();
}

std::string Progress::FormatDuration(double s) {
  if (!(s >= 0) || s > 1e8) return "?";
  const long t = static_cast<long>(s + 0.5);
  char buf[32];
  if (t >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld", t / 60, t % 60);
  }
  return buf;
}

std::string Progress::FormatBytes(uint64_t b) {
  char buf[32];
  if (b >= 1000000000ull) {
    std::snprintf(buf, sizeof(buf), "%.2f GB", b / 1e9);
  } else if (b >= 1000000ull) {
    std::snprintf(buf, sizeof(buf), "%.1f MB", b / 1e6);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f KB", b / 1e3);
  }
  return buf;
}

void Progress::Add(uint64_t bytes, const std::string& what) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  done_ = std::min(total_, done_ + bytes);
  what_ = what;
  const auto now = SteadyClock::now();
  if (tty_) {
    if (now - last_draw_ >= std::chrono::milliseconds(100)) {
      last_draw_ = now;
      Draw(false);
    }
  } else if (total_ > 0 && done_ * 10 >= next_decile_ * total_) {
    while (next_decile_ <= 10 && done_ * 10 >= next_decile_ * total_) ++next_decile_;
    Draw(false);
  }
}

void Progress::Skip(uint64_t bytes, const std::string& what) {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t before = done_;
    done_ = std::min(total_, done_ + bytes);
    skipped_ += done_ - before;
  }
  Add(0, what);
}

void Progress::Finish() {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  done_ = total_;
  if (!tty_ && next_decile_ > 10) return;  // the 100% line is out already
  Draw(true);
}

void Progress::Draw(bool final) {
  const double elapsed = SecondsSince(start_);
  const double frac = total_ ? static_cast<double>(done_) / total_ : 1.0;
  const double rate = elapsed > 0 ? (done_ - skipped_) / elapsed : 0;
  const double eta = rate > 0 ? (total_ - done_) / rate : -1;
  if (tty_) {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(frac * kWidth);
    std::string bar(filled, '#');
    bar.resize(kWidth, '.');
    std::string what = what_.size() > 28 ? what_.substr(0, 28) : what_;
    std::fprintf(out_, "\r%3d%% [%s] %s / %s  %s/s  %s %s  %s\x1b[K", static_cast<int>(frac * 100),
                 bar.c_str(), FormatBytes(done_).c_str(), FormatBytes(total_).c_str(),
                 FormatBytes(static_cast<uint64_t>(rate)).c_str(), final ? "took" : "ETA",
                 FormatDuration(final ? elapsed : eta).c_str(), final ? "" : what.c_str());
    if (final) std::fprintf(out_, "\n");
  } else {
    std::fprintf(out_, "%s: %3d%% %s / %s, %s/s, %s elapsed%s%s\n", label_.c_str(), static_cast<int>(frac * 100),
                 FormatBytes(done_).c_str(), FormatBytes(total_).c_str(),
                 FormatBytes(static_cast<uint64_t>(rate)).c_str(), FormatDuration(elapsed).c_str(),
                 done_ >= total_ ? "" : ", ETA ", done_ >= total_ ? "" : FormatDuration(eta).c_str());
  }
  std::fflush(out_);
}

}  // namespace gemlet::convert
