// The machine's memory read bandwidth right now, for `gemlet bench`: decode on a CPU reads
// every weight once per token, so bytes per token ÷ this is its ceiling. Machines shared with
// other tenants vary by tens of percent over minutes, so bench measures it beside each test.
#pragma once

#include <cstdint>

namespace gemlet::cli {

// GB/s (10^9 bytes) of `threads` threads summing disjoint parts of a buffer of `mib` MiB, the
// best of 3 passes. The buffer is filled first (so its pages are resident) and returned to the
// system before returning. It must be far larger than the caches (`gemlet bench`: 1024).
double MeasureReadBandwidth(int threads, int64_t mib);

}  // namespace gemlet::cli
