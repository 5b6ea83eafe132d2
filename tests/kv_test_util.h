// Helpers shared by the KV cache type tests (kv_f16_test.cc, kv_q8_test.cc): the GGUF oracle
// sources, an engine with a chosen KV row type, and a saved session with one value replaced.
#pragma once

#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "base/mapped_file.h"
#include "runtime/session_file.h"
#include "tests/oracle_test_util.h"

namespace gemlet::oracle {

struct Source {
  const char* variant;
  const char* file;
};
inline void PrintTo(const Source& s, std::ostream* os) { *os << s.variant << " " << s.file; }

// An engine on `path` with 2 threads, `mode` and KV rows of `kv` (nullopt: the mode's default).
inline std::unique_ptr<runtime::Engine> OpenKv(const std::string& path, ops::MatMulMode mode,
                                               std::optional<TensorType> kv) {
  runtime::EngineOptions eo;
  eo.threads = 2;
  eo.mode = mode;
  eo.kv_type = kv;
  auto e = runtime::Engine::Open(path, eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

// A copy of the session file `f` (as "<f>.big") whose last V value (the last f32 before the
// checksum) is `value`, with the checksum (FNV-1a 64 of every byte before it) recomputed so
// that only a range check can refuse it. "" if `f` cannot be read.
inline std::string WithLastKvValue(const std::string& f, float value) {
  auto bytes = ReadFileToString(f);
  EXPECT_TRUE(bytes.ok());
  if (!bytes.ok()) return "";
  std::string d = *bytes;
  std::memcpy(&d[d.size() - 12], &value, 4);
  const uint64_t h = runtime::SessionFileChecksum(d.data(), d.size() - 8);
  std::memcpy(&d[d.size() - 8], &h, 8);
  const std::string g = f + ".big";
  std::ofstream(g, std::ios::binary) << d;
  return g;
}

}  // namespace gemlet::oracle
