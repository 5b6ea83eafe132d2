// SHA-256 (FIPS 180-4), used for the provenance of converted models: the digest of every source
// file goes into the .gemlet metadata.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace gemlet::convert {

class Sha256 {
 public:
  Sha256() { Reset(); }
  void Reset();
  void Update(const void* data, size_t n);
  std::array<uint8_t, 32> Finish();  // the object must be Reset() before reuse
  std::string FinishHex();

  // True if whole blocks go through the CPU's SHA-256 instructions (x86 SHA extensions, Armv8
  // SHA2); the portable code runs otherwise. Tests set force_portable to compare both.
  static bool HardwareAccelerated();
  static bool force_portable;

 private:
  void Block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string Sha256Hex(std::string_view data);
// Streams the file through a bounded buffer (pread), so hashing a 10 GB checkpoint does not
// grow the resident set. Stops with kCancelled once *cancel becomes true.
Result<std::string> Sha256File(const std::string& path, const std::atomic<bool>* cancel = nullptr);

}  // namespace gemlet::convert
