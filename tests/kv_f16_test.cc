// The f16 KV cache (runtime/kv_cache.h with TensorType::kF16, the fast path's default) on the
// oracle checkpoints, against the f32 cache: logits close (the rows are rounded to 11
// significant bits, nothing else changes), prefill == decode bit for bit, and a session
// saved and loaded (rows f32 on disk, f16 -> f32 -> f16 lossless) continues identically.
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
namespace kv_f16_test {

class KvF16 : public ::testing::TestWithParam<Source> {};

TEST_P(KvF16, DefaultsFollowTheMode) {
  const std::string path = Converted(GetParam().variant, GetParam().file);
  ASSERT_FALSE(path.empty());
  auto fast = OpenKv(path, ops::MatMulMode::kFast, std::nullopt);
  auto exact = OpenKv(path, ops::MatMulMode::kExact, std::nullopt);
  ASSERT_TRUE(fast && exact);
  EXPECT_EQ(fast->kv_type(), TensorType::kF16);
  EXPECT_EQ(exact->kv_type(), TensorType::kF32);
  EXPECT_EQ(runtime::Session(*fast).kv_cache().type(), TensorType::kF16);
  EXPECT_EQ(runtime::Session(*exact).kv_cache().type(), TensorType::kF32);
}

// Every oracle case, all rows: the f16 cache's logits against the f32 cache's, on the exact
// path (where nothing but the rounding of the K/V rows differs) and on the fast path (where
// that rounding also moves int8 activation roundings downstream, the fast path's own noise),
// and against llama.cpp's logits. Measured on x86-64 AVX2 over the 4 GGUF sources:
//   exact path, f16 vs f32 cache: max |Δ| 0.0093..0.0122, mean 0.0011..0.0014 — what rounding
//     every K/V element by up to 2^-12 relative gives through the tiny random models' layers;
//   fast path, f16 vs f32 cache: max 0.37..0.68, mean 0.053..0.064 — the size of the fast
//     path's own distance to llama.cpp (max 0.41..0.59, mean 0.057..0.066): any perturbation
//     re-rounds some int8 activations downstream; the f16 cache's distance to llama.cpp
//     grows by at most 0.0041 mean.
// Bounds: on the exact path the f16 cache is the oracle README's "approximate math" tier
// against `ref-q8_0` / `ref-q4_0` (exact math on the same weights): max 0.1, mean 0.01, argmax
// equal wherever the golden gap is above 0.05; and against the f32 cache the same bounds. Fast
// path: the oracle's reduced-precision tier between the two caches (max 2.0, mean 0.2, argmax
// where the gap is above 0.5), and the f16 cache's mean distance to llama.cpp within the f32
// cache's + 0.02.
TEST_P(KvF16, LogitsCloseToF32CacheAndPrefillEqualsDecode) {
  const Source src = GetParam();
  const Oracle& o = LoadOracle(src.variant);
  const std::string path = Converted(src.variant, src.file);
  const std::string name = std::string(src.variant) + " " + src.file;
  ASSERT_FALSE(path.empty());
  const bool q4 = std::string(src.file).find("q4") != std::string::npos;
  const std::string golden = q4 ? "llama-q4_0" : "llama-q8_0";
  const NpyArray& gold = Golden(src.variant, golden);
  const NpyArray& ref = Golden(src.variant, q4 ? "ref-q4_0" : "ref-q8_0");
  for (ops::MatMulMode mode : {ops::MatMulMode::kExact, ops::MatMulMode::kFast}) {
    const bool exact = mode == ops::MatMulMode::kExact;
    auto e32 = OpenKv(path, mode, TensorType::kF32);
    auto e16 = OpenKv(path, mode, TensorType::kF16);
    ASSERT_TRUE(e32 && e16);
    const int64_t V = e32->config().vocab_size;
    Stats between, gold32, gold16, ref16;
    const double gap_min = exact ? 0.05 : 0.5;
    for (const Case& c : o.cases) {
      runtime::Session s32(*e32), s16(*e16), d16(*e16);
      const std::vector<float> a = RunAllRows(s32, c.tokens, 0);
      const std::vector<float> b = RunAllRows(s16, c.tokens, 0);
      const std::vector<float> d = RunAllRows(d16, c.tokens, 1);
      ASSERT_EQ(a.size(), b.size());
      // The forward rounds the fresh rows to f16 before attending (model/kv_store.h), so a
      // token reads the same K/V from its own chunk as from the cache.
      EXPECT_EQ(d, b) << name << " case " << c.id << ": f16 decode vs prefill";
      const int64_t T = static_cast<int64_t>(c.tokens.size());
      between.Add(Compare(b.data(), a.data(), T, V, gap_min));
      ref16.Add(Compare(b.data(), ref.data.data() + c.row_offset * V, T, V, 0.05));
      gold32.Add(Compare(a.data(), gold.data.data() + c.row_offset * V, T, V, 0.5));
      gold16.Add(Compare(b.data(), gold.data.data() + c.row_offset * V, T, V, 0.5));
    }
    const std::string what = name + (exact ? " exact" : " fast");
    Report(what + ": f16 vs f32 cache", between);
    Report(what + ": f32 cache vs " + golden, gold32);
    Report(what + ": f16 cache vs " + golden, gold16);
    EXPECT_EQ(between.argmax_equal, between.argmax_checked) << what << ": " << between.ToString();
    if (exact) {
      Report(what + ": f16 cache vs ref", ref16);
      EXPECT_LE(between.max_abs, 0.1) << what << ": " << between.ToString();
      EXPECT_LE(between.mean_abs(), 0.01) << what << ": " << between.ToString();
      EXPECT_LE(ref16.max_abs, 0.1) << what << " vs ref: " << ref16.ToString();
      EXPECT_LE(ref16.mean_abs(), 0.01) << what << " vs ref: " << ref16.ToString();
      EXPECT_EQ(ref16.argmax_equal, ref16.argmax_checked) << what << " vs ref: " << ref16.ToString();
      EXPECT_GT(ref16.argmax_checked, ref16.rows * 3 / 4) << what;  // 52..58 of 59, 48 of 49
    } else {
      EXPECT_LE(between.max_abs, 2.0) << what << ": " << between.ToString();
      EXPECT_LE(between.mean_abs(), 0.2) << what << ": " << between.ToString();
      EXPECT_LE(gold16.mean_abs(), gold32.mean_abs() + 0.02) << what;
    }
  }
}

// /save + /load with an f16 cache: the file holds f32 rows (the format is unchanged), the
// loaded cache holds the same f16 bits, so the continuation is bit-identical to the session
// that never left memory, and saving the loaded session writes the same bytes.
TEST_P(KvF16, SaveLoadContinuesIdentically) {
  const Source src = GetParam();
  const std::string path = Converted(src.variant, src.file);
  ASSERT_FALSE(path.empty());
  auto e = OpenKv(path, ops::MatMulMode::kFast, std::nullopt);
  ASSERT_TRUE(e);
  ExpectSaveLoadContinuesIdentically(*e, TensorType::kF16, LoadOracle(src.variant),
                                     std::string("kv_f16_") + src.variant + "_" + src.file);
}

// A file saved from an f32 cache loads into an f16 session (the rows are rounded), unless a
// value is beyond f16's range: then a one-line error, and an f32 session still loads it.
// A session saved before any token (no tokens, no K/V rows) loads as an empty session that
// then works like a fresh one (the fuzzer found the empty token list once).
TEST_P(KvF16, EmptySessionSavesAndLoads) {
  const Source src = GetParam();
  const Oracle& o = LoadOracle(src.variant);
  const std::string path = Converted(src.variant, src.file);
  ASSERT_FALSE(path.empty());
  auto e16 = OpenKv(path, ops::MatMulMode::kFast, TensorType::kF16);
  ASSERT_TRUE(e16);
  runtime::Session a(*e16);
  const std::string f = ScratchDir() + "/kv_empty_" + src.variant + "_" + src.file + ".session";
  ASSERT_TRUE(runtime::SaveSessionFile(f, a, nlohmann::json::object()).ok());
  runtime::Session b(*e16), fresh(*e16);
  ASSERT_TRUE(b.Prefill(o.cases.front().tokens, nullptr).ok());  // replaced by the load
  auto r = runtime::LoadSessionFile(f, &b, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(b.position(), 0);
  std::vector<float> lb, lf;
  ASSERT_TRUE(b.Prefill(o.cases.front().tokens, &lb).ok());
  ASSERT_TRUE(fresh.Prefill(o.cases.front().tokens, &lf).ok());
  EXPECT_EQ(lb, lf);
}

TEST_P(KvF16, F32FileIntoF16SessionChecksTheRange) {
  const Source src = GetParam();
  const std::string path = Converted(src.variant, src.file);
  ASSERT_FALSE(path.empty());
  // 70000: f16's largest finite value is 65504.
  ExpectF32FileRangeChecked(path, TensorType::kF16, 70000.0f, "f16 range", LoadOracle(src.variant),
                            std::string("kv_f32_") + src.variant + "_" + src.file);
}

INSTANTIATE_TEST_SUITE_P(Gguf, KvF16,
                         ::testing::Values(Source{"tiny-e2b", "model-q8_0.gguf"}, Source{"tiny-e2b", "model-q4_0.gguf"},
                                           Source{"tiny-e4b", "model-q8_0.gguf"},
                                           Source{"tiny-e4b", "model-q4_0.gguf"}));

}  // namespace kv_f16_test
}  // namespace gemlet::oracle
