// Session::Truncate and Session::Fork on the oracle checkpoints, and EngineModel steps: a
// session rolled back to n tokens and fed the same tokens again gives the logits of a fresh
// session bit for bit, before and after the sliding window wraps, within the rollback margin
// (cut in place) and beyond it (prefilled again); a fork continues exactly as the original; a
// step of several sessions gives each the logits it gets alone. f32, f16 and q8 caches.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "runtime/engine_model.h"
#include "runtime/kv_cache.h"
#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace session_truncate_test {

std::unique_ptr<runtime::Engine> Open(const std::string& variant, ops::MatMulMode mode, TensorType kv) {
  runtime::EngineOptions eo;
  eo.threads = 2;
  eo.mode = mode;
  eo.kv_type = kv;
  auto e = runtime::Engine::Open(Converted(variant, "model.safetensors"), eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? std::move(*e) : nullptr;
}

std::vector<int32_t> Tokens(int64_t n, int64_t V, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng() % V);
  return t;
}

// The logits after each of tokens[from, to), fed one at a time after tokens[0, from).
std::vector<float> Continue(runtime::Session& s, const std::vector<int32_t>& tokens, int64_t to) {
  std::vector<float> all, lg;
  for (int64_t i = s.position(); i < to; ++i) {
    EXPECT_TRUE(s.Decode(tokens[i], &lg).ok());
    all.insert(all.end(), lg.begin(), lg.end());
  }
  return all;
}

struct KvCase {
  const char* variant;
  ops::MatMulMode mode;
  TensorType kv;
};
void PrintTo(const KvCase& c, std::ostream* os) {
  *os << c.variant << " " << ops::MatMulModeName(c.mode) << " " << TensorTypeName(c.kv);
}

class SessionRollback : public ::testing::TestWithParam<KvCase> {};

TEST_P(SessionRollback, TruncateThenRefeedEqualsFresh) {
  const KvCase kc = GetParam();
  auto engine = Open(kc.variant, kc.mode, kc.kv);
  ASSERT_NE(engine, nullptr);
  const int64_t V = engine->config().vocab_size, W = engine->config().sliding_window;
  const int64_t m = 3 * W + 7;  // the rings wrap several times
  const auto tokens = Tokens(m, V, 5);
  // The reference: a fresh session fed every token one at a time.
  runtime::Session fresh(*engine, runtime::SessionOptions{256, 64});
  std::vector<float> first;
  ASSERT_TRUE(fresh.Prefill(std::span<const int32_t>(tokens.data(), 1), &first).ok());
  const std::vector<float> ref = Continue(fresh, tokens, m);  // rows for positions 1 … m − 1
  auto ref_after = [&](int64_t n) { return std::vector<float>(ref.begin() + (n - 1) * V, ref.end()); };

  std::mt19937 rng(7);
  std::vector<int64_t> cuts = {m - 1, m - runtime::kKvRollback, m - runtime::kKvRollback - 1, W / 2, 1};
  for (int i = 0; i < 6; ++i) cuts.push_back(1 + static_cast<int64_t>(rng() % (m - 1)));
  runtime::Session s(*engine, runtime::SessionOptions{256, 32});
  ASSERT_TRUE(s.Prefill(tokens, nullptr).ok());
  for (int64_t n : cuts) {
    ASSERT_TRUE(s.Truncate(n).ok());
    ASSERT_EQ(s.position(), n);
    ASSERT_EQ(s.history(), std::vector<int32_t>(tokens.begin(), tokens.begin() + n));
    EXPECT_EQ(Continue(s, tokens, m), ref_after(n)) << "truncated from " << m << " to " << n;
  }
  // Before the window wraps: a short session cut back to its start.
  ASSERT_TRUE(s.Truncate(W / 2).ok());
  EXPECT_EQ(Continue(s, tokens, W - 1), std::vector<float>(ref.begin() + (W / 2 - 1) * V, ref.begin() + (W - 2) * V));
  ASSERT_TRUE(s.Truncate(0).ok());
  EXPECT_EQ(s.position(), 0);
}

TEST_P(SessionRollback, ForkContinuesAsTheOriginal) {
  const KvCase kc = GetParam();
  auto engine = Open(kc.variant, kc.mode, kc.kv);
  ASSERT_NE(engine, nullptr);
  const int64_t V = engine->config().vocab_size, W = engine->config().sliding_window;
  const auto tokens = Tokens(2 * W + 9, V, 9);
  runtime::Session s(*engine, runtime::SessionOptions{256, 64});
  runtime::SamplerOptions so;
  so.temperature = 0.8;
  so.seed = 42;
  s.set_sampler(so);
  std::vector<float> lg;
  ASSERT_TRUE(s.Prefill(std::span<const int32_t>(tokens.data(), W + 3), &lg).ok());
  (void)s.sampler().Sample(lg, s.history());  // the RNG has moved
  auto fork = s.Fork();
  ASSERT_TRUE(fork.ok());
  auto prefix = s.Fork(W);  // a fork of a prefix
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ((*prefix)->position(), W);
  const auto a = Continue(s, tokens, static_cast<int64_t>(tokens.size()));
  const auto b = Continue(**fork, tokens, static_cast<int64_t>(tokens.size()));
  EXPECT_EQ(a, b);
  EXPECT_EQ(s.sampler().Sample(lg, s.history()), (*fork)->sampler().Sample(lg, (*fork)->history()));
  const auto c = Continue(**prefix, tokens, static_cast<int64_t>(tokens.size()));
  ASSERT_EQ(c.size(), a.size() + 3 * V);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), c.begin() + 3 * V));
}

// One EngineModel step of several sessions (decode rows, a prefill chunk, verify rows) gives
// each the logits it gets alone; a step that fails (context limit) changes no session.
TEST_P(SessionRollback, EngineModelStepsEqualSessionsAlone) {
  const KvCase kc = GetParam();
  auto engine = Open(kc.variant, kc.mode, kc.kv);
  ASSERT_NE(engine, nullptr);
  const int64_t V = engine->config().vocab_size;
  runtime::EngineModel model(*engine, runtime::SessionOptions{64, 64});
  std::vector<std::vector<int32_t>> streams;
  for (int i = 0; i < 3; ++i) streams.push_back(Tokens(40, V, 20 + i));
  std::vector<std::vector<float>> ref;  // logits after every token, alone
  for (const auto& t : streams) {
    runtime::Session s(*engine, runtime::SessionOptions{64, 64});
    std::vector<float> lg;
    ASSERT_TRUE(s.Prefill(std::span<const int32_t>(t.data(), 1), &lg).ok());
    auto rest = Continue(s, t, 40);
    lg.insert(lg.end(), rest.begin(), rest.end());
    ref.push_back(lg);
  }
  std::vector<std::unique_ptr<runtime::Sequence>> seqs;
  for (int i = 0; i < 3; ++i) seqs.push_back(std::move(model.NewSequence()).value());
  // Steps: (sequence, tokens, logits) parts.
  const std::vector<std::vector<std::pair<int, int64_t>>> plan = {
      {{0, 20}}, {{0, 1}, {1, 13}}, {{0, 1}, {1, 1}, {2, 30}}, {{0, 4}, {1, 1}, {2, 1}}, {{1, 9}, {2, 2}}};
  std::vector<int64_t> fed(3, 0);
  for (const auto& step : plan) {
    std::vector<runtime::StepPart> parts;
    for (const auto& [i, n] : step) {
      parts.push_back({seqs[i].get(), std::span<const int32_t>(streams[i].data() + fed[i], n), true});
    }
    std::vector<float> logits(parts.size() * V);
    ASSERT_TRUE(model.Step(parts, logits).ok());
    for (size_t k = 0; k < step.size(); ++k) {
      const auto [i, n] = step[k];
      fed[i] += n;
      EXPECT_TRUE(std::equal(logits.begin() + k * V, logits.begin() + (k + 1) * V, ref[i].begin() + (fed[i] - 1) * V))
          << "sequence " << i << " after " << fed[i] << " tokens";
      EXPECT_EQ(seqs[i]->length(), fed[i]);
    }
  }
  // Over the limit (64) for sequence 2: nothing moves.
  std::vector<int32_t> many(40, 3);
  std::vector<runtime::StepPart> parts = {{seqs[0].get(), std::span<const int32_t>(many.data(), 1), true},
                                          {seqs[2].get(), many, true}};
  std::vector<float> logits(2 * V);
  const Status st = model.Step(parts, logits);
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange) << st.ToString();
  EXPECT_EQ(seqs[0]->length(), fed[0]);
  EXPECT_EQ(seqs[2]->length(), fed[2]);
}

INSTANTIATE_TEST_SUITE_P(Kv, SessionRollback,
                         ::testing::Values(KvCase{"tiny-e2b", ops::MatMulMode::kExact, TensorType::kF32},
                                           KvCase{"tiny-e2b", ops::MatMulMode::kFast, TensorType::kF16},
                                           KvCase{"tiny-e4b", ops::MatMulMode::kFast, TensorType::kQ8},
                                           KvCase{"tiny-e4b", ops::MatMulMode::kExact, TensorType::kF32}));

}  // namespace session_truncate_test
}  // namespace gemlet::oracle
