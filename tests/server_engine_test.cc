// The server's scheduler over the real runtime model (runtime::EngineModel behind
// server::GemmaChatModel), on the oracle checkpoint: concurrent greedy streams, sharing steps
// with each other's prefill chunks, produce exactly the tokens a runtime Session generates
// for the same prompt alone; a repeated prompt resumes from the prefix cache (rolling the
// finished sequence back) and still produces them. With speculative decoding on (MTP, lookup,
// auto; adaptive and forced K), greedy streams give the same tokens as plain greedy decoding,
// alone (drafting) and two at once (plain batched steps between drafting rounds).
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/engine_model.h"
#include "runtime/generate.h"
#include "tests/oracle_test_util.h"
#include "tests/server_test_util.h"
#include "tools/server/generation.h"
#include "tools/server/model_backend.h"
#include "tools/server/scheduler.h"

namespace gemlet::oracle {
namespace server_engine_test {

TEST(ServerEngine, ConcurrentStreamsEqualSessionsAlone) {
  const Oracle& o = LoadOracle("tiny-e2b");
  auto engine = OpenEngine(Converted("tiny-e2b", "model.safetensors"), 2);
  ASSERT_NE(engine, nullptr);
  auto model = server::GemmaChatModel::Create(*engine, "tiny", 256);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const int64_t n = 12;  // a finished sequence then lies within the 16-token rollback of its prompt
  // The reference: each case's greedy continuation from a Session alone.
  std::vector<std::vector<int32_t>> want;
  for (const Case& c : o.cases) {
    auto r = GreedyAlone(*engine, runtime::MediaPrompt{c.tokens, {}}, n, 256);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    want.push_back(r->ids);
  }
  server::Metrics metrics;
  server::SchedulerOptions so;
  so.slots = 4;
  so.prefill_chunk = 8;  // the longer prompts take several steps beside the others' decoding
  server::Scheduler sched((*model)->backend(), metrics, so);
  auto submit = [&](const Case& c, std::shared_ptr<Collect> sink) {
    server::JobSpec spec;
    spec.prompt = c.tokens;
    spec.max_tokens = n;
    server::SamplingOptions greedy;
    greedy.temperature = 0;
    spec.sampler = (*model)->NewSampler(greedy, 0, nullptr);
    spec.sink = std::move(sink);
    ASSERT_TRUE(sched.Submit(std::move(spec)).ok());
  };
  for (int round = 0; round < 2; ++round) {  // the second round resumes from the prefix cache
    std::vector<std::shared_ptr<Collect>> sinks;
    for (const Case& c : o.cases) {
      sinks.push_back(std::make_shared<Collect>());
      submit(c, sinks.back());
    }
    for (size_t i = 0; i < sinks.size(); ++i) {
      const server::JobOutcome out = sinks[i]->Wait();
      EXPECT_EQ(out.reason, server::FinishReason::kLength) << out.status.ToString();
      EXPECT_EQ(sinks[i]->tokens(), want[i]) << "case " << i << " round " << round;
      if (round == 1 && o.cases[i].tokens.size() > 1) {
        EXPECT_EQ(out.cached_tokens, static_cast<int64_t>(o.cases[i].tokens.size()) - 1) << "case " << i;
      }
    }
  }
  EXPECT_GE(metrics.prefix_cache_hits(), 3);
  sched.Shutdown();
}

// A reply that starts with a stop string ends on the token that completes it, with finish
// "stop" and no text, well before its budget, also when the stop string is in byte tokens,
// which the decoder holds back until their run ends (the tiny vocabulary spells most
// characters in bytes): logit_bias makes every greedy token "<0x48>" ("H").
TEST(ServerEngine, StopStringAtTheStartEndsOnItsToken) {
  const Oracle& o = LoadOracle("tiny-e2b");
  auto engine = OpenEngine(Converted("tiny-e2b", "model.safetensors"), 2);
  ASSERT_NE(engine, nullptr);
  ASSERT_NE(engine->tokenizer(), nullptr);
  const int32_t h = engine->tokenizer()->PieceToId("<0x48>");
  ASSERT_GE(h, 0);
  auto model = server::GemmaChatModel::Create(*engine, "tiny", 256);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  server::Metrics metrics;
  server::Scheduler sched((*model)->backend(), metrics, server::SchedulerOptions{});
  for (const std::string stop : {"H", "HHH"}) {
    auto gen = std::make_shared<server::Generation>(**model, std::vector<std::string>{stop}, /*chat=*/true,
                                                    std::vector<int32_t>{});
    server::JobSpec spec;
    spec.prompt = o.cases[0].tokens;
    spec.max_tokens = 32;
    spec.stop_tokens = (*model)->StopTokens();
    server::SamplingOptions greedy;
    greedy.temperature = 0;
    greedy.logit_bias = {{h, 100.f}};
    spec.sampler = (*model)->NewSampler(greedy, 0, nullptr);
    spec.sink = gen;
    ASSERT_TRUE(sched.Submit(std::move(spec)).ok());
    std::vector<server::GenerationEvent> events;
    std::optional<server::JobOutcome> outcome;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!outcome && std::chrono::steady_clock::now() < give_up) {
      gen->Wait(std::chrono::milliseconds(100), &events, &outcome);
    }
    ASSERT_TRUE(outcome.has_value()) << stop;
    EXPECT_EQ(outcome->completion_tokens, static_cast<int64_t>(stop.size())) << stop;
    EXPECT_EQ(gen->FinishReasonText(*outcome), "stop") << stop;
    EXPECT_TRUE(gen->StopMatched()) << stop;
    EXPECT_EQ(gen->MatchedStop(), stop);
    std::string content;
    for (const auto& e : events) content += e.text;
    EXPECT_EQ(content, "") << stop;
  }
  sched.Shutdown();
}

// Greedy continuations through a scheduler over `model`: the prompts submitted one after
// another (each decodes alone), or `together` at once.
std::vector<std::vector<int32_t>> ServeGreedy(server::GemmaChatModel& model, server::Metrics& metrics,
                                              const std::vector<std::vector<int32_t>>& prompts, int64_t n,
                                              bool together) {
  server::SchedulerOptions so;
  so.slots = 2;
  so.prefill_chunk = 16;
  server::Scheduler sched(model.backend(), metrics, so);
  std::vector<std::vector<int32_t>> out;
  std::vector<std::shared_ptr<Collect>> sinks;
  for (const auto& p : prompts) {
    server::JobSpec spec;
    spec.prompt = p;
    spec.max_tokens = n;
    server::SamplingOptions greedy;
    greedy.temperature = 0;
    spec.sampler = model.NewSampler(greedy, 0, nullptr);
    sinks.push_back(std::make_shared<Collect>());
    spec.sink = sinks.back();
    EXPECT_TRUE(sched.Submit(std::move(spec)).ok());
    if (!together) {
      const server::JobOutcome o = sinks.back()->Wait();
      EXPECT_EQ(o.reason, server::FinishReason::kLength) << o.status.ToString();
    }
  }
  for (auto& s : sinks) {
    if (together) {
      EXPECT_EQ(s->Wait().reason, server::FinishReason::kLength);
    }
    out.push_back(s->tokens());
  }
  sched.Shutdown();
  return out;
}

TEST(ServerEngine, SpeculativeGreedyEqualsPlain) {
  runtime::EngineOptions eo;
  eo.threads = 1;
  eo.drafter_path = Converted("tiny-e2b-assistant", "model.safetensors");
  auto engine = runtime::Engine::Open(Converted("tiny-e2b", "model.safetensors"), eo);
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  // Four prompts: a plain one, one that repeats itself (lookup finds matches), a long one
  // (its prefill crosses the 16-token window) and a short one.
  std::vector<int32_t> rep = {2, 105, 437, 107};
  for (int i = 0; i < 6; ++i) rep.insert(rep.end(), {300, 301, 302, 303, 304});
  std::vector<int32_t> longp = {2};
  for (int i = 0; i < 40; ++i) longp.push_back(10 + (i * 37) % 480);
  const std::vector<std::vector<int32_t>> prompts = {{2, 105, 437, 107, 346}, rep, longp, {2, 7}};
#if GEMLET_REDUCED_TESTS
  const int64_t n = 64;
#else
  const int64_t n = 256;  // 1,024 tokens per setting
#endif
  std::vector<std::vector<int32_t>> want;
  for (const auto& p : prompts) {
    auto r = GreedyAlone(**engine, runtime::MediaPrompt{p, {}}, n, 512, 16);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    want.push_back(r->ids);
  }
  struct Setting {
    runtime::DraftMode mode;
    int64_t K;
    bool adaptive;
  };
  const Setting settings[] = {{runtime::DraftMode::kAuto, 8, true},
                              {runtime::DraftMode::kMtp, 3, false},
                              {runtime::DraftMode::kLookup, 5, false}};
  int64_t accepted = 0;
  for (const Setting& st : settings) {
    auto model = server::GemmaChatModel::Create(**engine, "tiny", 512);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    runtime::SpeculativeOptions spec;
    spec.mode = st.mode;
    spec.draft_max = st.K;
    spec.adaptive = st.adaptive;
    ASSERT_TRUE((*model)->EnableDrafting(spec).ok());
    const std::string name = std::string(runtime::DraftModeName(st.mode)) + " K " + std::to_string(st.K);
    server::Metrics metrics;
    EXPECT_EQ(ServeGreedy(**model, metrics, prompts, n, /*together=*/false), want) << name << ", alone";
    EXPECT_GT(metrics.drafted(), 0) << name;
    accepted += metrics.draft_accepted();
    const std::vector<std::vector<int32_t>> pair = {prompts[1], prompts[2]};
    const std::vector<std::vector<int32_t>> want_pair = {want[1], want[2]};
    EXPECT_EQ(ServeGreedy(**model, metrics, pair, n, /*together=*/true), want_pair) << name << ", two at once";
    const std::string text = metrics.RenderPrometheus();
    EXPECT_NE(text.find("gemlet_draft_tokens_total"), std::string::npos);
    EXPECT_NE(text.find("gemlet_draft_accepted_tokens_total"), std::string::npos);
  }
  EXPECT_GT(accepted, 0) << "some drafts were accepted, so the comparison covers accepted rows";
  // A model without drafting takes plain steps (and a drafter-less engine refuses mtp).
  auto plain_engine = OpenEngine(Converted("tiny-e2b", "model.safetensors"), 1);
  ASSERT_NE(plain_engine, nullptr);
  runtime::EngineModel m(*plain_engine, runtime::SessionOptions{});
  runtime::SpeculativeOptions mtp;
  mtp.mode = runtime::DraftMode::kMtp;
  const Status refused = m.EnableDrafting(mtp);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("--drafter"), std::string::npos) << refused.message();
  EXPECT_FALSE(m.drafts());
}

}  // namespace server_engine_test
}  // namespace gemlet::oracle
