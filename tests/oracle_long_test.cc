// The long-context oracle (../shared/oracle/long/README.md): the tiny-e2b model on prompts of
// 32,768 and 131,072 tokens, golden logits at 16 positions each with HF's float32 RoPE angles
// (`ref-hf`, normative), and greedy continuations. What it checks that the short oracle cannot:
// RoPE at large positions, a long full-attention KV cache, a sliding window that has slid
// thousands of times, chunked prefill and decode at depth.
//
// LongOracle32k runs in the release stage only (ctest label `long`, gemlet_oracle_long); the
// 131,072-token case and the reduced caches at full 32k depth (LongOracle128k, label
// `long128k`) are slower and run on their own (-DGEMLET_LONG_128K=ON; tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/mapped_file.h"
#include "format/npy.h"
#include "runtime/engine.h"
#include "runtime/session.h"
#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace oracle_long_test {

struct LongCase {
  std::string name;
  std::vector<int32_t> tokens;
  std::vector<int64_t> positions;
  std::vector<double> gaps;  // gaps_hf
  int64_t row_offset = 0;
  int64_t greedy_prefix = 0;
  std::vector<int32_t> greedy_tokens;  // greedy.hf
  std::vector<double> greedy_gaps;
};

const std::string& LongDir() {
  static const std::string d = OracleDir() + "long/";
  return d;
}

LongCase LoadLongCase(const std::string& name) {
  auto text = ReadFileToString(LongDir() + "cases.json");
  GEMLET_CHECK_MSG(text.ok(), "oracle/long/cases.json is readable");
  const auto j = nlohmann::json::parse(*text);
  for (const auto& c : j["cases"]) {
    if (c["name"] != name) continue;
    LongCase k;
    k.name = name;
    auto ids = ReadNpyIds(LongDir() + c["tokens_file"].get<std::string>());
    GEMLET_CHECK_MSG(ids.ok(), "the long oracle's tokens are readable");
    k.tokens = std::move(*ids);
    k.positions = c["positions"].get<std::vector<int64_t>>();
    k.gaps = c["gaps_hf"].get<std::vector<double>>();
    k.row_offset = c["row_offset"].get<int64_t>();
    k.greedy_prefix = c["greedy"]["prefix_len"].get<int64_t>();
    k.greedy_tokens = c["greedy"]["hf"]["tokens"].get<std::vector<int32_t>>();
    k.greedy_gaps = c["greedy"]["hf"]["gaps"].get<std::vector<double>>();
    GEMLET_CHECK_MSG(static_cast<int64_t>(k.tokens.size()) == c["length"].get<int64_t>(), "the case's length");
    return k;
  }
  GEMLET_CHECK_MSG(false, "a case of oracle/long/cases.json");
  return {};
}

const NpyArray& GoldenHf() {
  static const NpyArray a = [] {
    auto r = ReadNpy(LongDir() + "logits-ref-hf.npy");
    GEMLET_CHECK_MSG(r.ok(), "oracle/long/logits-ref-hf.npy is readable");
    return std::move(*r);
  }();
  return a;
}

std::unique_ptr<runtime::Engine> OpenLong(TensorType kv, int threads = 2) {
  runtime::EngineOptions eo;
  eo.threads = threads;
  eo.mode = ops::MatMulMode::kExact;
  eo.kv_type = kv;
  auto e = runtime::Engine::Open(Converted("tiny-e2b", "model.safetensors"), eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

// Prefills the first `n` tokens of the case in chunks of `chunk`, returning the logits at the
// golden positions below n [rows, V] (computed only there: Session::PrefillRows).
std::vector<float> PrefillAtGolden(runtime::Session& s, const LongCase& c, int64_t n, int64_t chunk) {
  std::vector<int64_t> rows;
  for (int64_t p : c.positions) {
    if (p < n) rows.push_back(p);
  }
  s.set_prefill_chunk(chunk);
  std::vector<float> logits(rows.size() * 512);
  const Status st = s.PrefillRows(std::span<const int32_t>(c.tokens.data(), n), rows, logits.data());
  EXPECT_TRUE(st.ok()) << st.ToString();
  return logits;
}

// The approximate tier of the long README (f16 KV): max ≤ 0.1, mean ≤ 1e-2, argmax where the
// gap > 0.1. 8-bit K/V (q8: ggml's q8_0 blocks of 32 along each row, after k_norm + RoPE, as
// llama.cpp stores its cache, scored with the queries in int8 blocks as llama.cpp does) is
// outside that tier by its nature, not by a defect: measured on the golden rows below 8192,
// gemlet lands at max 0.22 / mean 3.6e-2 and llama.cpp v0.5.0 with
// `type_k = type_v = q8_0` (flash attention, f32 weights, the same tokens) at 0.211 / 3.6e-2
// (f16 cache: 1.1e-2 / 1.4e-3; f32: 7.9e-3 / 1.0e-3, the README's figure), every argmax equal
// in both. The tiny model's random weights make every 8-bit rounding show (the short oracle's
// int8 activations move its logits by 0.77). q8 is held to its own tier, about twice what
// both engines reach: max ≤ 0.4, mean ≤ 6e-2, argmax where the gap > 0.4.
struct Tier {
  double max_abs, mean_abs, gap;
};
constexpr Tier kApproximate{0.1, 1e-2, 0.1}, kQ8Kv{0.4, 6e-2, 0.4};

void ExpectTier(const Stats& s, const Tier& t, const std::string& what) {
  EXPECT_LE(s.max_abs, t.max_abs) << what << ": " << s.ToString();
  EXPECT_LE(s.mean_abs(), t.mean_abs) << what << ": " << s.ToString();
  EXPECT_EQ(s.argmax_equal, s.argmax_checked) << what << ": " << s.ToString();
}

// Greedy decoding of `steps` tokens after what the session holds, from `last` [V] (the logits
// of its last position); checks the tokens against greedy.hf until the first step whose golden
// gap is below `gap_min`.
void ExpectGreedy(runtime::Session& s, std::vector<float> last, const LongCase& c, double gap_min,
                  const std::string& what) {
  const int64_t V = 512;
  for (size_t i = 0; i < c.greedy_tokens.size(); ++i) {
    const int32_t tok = static_cast<int32_t>(TopGap(last.data(), V).first);
    EXPECT_EQ(tok, c.greedy_tokens[i]) << what << ": greedy step " << i;
    if (tok != c.greedy_tokens[i] || c.greedy_gaps[i] < gap_min) break;
    if (i + 1 == c.greedy_tokens.size()) break;
    ASSERT_TRUE(s.Decode(tok, &last).ok());
  }
}

// The exact path with an f32 cache within the exact tier at every golden position, greedy
// equal; chunked prefill, one-pass prefill and token-by-token decode bit-identical at depth
// (sharing the first 28,672 positions through a fork, so the prompt is prefilled about once).
TEST(LongOracle32k, ExactTierAndPrefillChunkedDecodeAgreeAtDepth) {
  const LongCase c = LoadLongCase("e2b-32k");
  const int64_t T = static_cast<int64_t>(c.tokens.size()), V = 512, G = static_cast<int64_t>(c.positions.size());
  const float* gold = GoldenHf().data.data() + c.row_offset * V;
  auto engine = OpenLong(TensorType::kF32);
  ASSERT_NE(engine, nullptr);
  runtime::SessionOptions so;
  so.context_limit = T + static_cast<int64_t>(c.greedy_tokens.size());
  const std::span<const int32_t> ids(c.tokens);

  // Positions [0, 28672) in chunks of 4096, the golden rows among them computed on the way.
  auto t0 = std::chrono::steady_clock::now();
  const int64_t split = T - 4096;
  runtime::Session chunked(*engine, so);
  std::vector<float> got = PrefillAtGolden(chunked, c, split, 4096);
  // The rest: in chunks of 1000 here (not aligned with anything) and as one chunk of 4096 in a
  // fork; the golden rows past the split are 32766 and 32767.
  auto whole = chunked.Fork();
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  const std::vector<int64_t> tail_rows = {T - 2 - split, T - 1 - split};
  std::vector<float> tail(2 * V), tail_whole(2 * V);
  chunked.set_prefill_chunk(1000);
  ASSERT_TRUE(chunked.PrefillRows(ids.subspan(split), tail_rows, tail.data()).ok());
  (*whole)->set_prefill_chunk(4096);
  ASSERT_TRUE((*whole)->PrefillRows(ids.subspan(split), tail_rows, tail_whole.data()).ok());
  std::printf("[long] e2b-32k prefill (exact, f32 KV, 2 threads) and the last 4096 twice: %.1f s\n", SecondsSince(t0));
  got.insert(got.end(), tail.begin(), tail.end());
  ASSERT_EQ(static_cast<int64_t>(got.size()), G * V);
  EXPECT_EQ(std::memcmp(tail.data(), tail_whole.data(), 2 * V * sizeof(float)), 0)
      << "chunks of 1000 vs one chunk of 4096 at positions 32766-32767";

  const Stats st = Compare(got.data(), gold, G, V);
  Report("long e2b-32k exact f32 KV vs ref-hf", st);
  ExpectExactTier(st, "e2b-32k exact f32 KV");

  // Token-by-token decode of the last 8 positions, from a fork 8 back (within the rings'
  // rollback, so the cut is in place): bit-identical to the prefill at 32766 and 32767.
  {
    auto dec = (*whole)->Fork(T - 8);
    ASSERT_TRUE(dec.ok()) << dec.status().ToString();
    std::vector<float> last;
    for (int64_t p = T - 8; p < T; ++p) {
      ASSERT_TRUE((*dec)->Decode(c.tokens[p], &last).ok());
      if (p == T - 2) {
        EXPECT_EQ(std::memcmp(last.data(), tail.data(), V * sizeof(float)), 0) << "decode at " << p;
      }
    }
    EXPECT_EQ(std::memcmp(last.data(), tail.data() + V, V * sizeof(float)), 0) << "decode at " << T - 1;
  }
  // Greedy after the whole prompt: the first token is the argmax of the last row.
  ASSERT_EQ(c.greedy_prefix, T);
  ExpectGreedy(chunked, std::vector<float>(got.end() - V, got.end()), c, 2e-3, "e2b-32k greedy");
  std::printf("[long] e2b-32k total: %.1f s\n", SecondsSince(t0));
}

// The reduced-precision caches (f16: the approximate tier; q8: its own tier, kQ8Kv) at
// the golden positions below 8192
// (the full depth costs 16 times as much; the 128k test's configuration runs it there).
void ExpectReducedCaches(int64_t depth) {
  const LongCase c = LoadLongCase("e2b-32k");
  const int64_t V = 512;
  const float* gold = GoldenHf().data.data() + c.row_offset * V;
  int64_t G = 0;
  while (G < static_cast<int64_t>(c.positions.size()) && c.positions[G] < depth) ++G;
  for (TensorType kv : {TensorType::kF16, TensorType::kQ8}) {
    auto e = OpenLong(kv);
    ASSERT_NE(e, nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    runtime::SessionOptions so;
    so.context_limit = depth + static_cast<int64_t>(c.greedy_tokens.size());
    runtime::Session s(*e, so);
    const std::vector<float> r = PrefillAtGolden(s, c, depth, 4096);
    std::printf("[long] e2b-32k prefill of %lld (exact, %s KV): %.1f s\n", static_cast<long long>(depth),
                TensorTypeName(kv), SecondsSince(t0));
    const Tier& tier = kv == TensorType::kF16 ? kApproximate : kQ8Kv;
    const Stats sr = Compare(r.data(), gold, G, V, tier.gap);
    Report(std::string("long e2b-32k to ") + std::to_string(depth) + " exact " + TensorTypeName(kv) + " KV vs ref-hf",
           sr);
    ExpectTier(sr, tier, std::string("e2b-32k ") + TensorTypeName(kv) + " KV");
    if (depth == static_cast<int64_t>(c.tokens.size())) {
      ExpectGreedy(s, std::vector<float>(r.end() - V, r.end()), c, tier.gap, std::string("greedy ") + TensorTypeName(kv));
    }
  }
}

TEST(LongOracle32k, ReducedCachesToDepth8192) { ExpectReducedCaches(8192); }

TEST(LongOracle128k, ReducedCachesAtFullDepth32k) { ExpectReducedCaches(32768); }

// The whole context of the model: positions 0 … 131071, the exact tier at every golden
// position, greedy from the 131064-token prefix equal.
TEST(LongOracle128k, ExactTierAtTheLastPosition) {
  const LongCase c = LoadLongCase("e2b-128k");
  const int64_t T = static_cast<int64_t>(c.tokens.size()), V = 512, G = static_cast<int64_t>(c.positions.size());
  const float* gold = GoldenHf().data.data() + c.row_offset * V;
  auto engine = OpenLong(TensorType::kF32);
  ASSERT_NE(engine, nullptr);
  runtime::SessionOptions so;
  so.context_limit = T;
  auto t0 = std::chrono::steady_clock::now();
  runtime::Session s(*engine, so);
  // The greedy prefix first (rows below it), then the last 8 tokens one by one (decode at the
  // end of the context), which gives the last golden rows and checks decode against the oracle.
  // The rows: the golden positions below the prefix, and the prefix's last (greedy starts there).
  std::vector<int64_t> rows;
  for (int64_t p : c.positions) {
    if (p < c.greedy_prefix) rows.push_back(p);
  }
  ASSERT_LT(rows.back(), c.greedy_prefix - 1);
  rows.push_back(c.greedy_prefix - 1);
  std::vector<float> got(rows.size() * V);
  s.set_prefill_chunk(8192);
  ASSERT_TRUE(s.PrefillRows(std::span<const int32_t>(c.tokens.data(), c.greedy_prefix), rows, got.data()).ok());
  std::printf("[long] e2b-128k prefill of %lld tokens: %.1f s\n", static_cast<long long>(c.greedy_prefix),
              SecondsSince(t0));
  const std::vector<float> prefix_last(got.end() - V, got.end());
  got.resize(got.size() - V);
  // Greedy from the prefix, in a fork (the cut of the continuation is then within the rollback).
  {
    auto fork = s.Fork();
    ASSERT_TRUE(fork.ok());
    ExpectGreedy(**fork, prefix_last, c, 2e-3, "e2b-128k greedy");
  }
  std::vector<float> last;
  for (int64_t p = c.greedy_prefix; p < T; ++p) {
    ASSERT_TRUE(s.Decode(c.tokens[p], &last).ok());
    const auto it = std::find(c.positions.begin(), c.positions.end(), p);
    if (it != c.positions.end()) got.insert(got.end(), last.begin(), last.end());
  }
  ASSERT_EQ(static_cast<int64_t>(got.size()), G * V);
  std::printf("[long] e2b-128k total: %.1f s\n", SecondsSince(t0));
  const Stats st = Compare(got.data(), gold, G, V);
  Report("long e2b-128k exact f32 KV vs ref-hf", st);
  ExpectExactTier(st, "e2b-128k exact f32 KV");
  // The context is full: one more token is refused, and nothing changed.
  EXPECT_EQ(s.position(), T);
  EXPECT_FALSE(s.Decode(c.tokens[0], &last).ok());
  EXPECT_EQ(s.position(), T);
}

}  // namespace oracle_long_test
}  // namespace gemlet::oracle
