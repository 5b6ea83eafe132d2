// Sessions over the oracle checkpoints: greedy continuations equal the golden ones (up to
// the first near-tie), 1 and 2 threads agree, a session reset and reused gives the logits of
// a fresh one, the context limit is enforced before any work.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "format/gemlet_writer.h"
#include "runtime/generate.h"
#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace oracle_session_test {

struct GreedySource {
  const char* variant;
  const char* file;
  const char* golden;  // greedy source in cases.json
};
void PrintTo(const GreedySource& s, std::ostream* os) { *os << s.variant << " " << s.file; }

class OracleGreedy : public ::testing::TestWithParam<GreedySource> {};

// 32 greedy tokens after each case (prefill, then one decode step per token through the KV
// cache) equal the golden ones up to the first step whose golden top-1/top-2 gap is < 2e-3.
TEST_P(OracleGreedy, ContinuationMatches) {
  const GreedySource src = GetParam();
  const Oracle& o = LoadOracle(src.variant);
  auto engine = OpenEngine(Converted(src.variant, src.file), 2);
  ASSERT_NE(engine, nullptr);
  int64_t compared = 0, total = 0;
  for (const Case& c : o.cases) {
    const Greedy& g = c.greedy.at(src.golden);
    runtime::Session session(*engine, runtime::SessionOptions{256, 64});
    runtime::SamplerOptions greedy;
    greedy.temperature = 0;
    session.set_sampler(greedy);
    runtime::GenerateOptions go;
    go.max_tokens = static_cast<int64_t>(g.tokens.size());
    go.stop_at_eog = false;  // the golden runs ignore stop tokens
    auto r = runtime::Generate(session, c.tokens, go);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->ids.size(), g.tokens.size());
    size_t upto = g.tokens.size();
    for (size_t i = 0; i < g.gaps.size(); ++i) {
      if (g.gaps[i] < 2e-3) {
        upto = i;
        break;
      }
    }
    for (size_t i = 0; i < upto; ++i) {
      ASSERT_EQ(r->ids[i], g.tokens[i])
          << src.variant << " " << src.file << " case " << c.id << " step " << i;
    }
    compared += static_cast<int64_t>(upto);
    total += static_cast<int64_t>(g.tokens.size());
  }
  std::printf("[oracle] %s %s greedy vs %s: %lld of %lld tokens compared, all equal\n", src.variant, src.file,
              src.golden, static_cast<long long>(compared), static_cast<long long>(total));
  EXPECT_GT(compared, 0);
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, OracleGreedy,
                         ::testing::Values(GreedySource{"tiny-e2b", "model.safetensors", "ref"},
                                           GreedySource{"tiny-e2b", "model-bf16.gguf", "ref"},
                                           GreedySource{"tiny-e2b", "model-f32.gguf", "ref"},
                                           GreedySource{"tiny-e4b", "model.safetensors", "ref"},
                                           GreedySource{"tiny-e4b", "model-bf16.gguf", "ref"},
                                           GreedySource{"tiny-e2b", "model-q8_0.gguf", "ref-q8_0"},
                                           GreedySource{"tiny-e2b", "model-q4_0.gguf", "ref-q4_0"},
                                           GreedySource{"tiny-e4b", "model-q8_0.gguf", "ref-q8_0"},
                                           GreedySource{"tiny-e4b", "model-q4_0.gguf", "ref-q4_0"}));

class OracleSession : public ::testing::TestWithParam<const char*> {};

// One and two threads give bit-identical logits (the work split never changes the arithmetic).
TEST_P(OracleSession, ThreadsAgree) {
  const std::string variant = GetParam();
  const Oracle& o = LoadOracle(variant);
  const std::string path = Converted(variant, "model.safetensors");
  auto e1 = OpenEngine(path, 1);
  auto e2 = OpenEngine(path, 2);
  ASSERT_TRUE(e1 && e2);
  EXPECT_EQ(e1->threads(), 1);
  EXPECT_EQ(e2->threads(), 2);
  const int64_t V = e1->config().vocab_size;
  Stats total;
  for (const Case& c : o.cases) {
    for (int64_t chunk : {0, 1}) {
      runtime::Session s1(*e1, {256, 256}), s2(*e2, {256, 256});
      const auto a = RunAllRows(s1, c.tokens, chunk);
      const auto b = RunAllRows(s2, c.tokens, chunk);
      const Stats d = Compare(a.data(), b.data(), static_cast<int64_t>(c.tokens.size()), V, 0.0);
      EXPECT_EQ(a, b) << "case " << c.id << " chunk " << chunk << ": " << d.ToString();
      total.Add(d);
    }
  }
  Report(variant + " 1 thread vs 2 threads", total);
}

// A session reset and reused for another prompt gives the logits of a fresh session, also
// after its sliding-window rings have wrapped and its full-attention storage has grown.
TEST_P(OracleSession, ResetReuseEqualsFresh) {
  const std::string variant = GetParam();
  const Oracle& o = LoadOracle(variant);
  auto engine = OpenEngine(Converted(variant, "model.safetensors"), 2);
  ASSERT_NE(engine, nullptr);
  const int64_t V = engine->config().vocab_size;
  const Case& longest = o.cases.back();
  runtime::Session reused(*engine, {256, 7});
  std::vector<float> ignored;
  ASSERT_TRUE(reused.Prefill(longest.tokens, &ignored).ok());
  ASSERT_TRUE(reused.Decode(longest.tokens[3], &ignored).ok());
  Stats total;
  for (const Case& c : o.cases) {
    reused.Reset();
    EXPECT_EQ(reused.position(), 0);
    const auto a = RunAllRows(reused, c.tokens, 5);
    runtime::Session fresh(*engine, {256, 5});
    const auto b = RunAllRows(fresh, c.tokens, 5);
    const Stats d = Compare(a.data(), b.data(), static_cast<int64_t>(c.tokens.size()), V, 0.0);
    EXPECT_EQ(d.max_abs, 0.0) << "case " << c.id << ": " << d.ToString();
    total.Add(d);
    // And both match the golden logits.
    ExpectExactTier(Compare(a.data(), Golden(variant, "ref").data.data() + c.row_offset * V,
                            static_cast<int64_t>(c.tokens.size()), V),
                    variant + " reused case " + std::to_string(c.id));
  }
  Report(variant + " reset+reuse vs fresh", total);
}

// Asking only for the last row (the generation path) skips the KV-shared layers for the
// other rows, and whole chunks that need no logits stop at the first KV-shared layer: the
// last row's logits are still the golden ones, bit-identical to an all-rows prefill.
TEST_P(OracleSession, LastRowOnlyInChunks) {
  const std::string variant = GetParam();
  const Oracle& o = LoadOracle(variant);
  auto engine = OpenEngine(Converted(variant, "model.safetensors"), 2);
  ASSERT_NE(engine, nullptr);
  const int64_t V = engine->config().vocab_size;
  for (const Case& c : o.cases) {
    const int64_t T = static_cast<int64_t>(c.tokens.size());
    runtime::Session all(*engine, {256, 256});
    const auto full = RunAllRows(all, c.tokens, 0);
    for (int64_t chunk : {1, 7, 64}) {
      runtime::Session s(*engine, {256, chunk});
      std::vector<float> last;
      ASSERT_TRUE(s.Prefill(c.tokens, &last).ok());
      ASSERT_EQ(static_cast<int64_t>(last.size()), V);
      EXPECT_TRUE(std::equal(last.begin(), last.end(), full.begin() + (T - 1) * V))
          << "case " << c.id << " chunk " << chunk;
      ExpectExactTier(
          Compare(last.data(), Golden(variant, "ref").data.data() + (c.row_offset + T - 1) * V, 1, V),
          variant + " last row, chunk " + std::to_string(chunk));
      // The cache is complete: decoding the next token gives the same logits either way.
      std::vector<float> a, b;
      ASSERT_TRUE(s.Decode(c.tokens[0], &a).ok());
      ASSERT_TRUE(all.Decode(c.tokens[0], &b).ok());
      EXPECT_EQ(a, b) << "case " << c.id << " chunk " << chunk;
      all.Reset();
      RunAllRows(all, c.tokens, 0);
    }
  }
}

// PrefillRows computes only the rows asked for (any of them in any chunk, none in some
// chunks), bit-identical to those rows of an all-rows prefill, and writes nothing beyond them.
TEST_P(OracleSession, SomeRowsOnly) {
  const std::string variant = GetParam();
  const Oracle& o = LoadOracle(variant);
  auto engine = OpenEngine(Converted(variant, "model.safetensors"), 2);
  ASSERT_NE(engine, nullptr);
  const int64_t V = engine->config().vocab_size;
  const Case& c = o.cases.back();
  const int64_t T = static_cast<int64_t>(c.tokens.size());
  runtime::Session all(*engine, {256, 256});
  const auto full = RunAllRows(all, c.tokens, 0);
  const std::vector<int64_t> rows = {0, 1, 16, 17, T - 2, T - 1};
  for (int64_t chunk : {1, 5, 16, 256}) {
    runtime::Session s(*engine, {256, chunk});
    std::vector<float> got((rows.size() + 1) * V, 12345.0f);  // one guard row after them
    ASSERT_TRUE(s.PrefillRows(c.tokens, rows, got.data()).ok());
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_TRUE(std::equal(got.begin() + i * V, got.begin() + (i + 1) * V, full.begin() + rows[i] * V))
          << "row " << rows[i] << " chunk " << chunk;
    }
    EXPECT_TRUE(std::all_of(got.end() - V, got.end(), [](float x) { return x == 12345.0f; })) << "chunk " << chunk;
    EXPECT_EQ(s.position(), T);
  }
}

// The context limit is checked before any work: the session is unchanged afterwards.
TEST_P(OracleSession, ContextLimitBeforeWork) {
  const std::string variant = GetParam();
  const Oracle& o = LoadOracle(variant);
  auto engine = OpenEngine(Converted(variant, "model.safetensors"), 1);
  ASSERT_NE(engine, nullptr);
  const Case& c = o.cases.back();
  const int64_t n = static_cast<int64_t>(c.tokens.size());
  runtime::Session s(*engine, {n, 8});
  std::vector<float> logits;
  ASSERT_TRUE(s.Prefill(c.tokens, &logits).ok());
  Status st = s.Decode(2, &logits);
  EXPECT_EQ(st.code(), ErrorCode::kOutOfRange);
  EXPECT_NE(st.message().find(std::to_string(n)), std::string::npos) << st.message();
  EXPECT_EQ(s.position(), n);

  runtime::Session g(*engine, {n + 4, 8});
  runtime::GenerateOptions go;
  go.max_tokens = 5;  // n + 5 > n + 4
  auto r = runtime::Generate(g, c.tokens, go);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kOutOfRange);
  EXPECT_NE(r.status().message().find(std::to_string(n + 5)), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(std::to_string(n + 4)), std::string::npos) << r.status().message();
  EXPECT_EQ(g.position(), 0) << "nothing was computed";
  // Token ids outside the vocabulary are an error, not a crash.
  runtime::Session b(*engine, {16, 8});
  const std::vector<int32_t> bad = {2, static_cast<int32_t>(engine->config().vocab_size)};
  Status bs = b.Prefill(bad, &logits);
  EXPECT_EQ(bs.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(b.position(), 0);
  const std::vector<int32_t> neg = {-1};
  EXPECT_EQ(b.Prefill(neg, &logits).code(), ErrorCode::kInvalidArgument);
}

// Generation stops right after a token of the file's metadata "tokenizer".eog_ids. The oracle
// model never emits 1, 106 or 50 greedily, so a copy of the file declares a later greedy
// token (one not generated before it) an end-of-generation token.
TEST(OracleGenerate, StopsAtEndOfGenerationToken) {
  const Oracle& o = LoadOracle("tiny-e2b");
  // The first case whose greedy continuation has a token not seen before it (at step k ≥ 1).
  const Case* cp = nullptr;
  size_t k = 0;
  for (const Case& cand : o.cases) {
    const auto& t = cand.greedy.at("ref").tokens;
    for (k = 1; k < t.size() && std::find(t.begin(), t.begin() + k, t[k]) != t.begin() + k; ++k) {
    }
    if (k < t.size()) {
      cp = &cand;
      break;
    }
  }
  ASSERT_NE(cp, nullptr);
  const Case& c = *cp;
  const Greedy& g = c.greedy.at("ref");
  ASSERT_LT(k, g.tokens.size());
  auto src = GemletFile::Open(Converted("tiny-e2b", "model.safetensors"));
  ASSERT_TRUE(src.ok());
  const std::string path = ScratchDir() + "/eog.gemlet";
  {
    auto w = GemletWriter::Create(path);
    ASSERT_TRUE(w.ok());
    for (const TensorView& t : (*src)->tensors()) {
      ASSERT_TRUE((*w)->AddTensor(t.name, t.type, t.shape, t.data, t.nbytes).ok());
    }
    nlohmann::json meta = (*src)->metadata();
    EXPECT_EQ(meta["tokenizer"]["eog_ids"], nlohmann::json({1, 106, 50}));
    meta["tokenizer"]["eog_ids"] = {1, 106, 50, g.tokens[k]};
    (*w)->SetMetadata(meta);
    (*w)->SetVocab((*src)->ReadVocab());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  auto engine = OpenEngine(path, 2);
  ASSERT_NE(engine, nullptr);
  EXPECT_TRUE(engine->IsEog(g.tokens[k]));
  EXPECT_TRUE(engine->IsEog(106));
  ASSERT_NE(engine->tokenizer(), nullptr);
  runtime::Session session(*engine, {256, 64});
  runtime::SamplerOptions greedy;
  greedy.temperature = 0;
  session.set_sampler(greedy);
  runtime::GenerateOptions go;
  go.max_tokens = 32;
  std::vector<int32_t> streamed;
  auto r = runtime::Generate(session, c.tokens, go, [&](int32_t id) {
    streamed.push_back(id);
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->stopped_at_eog);
  EXPECT_EQ(r->ids, std::vector<int32_t>(g.tokens.begin(), g.tokens.begin() + k + 1));
  EXPECT_EQ(streamed, r->ids);
  EXPECT_EQ(r->timings.generated_tokens, static_cast<int64_t>(k + 1));
  // A callback returning false stops generation too.
  session.Reset();
  auto r2 = runtime::Generate(session, c.tokens, go, [](int32_t) { return false; });
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->ids.size(), 1u);
  EXPECT_FALSE(r2->stopped_at_eog);
}

// Prefill progress (GenerateOptions::on_prefill): reported per chunk, the same greedy tokens
// as a plain prefill; returning false stops the prefill at a chunk's end, keeping what was
// fed (the session then continues exactly as one fed those tokens).
TEST(OracleGenerate, PrefillProgressAndStop) {
  const Oracle& o = LoadOracle("tiny-e2b");
  const Case& c = o.cases.back();
  const int64_t n = static_cast<int64_t>(c.tokens.size()), chunk = 8;
  ASSERT_GT(n, 2 * chunk);
  auto engine = OpenEngine(Converted("tiny-e2b", "model.safetensors"), 2);
  ASSERT_NE(engine, nullptr);
  runtime::SamplerOptions greedy;
  greedy.temperature = 0;
  runtime::GenerateOptions go;
  go.max_tokens = 4;
  go.stop_at_eog = false;
  runtime::Session plain(*engine, {256, chunk});
  plain.set_sampler(greedy);
  auto want = runtime::Generate(plain, c.tokens, go);
  ASSERT_TRUE(want.ok()) << want.status().ToString();

  std::vector<int64_t> seen;
  go.on_prefill = [&](int64_t done, int64_t total) {
    EXPECT_EQ(total, n);
    seen.push_back(done);
    return true;
  };
  runtime::Session s(*engine, {256, chunk});
  s.set_sampler(greedy);
  auto got = runtime::Generate(s, c.tokens, go);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_FALSE(got->prefill_stopped);
  EXPECT_EQ(got->ids, want->ids);
  std::vector<int64_t> expect;
  for (int64_t d = 0; d < n; d += chunk) expect.push_back(d);
  expect.push_back(n);
  EXPECT_EQ(seen, expect);

  // Stopped after two chunks: 16 tokens stay; feeding the rest gives the plain logits.
  go.on_prefill = [&](int64_t done, int64_t) { return done < 2 * chunk; };
  runtime::Session st(*engine, {256, chunk});
  st.set_sampler(greedy);
  auto stopped = runtime::Generate(st, c.tokens, go);
  ASSERT_TRUE(stopped.ok()) << stopped.status().ToString();
  EXPECT_TRUE(stopped->prefill_stopped);
  EXPECT_TRUE(stopped->ids.empty());
  EXPECT_EQ(stopped->timings.prompt_tokens, 2 * chunk);
  EXPECT_EQ(st.position(), 2 * chunk);
  go.on_prefill = nullptr;
  auto rest = runtime::Generate(st, std::span<const int32_t>(c.tokens).subspan(2 * chunk), go);
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  EXPECT_EQ(rest->ids, want->ids);
}

INSTANTIATE_TEST_SUITE_P(Variants, OracleSession, ::testing::Values("tiny-e2b", "tiny-e4b"));

}  // namespace oracle_session_test
}  // namespace gemlet::oracle
