// Elapsed wall time on the monotonic clock, for the timings the runtime and the tools report
// (prefill and decode milliseconds, a conversion's seconds, a request's duration).
#pragma once

#include <chrono>

namespace gemlet {

using SteadyClock = std::chrono::steady_clock;

// Milliseconds from t0 to now (t0 from SteadyClock::now()).
inline double MsSince(SteadyClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
}

// Seconds from t0 to now.
inline double SecondsSince(SteadyClock::time_point t0) {
  return std::chrono::duration<double>(SteadyClock::now() - t0).count();
}

}  // namespace gemlet
