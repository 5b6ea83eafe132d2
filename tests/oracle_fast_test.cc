// The fast path (int8 activations × q8 / q4 weights, ops::MatMulMode::kFast) against
// llama.cpp's logits of the same GGUF (../shared/oracle, `llama-q8_0` / `llama-q4_0`),
// imported with --plan keep (q4 matrices land interleaved as kQ4x8), and the safetensors
// converted with the default plan (what users get: llama.cpp's Q4_0 blocks in every matrix but
// per_layer_model_proj, which is q8 where llama.cpp keeps F32; tests/convert_oracle_test.cc)
// against `llama-q4_0`. Tolerances are the
// "reduced-precision activations" tier of ../shared/oracle/README.md: max |Δ| ≤ 2.0,
// p99 ≤ 0.7, mean ≤ 0.2, argmax equal wherever the golden gap is above 0.5, and the greedy
// continuation equal to llama.cpp's at every step whose golden gap is at least 0.5 (fed
// llama.cpp's tokens, so the contexts stay the same past a near-tie) — with and without the
// prefill skip of the KV-shared layers, which must not change a logit.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace oracle_fast_test {

struct FastSource {
  const char* variant;
  const char* file;    // GGUF in the variant folder, or model.safetensors
  const char* golden;  // llama.cpp logits of that file (for model.safetensors: of the GGUF of the plan's type)
  const char* plan = "keep";
};

std::string Name(const FastSource& s) {
  return std::string(s.variant) + " " + s.file + " (" + s.plan + ") vs " + s.golden;
}
void PrintTo(const FastSource& s, std::ostream* os) { *os << Name(s); }

std::unique_ptr<runtime::Engine> OpenFast(const std::string& path, int threads) {
  runtime::EngineOptions eo;
  eo.threads = threads;
  eo.mode = ops::MatMulMode::kFast;
  auto e = runtime::Engine::Open(path, eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

// The 99th percentile of |got − gold| over every value.
double P99Abs(const std::vector<float>& got, const float* gold) {
  std::vector<double> d(got.size());
  for (size_t i = 0; i < got.size(); ++i) d[i] = std::abs(static_cast<double>(got[i]) - gold[i]);
  const size_t k = std::min(d.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(d.size())));
  std::nth_element(d.begin(), d.begin() + k, d.end());
  return d[k];
}

void ExpectInt8Tier(const Stats& s, double p99, const std::string& what) {
  EXPECT_LE(s.max_abs, 2.0) << what << ": " << s.ToString();
  EXPECT_LE(p99, 0.7) << what << ": p99 " << p99;
  EXPECT_LE(s.mean_abs(), 0.2) << what << ": " << s.ToString();
  EXPECT_EQ(s.argmax_equal, s.argmax_checked) << what << ": " << s.ToString();
}

class OracleFast : public ::testing::TestWithParam<FastSource> {};

// Every position's logits, in one prefill and token by token, with 1 and 2 threads.
TEST_P(OracleFast, LogitsWithinInt8Tier) {
  const FastSource src = GetParam();
  const Oracle& o = LoadOracle(src.variant);
  const NpyArray& gold = Golden(src.variant, src.golden);
  const std::string path = Converted(src.variant, src.file, src.plan);
  ASSERT_FALSE(path.empty());
  for (int threads : {1, 2}) {
    auto engine = OpenFast(path, threads);
    ASSERT_NE(engine, nullptr);
    const int64_t V = engine->config().vocab_size;
    ASSERT_EQ(gold.shape, (std::vector<int64_t>{o.rows, V}));
    std::vector<float> all, prefill_all;
    for (int64_t chunk : {0, 1}) {
      Stats total;
      all.clear();
      for (const Case& c : o.cases) {
        runtime::Session session(*engine);
        const std::vector<float> got = RunAllRows(session, c.tokens, chunk);
        const int64_t T = static_cast<int64_t>(c.tokens.size());
        total.Add(Compare(got.data(), gold.data.data() + c.row_offset * V, T, V, /*gap_min=*/0.5));
        all.insert(all.end(), got.begin(), got.end());
      }
      const double p99 = P99Abs(all, gold.data.data());
      const std::string what = Name(src) + (chunk ? " decode" : " prefill") + " t" + std::to_string(threads);
      ExpectInt8Tier(total, p99, what);
      Report(what + " p99 " + std::to_string(p99).substr(0, 5), total);
      // Per-row math does not depend on the batching nor the threads: prefill == decode.
      if (chunk == 0 && threads == 1) prefill_all = all;
      if (!prefill_all.empty()) {
        EXPECT_EQ(all, prefill_all) << what << " vs prefill, 1 thread";
      }
    }
  }
}

// The prefill skip changes no logit: the last row with the skip, without it, and from an
// all-rows prefill are bit-identical.
TEST_P(OracleFast, PrefillSkipIsLogitIdentical) {
  const FastSource src = GetParam();
  const Oracle& o = LoadOracle(src.variant);
  const std::string path = Converted(src.variant, src.file, src.plan);
  ASSERT_FALSE(path.empty());
  auto engine = OpenFast(path, 2);
  ASSERT_NE(engine, nullptr);
  const int64_t V = engine->config().vocab_size;
  for (const Case& c : o.cases) {
    std::vector<float> skip, noskip, all;
    runtime::SessionOptions so;
    so.prefill_chunk = 1 << 20;
    runtime::Session a(*engine, so);
    ASSERT_TRUE(a.Prefill(c.tokens, &skip).ok());
    so.skip_shared_rows = false;
    runtime::Session b(*engine, so);
    ASSERT_TRUE(b.Prefill(c.tokens, &noskip).ok());
    runtime::Session d(*engine, so);
    ASSERT_TRUE(d.Prefill(c.tokens, &all, /*all_rows=*/true).ok());
    ASSERT_EQ(skip.size(), static_cast<size_t>(V));
    EXPECT_EQ(skip, noskip) << Name(src) << " case " << c.id;
    EXPECT_TRUE(std::equal(skip.begin(), skip.end(), all.end() - V)) << Name(src) << " case " << c.id;
    // The K/V the skipping prefill stored serve the next token alike.
    std::vector<float> next_a, next_b;
    ASSERT_TRUE(a.Decode(c.tokens.back(), &next_a).ok());
    ASSERT_TRUE(b.Decode(c.tokens.back(), &next_b).ok());
    EXPECT_EQ(next_a, next_b) << Name(src) << " case " << c.id;
  }
}

// Greedy continuation (prefill, then one decode per token) equals llama.cpp's at every step
// whose golden gap is at least 0.5, with and without the prefill skip. The session is fed
// llama.cpp's greedy tokens (not its own), so that after a near-tie the two still continue the
// same context and every later step is compared; at least half of all steps must be.
TEST_P(OracleFast, GreedyFollowsLlama) {
  const FastSource src = GetParam();
  const Oracle& o = LoadOracle(src.variant);
  const std::string path = Converted(src.variant, src.file, src.plan);
  ASSERT_FALSE(path.empty());
  auto engine = OpenFast(path, 2);
  ASSERT_NE(engine, nullptr);
  const int64_t V = engine->config().vocab_size;
  const std::string golden_src = src.golden;  // "llama-q8_0" names the greedy source too
  for (bool skip : {true, false}) {
    size_t checked = 0, steps = 0;
    for (const Case& c : o.cases) {
      const Greedy& g = c.greedy.at(golden_src);
      ASSERT_EQ(g.tokens.size(), g.gaps.size());
      runtime::SessionOptions so;
      so.skip_shared_rows = skip;
      runtime::Session s(*engine, so);
      std::vector<float> logits;
      ASSERT_TRUE(s.Prefill(c.tokens, &logits).ok());
      for (size_t i = 0; i < g.tokens.size(); ++i) {
        if (g.gaps[i] >= 0.5) {
          const int32_t next = static_cast<int32_t>(TopGap(logits.data(), V).first);
          ASSERT_EQ(next, g.tokens[i]) << Name(src) << " case " << c.id << " step " << i << " skip " << skip;
          ++checked;
        }
        ++steps;
        ASSERT_TRUE(s.Decode(g.tokens[i], &logits).ok());
      }
    }
    std::printf("[oracle] %s: greedy equal at %zu of %zu steps (skip %d)\n", Name(src).c_str(), checked, steps,
                skip);
    EXPECT_GE(checked, steps / 2) << Name(src) << ": too few steps compared";
    EXPECT_GE(steps, o.cases.size() * 32) << Name(src);
  }
}

INSTANTIATE_TEST_SUITE_P(Gguf, OracleFast,
                         ::testing::Values(FastSource{"tiny-e2b", "model-q8_0.gguf", "llama-q8_0"},
                                           FastSource{"tiny-e2b", "model-q4_0.gguf", "llama-q4_0"},
                                           FastSource{"tiny-e4b", "model-q8_0.gguf", "llama-q8_0"},
                                           FastSource{"tiny-e4b", "model-q4_0.gguf", "llama-q4_0"},
                                           FastSource{"tiny-e2b", "model.safetensors", "llama-q4_0", "default"},
                                           FastSource{"tiny-e4b", "model.safetensors", "llama-q4_0", "default"}));

}  // namespace oracle_fast_test
}  // namespace gemlet::oracle
