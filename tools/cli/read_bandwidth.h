// The machine's memory read bandwidth right now, for `gemlet bench`: decode on a CPU reads
// every weight once per token, so bytes per token ÷ this is its ceiling. Machines shared with
// other tenants vary by tens of percent over minutes, so bench measures it beside the tests.
#pragma once

#include <cstdint>

namespace gemlet::cli {

// GB/s (10^9 bytes) of `threads` threads summing disjoint parts of a buffer of `mib` MiB, the
// best of 3 passes (the buffer is filled first, so pages are resident). The buffer must be far
// larger than the caches to measure memory (1024 is the default of `gemlet bench`).
double MeasureReadBandwidth(int threads, int64_t mib);

}  // namespace gemlet::cli
