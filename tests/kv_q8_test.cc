// The q8 KV cache (runtime/kv_cache.h with TensorType::kQ8, --kv-type q8) on the oracle
// checkpoints, against the f16 cache: logits close (each block of 32 K/V values rounded to
// 8 bits around its largest), prefill == decode bit for bit, and a session saved and loaded
// (rows f32 on disk, q8 -> f32 -> q8 lossless) continues identically.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "runtime/session_file.h"
#include "tests/kv_test_util.h"
#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace {

class KvQ8 : public ::testing::TestWithParam<Source> {};

// Every oracle case, all rows: the q8 cache's logits against the f16 cache's (the default),
// on the exact path (only the K/V rounding differs) and the fast path, and against llama.cpp.
// Measured on x86-64 (AVX-512, Zen 5) over the 4 GGUF sources:
//   exact path, q8 vs f16 cache: max |Δ| 0.22..0.43, mean 0.030..0.035 — every K/V element
//     rounded by up to half a step of its block's 127 steps, through the tiny random models;
//   fast path, q8 vs f16 cache: max 0.60..1.12, mean 0.075..0.088 (the fast path's own int8
//     re-roundings on top);
//   against llama.cpp, the q8 cache's mean distance is the f16 cache's + 0.006..0.019 (max
//     0.51..0.80, argmax equal wherever the golden gap > 0.5, like the f16 cache).
// Bounds: exact path max 1.0 / mean 0.1 (about 2.5× the measurement: the q8 effect alone);
// fast path the oracle's reduced-precision tier between the two caches (max 2.0, mean 0.2);
// both paths: the q8 cache against llama.cpp within that tier, its mean distance within the
// f16 cache's + 0.04, argmax equal wherever the golden gap > 0.5.
TEST_P(KvQ8, LogitsCloseToF16CacheAndPrefillEqualsDecode) {
  const Source src = GetParam();
  const Oracle& o = LoadOracle(src.variant);
  const std::string path = Converted(src.variant, src.file);
  const std::string name = std::string(src.variant) + " " + src.file;
  ASSERT_FALSE(path.empty());
  const bool q4 = std::string(src.file).find("q4") != std::string::npos;
  const std::string golden = q4 ? "llama-q4_0" : "llama-q8_0";
  const NpyArray& gold = Golden(src.variant, golden);
  for (ops::MatMulMode mode : {ops::MatMulMode::kExact, ops::MatMulMode::kFast}) {
    const bool exact = mode == ops::MatMulMode::kExact;
    auto e16 = OpenKv(path, mode, TensorType::kF16);
    auto e8 = OpenKv(path, mode, TensorType::kQ8);
    ASSERT_TRUE(e16 && e8);
    EXPECT_EQ(runtime::Session(*e8).kv_cache().type(), TensorType::kQ8);
    const int64_t V = e16->config().vocab_size;
    Stats between, gold16, gold8;
    for (const Case& c : o.cases) {
      runtime::Session s16(*e16), s8(*e8), d8(*e8), c8(*e8);
      const std::vector<float> a = RunAllRows(s16, c.tokens, 0);
      const std::vector<float> b = RunAllRows(s8, c.tokens, 0);
      const std::vector<float> d = RunAllRows(d8, c.tokens, 1);
      const std::vector<float> ch = RunAllRows(c8, c.tokens, 3);
      ASSERT_EQ(a.size(), b.size());
      // The forward rounds the fresh rows to the q8 values (model/kv_store.h), so a token
      // reads the same K/V from its own chunk as from the cache.
      EXPECT_EQ(d, b) << name << " case " << c.id << ": q8 decode vs prefill";
      EXPECT_EQ(ch, b) << name << " case " << c.id << ": q8 chunks of 3 vs prefill";
      const int64_t T = static_cast<int64_t>(c.tokens.size());
      between.Add(Compare(b.data(), a.data(), T, V, /*gap_min=*/0.5));
      gold16.Add(Compare(a.data(), gold.data.data() + c.row_offset * V, T, V, 0.5));
      gold8.Add(Compare(b.data(), gold.data.data() + c.row_offset * V, T, V, 0.5));
    }
    const std::string what = name + (exact ? " exact" : " fast");
    Report(what + ": q8 vs f16 cache", between);
    Report(what + ": f16 cache vs " + golden, gold16);
    Report(what + ": q8 cache vs " + golden, gold8);
    EXPECT_EQ(between.argmax_equal, between.argmax_checked) << what << ": " << between.ToString();
    EXPECT_EQ(gold8.argmax_equal, gold8.argmax_checked) << what << ": " << gold8.ToString();
    EXPECT_LE(between.max_abs, exact ? 1.0 : 2.0) << what << ": " << between.ToString();
    EXPECT_LE(between.mean_abs(), exact ? 0.1 : 0.2) << what << ": " << between.ToString();
    EXPECT_LE(gold8.max_abs, 2.0) << what << ": " << gold8.ToString();
    EXPECT_LE(gold8.mean_abs(), 0.2) << what << ": " << gold8.ToString();
    EXPECT_LE(gold8.mean_abs(), gold16.mean_abs() + 0.04) << what;
  }
}

// /save + /load with a q8 cache: the file holds f32 rows (the dequantized values), loading
// quantizes them back to the same blocks, so the continuation is bit-identical to the session
// that never left memory, and saving the loaded session writes the same bytes.
TEST_P(KvQ8, SaveLoadContinuesIdentically) {
  const Source src = GetParam();
  const Oracle& o = LoadOracle(src.variant);
  const std::string path = Converted(src.variant, src.file);
  ASSERT_FALSE(path.empty());
  auto e = OpenKv(path, ops::MatMulMode::kFast, TensorType::kQ8);
  ASSERT_TRUE(e);
  const Case& c = *std::max_element(o.cases.begin(), o.cases.end(),
                                    [](const Case& x, const Case& y) { return x.tokens.size() < y.tokens.size(); });
  const size_t half = c.tokens.size() / 2;
  ASSERT_GE(half, 2u);
  const std::vector<int32_t> head(c.tokens.begin(), c.tokens.begin() + half);
  const std::vector<int32_t> tail(c.tokens.begin() + half, c.tokens.end());
  runtime::Session a(*e);
  ASSERT_EQ(a.kv_cache().type(), TensorType::kQ8);
  ASSERT_TRUE(a.Prefill(head, nullptr).ok());
  const std::string f1 = ScratchDir() + "/kv_q8_" + src.variant + "_" + src.file + ".1.session";
  const std::string f2 = ScratchDir() + "/kv_q8_" + src.variant + "_" + src.file + ".2.session";
  const nlohmann::json extra = {{"messages", nlohmann::json::array()}};
  ASSERT_TRUE(runtime::SaveSessionFile(f1, a, extra).ok());
  runtime::Session b(*e);
  auto loaded = runtime::LoadSessionFile(f1, &b, nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(b.position(), static_cast<int64_t>(half));
  ASSERT_TRUE(runtime::SaveSessionFile(f2, b, extra).ok());
  auto bytes1 = ReadFileToString(f1), bytes2 = ReadFileToString(f2);
  ASSERT_TRUE(bytes1.ok() && bytes2.ok());
  EXPECT_TRUE(*bytes1 == *bytes2) << "save, load, save changed the file";
  std::vector<float> la, lb;
  ASSERT_TRUE(a.Prefill(tail, &la, /*all_rows=*/true).ok());
  ASSERT_TRUE(b.Prefill(tail, &lb, /*all_rows=*/true).ok());
  EXPECT_EQ(la, lb) << "the loaded session continues differently";
  for (int step = 0; step < 3; ++step) {  // and token by token
    const int32_t next = static_cast<int32_t>(TopGap(la.data() + la.size() - e->config().vocab_size,
                                                      e->config().vocab_size).first);
    ASSERT_TRUE(a.Decode(next, &la).ok());
    ASSERT_TRUE(b.Decode(next, &lb).ok());
    EXPECT_EQ(la, lb) << "decode step " << step;
  }
}

// A file saved from an f32 cache loads into a q8 session (the rows are quantized), unless a
// value is beyond the range of a q8 block's f16 scale (|x| > 65504·127): then a one-line
// error, and an f32 session still loads it.
TEST_P(KvQ8, F32FileIntoQ8SessionChecksTheRange) {
  const Source src = GetParam();
  const Oracle& o = LoadOracle(src.variant);
  const std::string path = Converted(src.variant, src.file);
  ASSERT_FALSE(path.empty());
  auto e32 = OpenKv(path, ops::MatMulMode::kFast, TensorType::kF32);
  auto e8 = OpenKv(path, ops::MatMulMode::kFast, TensorType::kQ8);
  ASSERT_TRUE(e32 && e8);
  const Case& c = o.cases.front();
  runtime::Session a(*e32);
  ASSERT_TRUE(a.Prefill(c.tokens, nullptr).ok());
  const std::string f = ScratchDir() + "/kv_q8_f32_" + src.variant + "_" + src.file + ".session";
  ASSERT_TRUE(runtime::SaveSessionFile(f, a, nlohmann::json::object()).ok());
  runtime::Session b(*e8);
  ASSERT_TRUE(runtime::LoadSessionFile(f, &b, nullptr).ok());
  EXPECT_EQ(b.position(), a.position());
  // The last V value of the last layer becomes 9e6 (> 65504·127 ≈ 8.32e6, but within f32);
  // the checksum (FNV-1a 64 of every byte before it) is recomputed so that only the range
  // check can refuse the file.
  const std::string g = WithLastKvValue(f, 9e6f);
  ASSERT_FALSE(g.empty());
  runtime::Session c8(*e8), c32(*e32);
  auto r8 = runtime::LoadSessionFile(g, &c8, nullptr);
  ASSERT_FALSE(r8.ok());
  EXPECT_EQ(r8.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r8.status().message().find("q8 range"), std::string::npos) << r8.status().message();
  EXPECT_EQ(c8.position(), 0);
  EXPECT_TRUE(runtime::LoadSessionFile(g, &c32, nullptr).ok());
}

INSTANTIATE_TEST_SUITE_P(Gguf, KvQ8,
                         ::testing::Values(Source{"tiny-e2b", "model-q8_0.gguf"}, Source{"tiny-e2b", "model-q4_0.gguf"},
                                           Source{"tiny-e4b", "model-q8_0.gguf"},
                                           Source{"tiny-e4b", "model-q4_0.gguf"}));

}  // namespace
}  // namespace gemlet::oracle
