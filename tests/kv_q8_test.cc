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
namespace kv_q8_test {

class KvQ8 : public ::testing::TestWithParam<Source> {};

// Every oracle case, all rows: the q8 cache's logits against the f16 cache's (the default),
// on the exact path (only the attention's arithmetic differs: q8 K/V, and the queries in
// int8 blocks for the int8 scores, as llama.cpp scores a q8_0 cache) and the fast path, and
// against llama.cpp. Measured on x86-64 (AVX-512, Zen 5) over the 4 GGUF sources:
//   exact path, q8 vs f16 cache: max |Δ| 0.27..0.41, mean 0.034..0.038 — every K/V and query
//     element rounded by up to half a step of its block's 127 steps, through the tiny random
//     models;
//   fast path, q8 vs f16 cache: max 0.54..0.84, mean 0.079..0.088 (the fast path's own int8
//     re-roundings on top);
//   against llama.cpp, the q8 cache's mean distance is the f16 cache's + 0.006..0.022 (max
//     0.47..0.82, argmax equal wherever the golden gap > 0.5, like the f16 cache).
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
      // The forward attends over the fresh rows as the q8 blocks the cache will hold
      // (model/kv_store.h), so a token's K/V go through the same arithmetic from its own
      // chunk as from the cache.
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
  const std::string path = Converted(src.variant, src.file);
  ASSERT_FALSE(path.empty());
  auto e = OpenKv(path, ops::MatMulMode::kFast, TensorType::kQ8);
  ASSERT_TRUE(e);
  ExpectSaveLoadContinuesIdentically(*e, TensorType::kQ8, LoadOracle(src.variant),
                                     std::string("kv_q8_") + src.variant + "_" + src.file);
}

// A file saved from an f32 cache loads into a q8 session (the rows are quantized), unless a
// value is beyond the range of a q8 block's f16 scale (|x| > 65504·127): then a one-line
// error, and an f32 session still loads it.
TEST_P(KvQ8, F32FileIntoQ8SessionChecksTheRange) {
  const Source src = GetParam();
  const std::string path = Converted(src.variant, src.file);
  ASSERT_FALSE(path.empty());
  // 9e6: beyond 65504·127 ≈ 8.32e6 (a block's f16 scale times the largest q8 value).
  ExpectF32FileRangeChecked(path, TensorType::kQ8, 9e6f, "q8 range", LoadOracle(src.variant),
                            std::string("kv_q8_f32_") + src.variant + "_" + src.file);
}

INSTANTIATE_TEST_SUITE_P(Gguf, KvQ8,
                         ::testing::Values(Source{"tiny-e2b", "model-q8_0.gguf"}, Source{"tiny-e2b", "model-q4_0.gguf"},
                                           Source{"tiny-e4b", "model-q8_0.gguf"},
                                           Source{"tiny-e4b", "model-q4_0.gguf"}));

}  // namespace kv_q8_test
}  // namespace gemlet::oracle
