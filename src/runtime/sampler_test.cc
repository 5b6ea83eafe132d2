#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

namespace gemlet::runtime {
namespace sampler_test {

std::map<int32_t, int> Histogram(Sampler& s, const std::vector<float>& logits, int draws,
                                 const std::vector<int32_t>& history = {}) {
  std::map<int32_t, int> h;
  for (int i = 0; i < draws; ++i) h[s.Sample(logits, history)]++;
  return h;
}

TEST(SamplerTest, GreedyTakesTheMaxAndTiesGoLow) {
  SamplerOptions o;
  o.temperature = 0;
  Sampler s(o);
  EXPECT_EQ(s.Sample(std::vector<float>{0.1f, 3.0f, -1.0f, 2.9f}, {}), 1);
  EXPECT_EQ(s.Sample(std::vector<float>{1.0f, 5.0f, 5.0f, 5.0f}, {}), 1);
  EXPECT_EQ(ArgMax(std::vector<float>{7.0f, 7.0f}), 0);
}

TEST(SamplerTest, SeededIsReproducibleAndReseedRestarts) {
  SamplerOptions o;
  o.seed = 42;
  std::vector<float> logits = {0.0f, 0.5f, 1.0f, 0.2f, 0.8f};
  Sampler a(o), b(o);
  std::vector<int32_t> sa, sb;
  for (int i = 0; i < 50; ++i) {
    sa.push_back(a.Sample(logits, {}));
    sb.push_back(b.Sample(logits, {}));
  }
  EXPECT_EQ(sa, sb);
  a.Reseed();
  for (int i = 0; i < 50; ++i) EXPECT_EQ(a.Sample(logits, {}), sa[i]);
  o.seed = 43;
  Sampler c(o);
  std::vector<int32_t> sc;
  for (int i = 0; i < 50; ++i) sc.push_back(c.Sample(logits, {}));
  EXPECT_NE(sa, sc);
}

// At temperature 1 with no filters the draw frequencies follow softmax(logits).
TEST(SamplerTest, FrequenciesFollowSoftmax) {
  SamplerOptions o;
  o.seed = 7;
  Sampler s(o);
  std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  const int n = 20000;
  auto h = Histogram(s, logits, n);
  EXPECT_NEAR(h[0] / double(n), 0.5, 0.02);
  EXPECT_NEAR(h[1] / double(n), 0.3, 0.02);
  EXPECT_NEAR(h[2] / double(n), 0.2, 0.02);
  // Temperature 0.5 squares the odds: 25:9:4.
  o.temperature = 0.5;
  Sampler t(o);
  auto ht = Histogram(t, logits, n);
  EXPECT_NEAR(ht[0] / double(n), 25.0 / 38, 0.02);
  EXPECT_NEAR(ht[2] / double(n), 4.0 / 38, 0.02);
}

TEST(SamplerTest, TopKTopPMinP) {
  std::vector<float> logits = {std::log(0.4f), std::log(0.3f), std::log(0.2f), std::log(0.1f)};
  SamplerOptions o;
  o.seed = 1;
  o.top_k = 2;
  Sampler k(o);
  auto hk = Histogram(k, logits, 5000);
  EXPECT_EQ(hk.size(), 2u);
  EXPECT_GT(hk[0], hk[1]);
  EXPECT_NEAR(hk[0] / 5000.0, 0.4 / 0.7, 0.03);

  o = SamplerOptions{};
  o.top_p = 0.65;  // 0.4 + 0.3 reaches 0.65: ids 0 and 1
  Sampler p(o);
  auto hp = Histogram(p, logits, 5000);
  EXPECT_EQ(hp.size(), 2u);
  EXPECT_EQ(hp.count(2), 0u);

  o = SamplerOptions{};
  o.min_p = 0.6;  // keep p ≥ 0.24: ids 0 and 1
  Sampler m(o);
  auto hm = Histogram(m, logits, 5000);
  EXPECT_EQ(hm.size(), 2u);
  EXPECT_EQ(hm.count(3), 0u);

  o.min_p = 1.0;  // only the top token
  Sampler m1(o);
  EXPECT_EQ(Histogram(m1, logits, 200).size(), 1u);
}

// A vocabulary-sized distribution (the sampler sorts only the head that top-p / min-p keep):
// every drawn token lies in the nucleus computed here by a full sort, and the nucleus's
// most likely tokens are drawn at their renormalized rates.
TEST(SamplerTest, TopPAndMinPOverALargeVocabulary) {
  const int V = 65536;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> logits(V);
  for (float& l : logits) l = nd(rng);
  logits[12345] = 12.0f;  // a favourite with ~1/4 of the mass, then a long tail
  std::vector<int> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return logits[a] > logits[b]; });
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l) - 12.0);
  for (double top_p : {0.5, 0.9}) {
    std::set<int> nucleus;
    double cum = 0;
    for (int id : order) {
      nucleus.insert(id);
      cum += std::exp(double(logits[id]) - 12.0) / sum;
      if (cum >= top_p) break;
    }
    SamplerOptions o;
    o.seed = 5;
    o.top_p = top_p;
    Sampler s(o);
    int fav = 0;
    const int n = 150;
    for (int i = 0; i < n; ++i) {
      const int32_t t = s.Sample(logits, {});
      EXPECT_EQ(nucleus.count(t), 1u) << "top_p " << top_p << ": token " << t << " is outside the nucleus";
      fav += t == 12345;
    }
    EXPECT_NEAR(fav / double(n), 1.0 / sum / cum, 0.12) << top_p;  // ~3 sigma
  }
  SamplerOptions o;
  o.seed = 6;
  o.min_p = 0.05;  // p ≥ 0.05 · p_max ⇔ logit ≥ 12 + ln 0.05
  Sampler m(o);
  for (int i = 0; i < 100; ++i) {
    const int32_t t = m.Sample(logits, {});
    EXPECT_GE(logits[t], 12.0f + std::log(0.05f) - 1e-4f) << t;
  }
}

TEST(SamplerTest, PenaltiesChangeTheChoice) {
  SamplerOptions o;
  o.temperature = 0;
  o.repetition_penalty = 2.0;
  Sampler r(o);
  // Token 0 was seen: 3.0 / 2 = 1.5 < 2.0, so token 1 wins.
  EXPECT_EQ(r.Sample(std::vector<float>{3.0f, 2.0f, -1.0f}, std::vector<int32_t>{0}), 1);
  // A negative logit is multiplied: −1 · 2 = −2 < −1.5.
  EXPECT_EQ(r.Sample(std::vector<float>{-1.0f, -1.5f}, std::vector<int32_t>{0, 0, 0}), 1);
  o.repetition_penalty = 1.0;
  o.presence_penalty = 1.5;
  Sampler p(o);
  EXPECT_EQ(p.Sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{0, 0}), 1);  // 3 − 1.5 once
  EXPECT_EQ(p.Sample(std::vector<float>{3.0f, 1.0f}, std::vector<int32_t>{0}), 0);     // 1.5 > 1
  // Only the last penalty_last_n tokens count.
  o.penalty_last_n = 1;
  Sampler last(o);
  EXPECT_EQ(last.Sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{0, 1}), 0);
  // Out-of-vocabulary history entries are ignored, not a crash.
  EXPECT_EQ(last.Sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{-5, 99}), 0);
}

TEST(SamplerTest, FrequencyPenaltyCountsEveryOccurrence) {
  SamplerOptions o;
  o.temperature = 0;
  o.frequency_penalty = 0.4;
  Sampler s(o);
  EXPECT_EQ(s.Sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{0, 0}), 0);     // 3 − 0.8
  EXPECT_EQ(s.Sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{0, 0, 0}), 1);  // 3 − 1.2
  o.presence_penalty = 0.5;  // presence once, then frequency per occurrence: 3 − 0.5 − 0.4
  Sampler both(o);
  EXPECT_EQ(both.Sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{0}), 0);
  // 0 three times: 3 − 0.5 − 1.2 = 1.3; 1 once: 2 − 0.9 = 1.1.
  EXPECT_EQ(both.Sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{0, 1, 0, 0}), 0);
  EXPECT_EQ(both.Sample(std::vector<float>{3.0f, 2.0f}, std::vector<int32_t>{0, 0, 0}), 1);
}

TEST(SamplerTest, LogitBiasComesFirstAndMinus100Bans) {
  SamplerOptions o;
  o.temperature = 0;
  o.logit_bias = {{1, 2.0f}, {99, 50.0f}, {-3, 50.0f}};  // out-of-vocabulary ids are ignored
  Sampler s(o);
  EXPECT_EQ(s.Sample(std::vector<float>{3.0f, 2.0f, 0.0f}, {}), 1);  // 2 + 2 > 3
  o.logit_bias = {{0, -100.0f}};
  o.presence_penalty = -1000;  // a negative penalty on a banned token does not bring it back
  Sampler ban(o);
  EXPECT_EQ(ban.Sample(std::vector<float>{100.0f, 2.0f}, std::vector<int32_t>{0}), 1);
  o.temperature = 1.0;
  o.presence_penalty = 0;
  Sampler drawn(o);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(drawn.Sample(std::vector<float>{5.0f, 0.0f}), 1);
}

// Sample(logits) penalises what the sampler itself picked (OpenAI: generated tokens only).
TEST(SamplerTest, OwnPicksArePenalizedUntilReseed) {
  SamplerOptions o;
  o.temperature = 0;
  o.frequency_penalty = 1.5;
  o.penalty_last_n = 0;
  Sampler s(o);
  const std::vector<float> logits = {3.0f, 2.0f, 0.0f};
  std::vector<int32_t> got;
  for (int i = 0; i < 4; ++i) got.push_back(s.Sample(logits));
  // 0 (3), then 0 at 1.5 < 2 → 1, then 1 at 0.5 < 1.5 → 0, then 0 at 0 < 0.5 → 1.
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 0, 1}));
  s.Reseed();
  EXPECT_EQ(s.Sample(logits), 0);
  EXPECT_EQ(s.Sample(logits), 1);
  // A window of one pick: only the last token is penalised.
  o.penalty_last_n = 1;
  Sampler w(o);
  got.clear();
  for (int i = 0; i < 4; ++i) got.push_back(w.Sample(logits));
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 0, 1}));
  o.frequency_penalty = 0.6;  // 0 twice in a row: 3 − 0.6 > 2, then it left the window
  Sampler w2(o);
  got.clear();
  for (int i = 0; i < 3; ++i) got.push_back(w2.Sample(logits));
  EXPECT_EQ(got, (std::vector<int32_t>{0, 0, 0}));
}

// The server's former sampler (logit bias, then presence/frequency over the generated tokens,
// then the sampler with no history) and Sample(logits) pick the same tokens for a seed.
TEST(SamplerTest, OwnPicksMatchTheServersFormerSampler) {
  SamplerOptions o;
  o.temperature = 0.8;
  o.top_p = 0.95;
  o.top_k = 40;
  o.seed = 1234;
  o.presence_penalty = 0.7;
  o.frequency_penalty = 0.3;
  o.penalty_last_n = 0;
  o.logit_bias = {{3, -100.0f}, {5, 1.5f}, {7, -2.0f}};
  Sampler now(o);
  SamplerOptions plain = o;
  plain.presence_penalty = plain.frequency_penalty = 0;
  plain.logit_bias.clear();
  Sampler before(plain);
  std::map<int32_t, int64_t> counts;
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 2.0f);
  for (int step = 0; step < 300; ++step) {
    std::vector<float> logits(64);
    for (float& l : logits) l = n(rng);
    std::vector<float> old = logits;
    for (const auto& [id, b] : o.logit_bias) old[id] = b <= -100 ? -1e30f : old[id] + b;
    for (const auto& [id, c] : counts) old[id] -= static_cast<float>(o.presence_penalty + o.frequency_penalty * c);
    const int32_t want = before.Sample(old, {});
    ASSERT_EQ(now.Sample(logits), want) << "step " << step;
    counts[want]++;
  }
}

// Logits from a damaged model (NaN, ±inf) never crash the sampler.
TEST(SamplerTest, NonFiniteLogits) {
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  for (double temp : {0.0, 1.0}) {
    SamplerOptions o;
    o.temperature = temp;
    o.top_p = 0.9;
    o.min_p = 0.1;
    Sampler s(o);
    std::vector<float> many(1000, nan);
    many[17] = 1.0f;
    EXPECT_EQ(s.Sample(many, {}), 17);
    EXPECT_EQ(s.Sample(std::vector<float>{0.0f, inf, 1.0f}, {}), 1);
    const int32_t all_neg = s.Sample(std::vector<float>(5, -inf), {});
    EXPECT_GE(all_neg, 0);
    EXPECT_LT(all_neg, 5);
  }
}

TEST(SamplerTest, ValidateNamesTheFlag) {
  SamplerOptions o;
  EXPECT_TRUE(o.Validate().ok());
  o.temperature = -1;
  EXPECT_NE(o.Validate().message().find("--temp"), std::string::npos);
  o = SamplerOptions{};
  o.top_p = 0;
  EXPECT_NE(o.Validate().message().find("--top-p"), std::string::npos);
  o = SamplerOptions{};
  o.min_p = 2;
  EXPECT_NE(o.Validate().message().find("--min-p"), std::string::npos);
  o = SamplerOptions{};
  o.repetition_penalty = 0;
  EXPECT_NE(o.Validate().message().find("--repeat-penalty"), std::string::npos);
  o = SamplerOptions{};
  o.top_k = -1;
  EXPECT_FALSE(o.Validate().ok());
}

}  // namespace sampler_test
}  // namespace gemlet::runtime
