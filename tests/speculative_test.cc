// Speculative decoding (runtime/speculative.h) on the tiny oracle models (tiny-e2b and its
// assistant, ../shared/oracle/tiny-e2b-assistant): greedy output with drafts (MTP, prompt
// lookup, auto; forced K = 1 … 8 and adaptive) equals plain greedy output token for token over
// 1,024 tokens in 4 prompts per setting — the tiny model's sliding window is 16, so nearly
// every rollback crosses it; sampling with every sampler setting and a token constraint gives
// the same sequence for the same seed; and a χ² test over many seeds finds the distribution of
// the first sampled tokens the same with and without speculation, for two sampler settings
// (and finds a 30 % temperature change, so that it can fail).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "runtime/generate.h"
#include "runtime/session.h"
#include "runtime/speculative.h"
#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace speculative_test {

const runtime::Engine& Tiny(const std::string& plan = "keep") {
  static std::map<std::string, std::unique_ptr<runtime::Engine>> engines;
  auto& e = engines[plan];
  if (!e) {
    runtime::EngineOptions eo;
    eo.threads = 1;
    eo.drafter_path = Converted("tiny-e2b-assistant", "model.safetensors", plan);
    auto r = runtime::Engine::Open(Converted("tiny-e2b", "model.safetensors", plan), eo);
    GEMLET_CHECK_MSG(r.ok(), "the tiny target and drafter open");
    e = std::move(*r);
  }
  return *e;
}

// Four prompts: a plain one, one that repeats itself (lookup finds matches), a long one (its
// prefill crosses the window) and a short one.
std::vector<std::vector<int32_t>> Prompts() {
  std::vector<int32_t> rep = {2, 105, 437, 107};
  for (int i = 0; i < 6; ++i) rep.insert(rep.end(), {300, 301, 302, 303, 304});
  std::vector<int32_t> longp = {2};
  for (int i = 0; i < 40; ++i) longp.push_back(10 + (i * 37) % 480);
  return {{2, 105, 437, 107, 346}, rep, longp, {2, 7}};
}

struct GenRun {
  std::vector<int32_t> ids;
  runtime::SpeculativeStats stats;
};

GenRun Generate(const runtime::Engine& e, const std::vector<int32_t>& prompt, int64_t n,
             const runtime::SamplerOptions& so, const runtime::SpeculativeOptions& spec,
             runtime::TokenConstraint* constraint = nullptr) {
  runtime::Session s(e, runtime::SessionOptions{2048, 256});
  s.set_sampler(so);
  runtime::GenerateOptions go;
  go.max_tokens = n;
  go.stop_at_eog = false;
  go.constraint = constraint;
  go.speculative = spec;
  auto r = runtime::Generate(s, prompt, go);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  EXPECT_EQ(s.position(), static_cast<int64_t>(prompt.size() + r->ids.size()) - 1)
      << "the session holds every token but the last, as after plain decoding";
  return {r->ids, r->timings.speculative};
}

runtime::SamplerOptions Greedy() {
  runtime::SamplerOptions so;
  so.temperature = 0;
  return so;
}

runtime::SpeculativeOptions Forced(runtime::DraftMode mode, int64_t K) {
  runtime::SpeculativeOptions o;
  o.mode = mode;
  o.draft_max = K;
  o.adaptive = false;
  return o;
}

constexpr int64_t kTokens = 256;  // per prompt: 1,024 per setting

TEST(Speculative, GreedyEqualsPlainForcedK) {
  const auto& e = Tiny();
  const auto prompts = Prompts();
  std::vector<std::vector<int32_t>> plain;
  for (const auto& p : prompts) plain.push_back(Generate(e, p, kTokens, Greedy(), {}).ids);
#if GEMLET_REDUCED_TESTS
  // Under qemu (the Arm64 cross build) every K costs ~40 s, under the sanitizers ~6 s: the
  // narrowest, a middle and the widest verify pass.
  const std::vector<int64_t> widths = {1, 3, 8};
#else
  const std::vector<int64_t> widths = {1, 2, 3, 4, 5, 6, 7, 8};
#endif
  for (auto mode : {runtime::DraftMode::kMtp, runtime::DraftMode::kLookup}) {
    for (int64_t K : widths) {
      runtime::SpeculativeStats total;
      for (size_t i = 0; i < prompts.size(); ++i) {
        GenRun r = Generate(e, prompts[i], kTokens, Greedy(), Forced(mode, K));
        ASSERT_EQ(r.ids, plain[i]) << runtime::DraftModeName(mode) << " K=" << K << " prompt " << i;
        total.Add(r.stats);
      }
      EXPECT_GT(total.rounds, 0) << "drafts were verified";
      if (mode == runtime::DraftMode::kMtp) {
        // Forced K: every round drafts but the one that samples the last token.
        EXPECT_EQ(total.plain_steps, static_cast<int64_t>(prompts.size()));
      }
      EXPECT_LE(total.accepted, total.drafted);
      std::printf("%s K=%lld: %lld rounds, %lld drafted, %lld accepted (%.2f)\n", runtime::DraftModeName(mode),
                  static_cast<long long>(K), static_cast<long long>(total.rounds),
                  static_cast<long long>(total.drafted), static_cast<long long>(total.accepted),
                  total.acceptance_rate());
    }
  }
}

TEST(Speculative, GreedyEqualsPlainAdaptiveAutoAndQuantized) {
  for (const std::string plan : {"keep", "q4"}) {
    const auto& e = Tiny(plan);
    for (const auto& p : Prompts()) {
      const auto plain = Generate(e, p, kTokens, Greedy(), {}).ids;
      runtime::SpeculativeOptions spec;
      spec.mode = runtime::DraftMode::kAuto;
      spec.draft_max = 8;
      GenRun r = Generate(e, p, kTokens, Greedy(), spec);
      EXPECT_EQ(r.ids, plain) << plan;
      EXPECT_GT(r.stats.rounds + r.stats.plain_steps, 0);
    }
  }
}

// The bench mode: drafts replaced by the known continuation with probability p are accepted
// (the MTP drafter of a random model almost never is), and the output stays the same.
TEST(Speculative, OracleDraftsAreAcceptedAndChangeNothing) {
  const auto& e = Tiny();
  const auto prompt = Prompts()[0];
  const auto plain = Generate(e, prompt, kTokens, Greedy(), {}).ids;
  double last_rate = -1;
  for (double p : {0.0, 0.5, 1.0}) {
    runtime::SpeculativeOptions spec = Forced(runtime::DraftMode::kMtp, 4);
    spec.oracle = plain;
    spec.oracle_p = p;
    GenRun r = Generate(e, prompt, kTokens, Greedy(), spec);
    EXPECT_EQ(r.ids, plain) << "p=" << p;
    EXPECT_GT(r.stats.acceptance_rate(), last_rate) << "p=" << p;
    last_rate = r.stats.acceptance_rate();
    if (p == 1.0) {
      EXPECT_EQ(r.stats.accepted, r.stats.drafted);
    }
  }
}

// Allows only ids ≡ 1 or 2 (mod 3) and counts what it was told (every Accept of a token that
// was not generated must have been rolled back).
class ModThree : public runtime::TokenConstraint {
 public:
  bool Allows(int32_t t) override { return t % 3 != 0; }
  void Mask(std::span<uint32_t> mask) override {
    for (size_t w = 0; w < mask.size(); ++w) {
      mask[w] = 0;
      for (int b = 0; b < 32; ++b)
        if (Allows(static_cast<int32_t>(w * 32 + b))) mask[w] |= 1u << b;
    }
  }
  Status Accept(int32_t t) override {
    if (!Allows(t)) return InvalidArgument("refused");
    seen.push_back(t);
    return Status::Ok();
  }
  Status Rollback(int64_t n) override {
    if (n > static_cast<int64_t>(seen.size())) return OutOfRange("rollback");
    seen.resize(seen.size() - n);
    return Status::Ok();
  }
  bool Complete() const override { return false; }
  std::unique_ptr<runtime::TokenConstraint> Clone() const override { return std::make_unique<ModThree>(*this); }
  std::vector<int32_t> seen;
};

TEST(Speculative, SamplingGivesTheSameSequenceForTheSameSeed) {
  const auto& e = Tiny();
  runtime::SamplerOptions so;
  so.temperature = 0.8;
  so.top_k = 40;
  so.top_p = 0.9;
  so.min_p = 0.02;
  so.repetition_penalty = 1.2;
  so.presence_penalty = 0.3;
  so.frequency_penalty = 0.1;
  so.logit_bias = {{300, 3.0f}, {301, -100.0f}};
  int64_t accepted = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    so.seed = seed;
    const auto prompt = Prompts()[1];
    const auto plain = Generate(e, prompt, 128, so, {}).ids;
    for (auto mode : {runtime::DraftMode::kMtp, runtime::DraftMode::kLookup}) {
      GenRun r = Generate(e, prompt, 128, so, Forced(mode, 3));
      EXPECT_EQ(r.ids, plain) << runtime::DraftModeName(mode) << " seed " << seed;
      accepted += r.stats.accepted;
    }
    ModThree plain_c, spec_c;
    const auto plain_ids = Generate(e, prompt, 128, so, {}, &plain_c).ids;
    GenRun r = Generate(e, prompt, 128, so, Forced(runtime::DraftMode::kLookup, 4), &spec_c);
    EXPECT_EQ(r.ids, plain_ids) << "with a constraint, seed " << seed;
    EXPECT_EQ(spec_c.seen, r.ids) << "the constraint saw exactly the generated tokens";
    for (int32_t t : r.ids) EXPECT_NE(t % 3, 0);
  }
  EXPECT_GT(accepted, 0) << "some drafts were accepted, so the comparison covers accepted rows";
}

TEST(Speculative, DraftingKeepsPrefillProgressAndConstraintTimings) {
  // One generation path: with drafts, the prompt is prefilled in the same chunks with the
  // same progress calls (and can be stopped there), and the constraint's time is counted.
  const auto& e = Tiny();
  const auto prompt = Prompts()[2];  // 41 tokens: chunks of 16
  for (auto mode : {runtime::DraftMode::kOff, runtime::DraftMode::kMtp, runtime::DraftMode::kAuto}) {
    runtime::Session s(e, runtime::SessionOptions{2048, 16});
    s.set_sampler(Greedy());
    runtime::GenerateOptions go;
    go.max_tokens = 48;
    go.stop_at_eog = false;
    go.speculative.mode = mode;
    std::vector<std::pair<int64_t, int64_t>> calls;
    go.on_prefill = [&](int64_t done, int64_t total) {
      calls.emplace_back(done, total);
      return true;
    };
    ModThree c;
    go.constraint = &c;
    auto r = runtime::Generate(s, prompt, go);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const std::vector<std::pair<int64_t, int64_t>> want = {{0, 41}, {16, 41}, {32, 41}, {41, 41}};
    EXPECT_EQ(calls, want) << runtime::DraftModeName(mode);
    EXPECT_EQ(r->ids.size(), 48u);
    EXPECT_EQ(c.seen, r->ids);
    EXPECT_GT(r->timings.constraint_ms, 0) << runtime::DraftModeName(mode);
    EXPECT_GT(r->timings.sample_ms, 0) << runtime::DraftModeName(mode);
    if (mode != runtime::DraftMode::kOff) {
      EXPECT_GT(r->timings.speculative.rounds, 0);
    }

    // Stopped after the first chunk: nothing generated, 16 prompt tokens in the session.
    runtime::Session s2(e, runtime::SessionOptions{2048, 16});
    go.on_prefill = [](int64_t done, int64_t) { return done < 16; };
    go.constraint = nullptr;
    auto stopped = runtime::Generate(s2, prompt, go);
    ASSERT_TRUE(stopped.ok()) << stopped.status().ToString();
    EXPECT_TRUE(stopped->prefill_stopped);
    EXPECT_TRUE(stopped->ids.empty());
    EXPECT_EQ(s2.position(), 16);
  }
}

// χ² homogeneity of two histograms (bins with fewer than 10 expected in all merged into one);
// returns the statistic over its critical value at α = 0.001 (Wilson–Hilferty): > 1 rejects.
double ChiSquareOverCritical(const std::map<int32_t, int64_t>& a, const std::map<int32_t, int64_t>& b) {
  double na = 0, nb = 0;
  for (const auto& [k, v] : a) na += v;
  for (const auto& [k, v] : b) nb += v;
  std::map<int32_t, std::pair<double, double>> bins;
  for (const auto& [k, v] : a) bins[k].first += v;
  for (const auto& [k, v] : b) bins[k].second += v;
  std::vector<std::pair<double, double>> cells;
  std::pair<double, double> rest{0, 0};
  for (const auto& [k, c] : bins) {
    if ((c.first + c.second) * std::min(na, nb) / (na + nb) < 10) {
      rest.first += c.first;
      rest.second += c.second;
    } else {
      cells.push_back(c);
    }
  }
  if (rest.first + rest.second > 0) cells.push_back(rest);
  double chi2 = 0;
  for (const auto& [x, y] : cells) {
    const double ex = (x + y) * na / (na + nb), ey = (x + y) * nb / (na + nb);
    chi2 += (x - ex) * (x - ex) / ex + (y - ey) * (y - ey) / ey;
  }
  const double df = std::max<double>(1, static_cast<double>(cells.size()) - 1);
  const double z = 3.090, h = 2.0 / (9 * df);
  const double critical = df * std::pow(1 - h + z * std::sqrt(h), 3);
  return chi2 / critical;
}

TEST(Speculative, SampledDistributionMatchesPlainChiSquare) {
  const auto& e = Tiny();
  const std::vector<int32_t> prompt = {2, 105, 437, 107, 346};
  runtime::SamplerOptions wide, narrow;
  wide.temperature = 1.0;
  wide.top_k = 0;
  wide.top_p = 1.0;
  narrow.temperature = 0.7;
  narrow.top_k = 20;
  narrow.top_p = 0.9;
  narrow.min_p = 0.05;
  narrow.repetition_penalty = 1.3;
  constexpr int kSeeds = 600;
  for (const auto* so : {&wide, &narrow}) {
    // Tokens 2 and 3 (the rows of the first verify pass) with and without speculation over
    // disjoint seeds.
    std::map<int32_t, int64_t> plain, spec;
    runtime::SamplerOptions o = *so;
    for (int i = 0; i < kSeeds; ++i) {
      o.seed = 1000 + i;
      const auto a = Generate(e, prompt, 3, o, {}).ids;
      o.seed = 1000 + kSeeds + i;
      const auto b = Generate(e, prompt, 3, o, Forced(runtime::DraftMode::kMtp, 2)).ids;
      ASSERT_EQ(a.size(), 3u);
      ASSERT_EQ(b.size(), 3u);
      ++plain[a[1] * 512 + a[2]];
      ++spec[b[1] * 512 + b[2]];
    }
    // The control, that the test can fail: plain sampling at a temperature 30 % higher.
    std::map<int32_t, int64_t> hotter;
    o.temperature = so->temperature * 1.3;
    for (int i = 0; i < kSeeds; ++i) {
      o.seed = 1000 + 2 * kSeeds + i;
      const auto c = Generate(e, prompt, 3, o, {}).ids;
      ++hotter[c[1] * 512 + c[2]];
    }
    const double same = ChiSquareOverCritical(plain, spec);
    std::printf("chi2/critical (T=%.1f): plain vs speculative %.3f\n", so->temperature, same);
    EXPECT_LT(same, 1.0) << "speculative sampling's distribution differs from plain sampling's";
    const double control = ChiSquareOverCritical(plain, hotter);
    std::printf("chi2/critical (T=%.1f): plain vs 30 %% hotter %.3f\n", so->temperature, control);
    EXPECT_GT(control, 1.0) << "the test cannot tell a 30 % temperature change";
  }
}

}  // namespace speculative_test
}  // namespace gemlet::oracle
