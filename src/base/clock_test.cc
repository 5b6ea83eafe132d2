#include "base/clock.h"

#include <gtest/gtest.h>

namespace gemlet {
namespace {

TEST(Clock, MeasuresFromAGivenStart) {
  const auto t0 = SteadyClock::now() - std::chrono::milliseconds(1500);
  const double ms = MsSince(t0);
  const double s = SecondsSince(t0);
  EXPECT_GE(ms, 1500.0);
  EXPECT_LT(ms, 1500.0 + 60'000.0);  // (a stalled machine, not a wrong unit)
  EXPECT_GE(s, 1.5);
  EXPECT_LT(s, 61.5);
}

TEST(Clock, MillisecondsAndSecondsAgree) {
  const auto t0 = SteadyClock::now() - std::chrono::seconds(3);
  const double s = SecondsSince(t0);
  const double ms = MsSince(t0);
  // ms is read after s on a monotonic clock: at least s·1000, and within a minute of it.
  EXPECT_GE(ms, s * 1000.0);
  EXPECT_LT(ms - s * 1000.0, 60'000.0);
}

TEST(Clock, NowIsNotInThePast) { EXPECT_GE(MsSince(SteadyClock::now()), 0.0); }

}  // namespace
}  // namespace gemlet
