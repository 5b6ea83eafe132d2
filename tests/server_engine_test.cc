// The server's scheduler over the real runtime model (runtime::EngineModel behind
// server::GemmaChatModel), on the oracle checkpoint: concurrent greedy streams, sharing steps
// with each other's prefill chunks, produce exactly the tokens a runtime Session generates
// for the same prompt alone; a repeated prompt resumes from the prefix cache (rolling the
// finished sequence back) and still produces them.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <vector>

#include "runtime/generate.h"
#include "tests/oracle_test_util.h"
#include "tests/server_test_util.h"
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

}  // namespace
}  // namespace gemlet::oracle
