// Helpers shared by the KV cache type tests (kv_f16_test.cc, kv_q8_test.cc): the GGUF oracle
// sources, an engine with a chosen KV row type, a saved session with one value replaced, and
// the two session-file checks that both cache types must pass.
#pragma once

#include <algorithm>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

// Saves a session on `e` (KV rows of `kv`) prefilled with the first half of the oracle's
// longest case, loads it into a second session, saves that again (the two files must be
// byte-identical), then continues both with the second half and three greedy tokens: the
// logits must be bit-identical. `stem` names the scratch files.
inline void ExpectSaveLoadContinuesIdentically(const runtime::Engine& e, TensorType kv, const Oracle& o,
                                               const std::string& stem) {
  const Case& c = *std::max_element(o.cases.begin(), o.cases.end(),
                                    [](const Case& x, const Case& y) { return x.tokens.size() < y.tokens.size(); });
  const size_t half = c.tokens.size() / 2;
  ASSERT_GE(half, 2u);
  const std::vector<int32_t> head(c.tokens.begin(), c.tokens.begin() + half);
  const std::vector<int32_t> tail(c.tokens.begin() + half, c.tokens.end());
  runtime::Session a(e);
  ASSERT_EQ(a.kv_cache().type(), kv);
  ASSERT_TRUE(a.Prefill(head, nullptr).ok());
  const std::string f1 = ScratchDir() + "/" + stem + ".1.session";
  const std::string f2 = ScratchDir() + "/" + stem + ".2.session";
  const nlohmann::json extra = {{"messages", nlohmann::json::array()}};
  ASSERT_TRUE(runtime::SaveSessionFile(f1, a, extra).ok());
  runtime::Session b(e);
  auto loaded = runtime::LoadSessionFile(f1, &b, nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(*loaded, extra);
  ASSERT_EQ(b.position(), static_cast<int64_t>(half));
  ASSERT_TRUE(runtime::SaveSessionFile(f2, b, extra).ok());
  auto bytes1 = ReadFileToString(f1), bytes2 = ReadFileToString(f2);
  ASSERT_TRUE(bytes1.ok() && bytes2.ok());
  EXPECT_TRUE(*bytes1 == *bytes2) << "save, load, save changed the file";
  std::vector<float> la, lb;
  ASSERT_TRUE(a.Prefill(tail, &la, /*all_rows=*/true).ok());
  ASSERT_TRUE(b.Prefill(tail, &lb, /*all_rows=*/true).ok());
  EXPECT_EQ(la, lb) << "the loaded session continues differently";
  const int64_t vocab = e.config().vocab_size;
  for (int step = 0; step < 3; ++step) {  // and token by token
    const int32_t next = static_cast<int32_t>(TopGap(la.data() + la.size() - vocab, vocab).first);
    ASSERT_TRUE(a.Decode(next, &la).ok());
    ASSERT_TRUE(b.Decode(next, &lb).ok());
    EXPECT_EQ(la, lb) << "decode step " << step;
  }
}

// A session file saved from an f32 cache on `path` loads into a session with KV rows of `kv`;
// with its last V value replaced by `too_big` (beyond what `kv` can hold, within f32) it is
// refused with an error naming `range_name` (e.g. "f16 range") and leaves the session empty,
// while an f32 session still loads it.
inline void ExpectF32FileRangeChecked(const std::string& path, TensorType kv, float too_big,
                                      const std::string& range_name, const Oracle& o,
                                      const std::string& stem) {
  auto e32 = OpenKv(path, ops::MatMulMode::kFast, TensorType::kF32);
  auto ek = OpenKv(path, ops::MatMulMode::kFast, kv);
  ASSERT_TRUE(e32 && ek);
  runtime::Session a(*e32);
  ASSERT_TRUE(a.Prefill(o.cases.front().tokens, nullptr).ok());
  const std::string f = ScratchDir() + "/" + stem + ".session";
  ASSERT_TRUE(runtime::SaveSessionFile(f, a, nlohmann::json::object()).ok());
  runtime::Session b(*ek);
  ASSERT_TRUE(runtime::LoadSessionFile(f, &b, nullptr).ok());
  EXPECT_EQ(b.position(), a.position());
  const std::string g = WithLastKvValue(f, too_big);
  ASSERT_FALSE(g.empty());
  runtime::Session ck(*ek), c32(*e32);
  auto r = runtime::LoadSessionFile(g, &ck, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(range_name), std::string::npos) << r.status().message();
  EXPECT_EQ(ck.position(), 0);
  EXPECT_TRUE(runtime::LoadSessionFile(g, &c32, nullptr).ok());
}

}  // namespace gemlet::oracle
