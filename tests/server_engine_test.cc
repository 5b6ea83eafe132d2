// The server's scheduler over the real runtime model (runtime::EngineModel behind
// server::GemmaChatModel), on the oracle checkpoint: concurrent greedy streams, sharing steps
// with each other's prefill chunks, produce exactly the tokens a runtime Session generates
// for the same prompt alone; a repeated prompt resumes from the prefix cache (rolling the
// finished sequence back) and still produces them.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "runtime/generate.h"
#include "tests/oracle_test_util.h"
#include "tests/server_test_util.h"
#include "tools/server/generation.h"
#include "tools/server/model_backend.h"
#include "tools/server/scheduler.h"

namespace gemlet::oracle {
namespace {

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

}  // namespace
}  // namespace gemlet::oracle
