// `gemlet bench --json` on the tiny oracle model: the output's shape (not its speed; the real
// measurements are full-size and stay out of CI).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace bench_smoke_test {

const std::string kGemletBin = std::string(GEMLET_BINARY_DIR) + "/tools/cli/gemlet";

TEST(BenchSmoke, JsonHasEveryFieldPerTest) {
  const std::string model = Converted("tiny-e2b", "model-q4_0.gguf");
  ASSERT_FALSE(model.empty());
  std::string out;
  ASSERT_EQ(RunCommand(kGemletBin + " bench -m " + model + " -p 8,16 -n 4 -d 0,5 -r 2 -t 1,2 --json --bandwidth-mib 64", &out), 0)
      << out;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["model"], model);
  EXPECT_GT(j["load_s"].get<double>(), 0.0);
  EXPECT_GT(j["peak_rss_bytes"].get<uint64_t>(), 0u);
  // The KV memory of the largest session (grown by pages with the tokens it holds).
  EXPECT_GT(j["kv_bytes"].get<uint64_t>(), 0u);
  EXPECT_LT(j["kv_bytes"].get<uint64_t>(), j["peak_rss_bytes"].get<uint64_t>());
  EXPECT_GT(j["decode_bytes_per_token"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["ubatch"], 512);  // llama-bench's default prefill chunk
  // The model's figures (model/gemma4_model_test.cc checks them against the shapes): a prompt
  // row skips the KV-shared layers and the LM head.
  EXPECT_GT(j["prompt_macs_per_token"].get<uint64_t>(), 0u);
  EXPECT_LT(j["prompt_macs_per_token"].get<uint64_t>(), j["decode_macs_per_token"].get<uint64_t>());
  const auto& res = j["results"];
  // 2 thread counts × 2 depths × (2 prompt sizes + 1 generation length).
  ASSERT_EQ(res.size(), 12u);
  const char* want[] = {"pp8", "pp16", "tg4", "pp8@d5", "pp16@d5", "tg4@d5"};
  for (size_t i = 0; i < res.size(); ++i) {
    const auto& r = res[i];
    EXPECT_EQ(r["test"], want[i % 6]) << i;
    EXPECT_EQ(r["threads"], i < 6 ? 1 : 2) << i;
    ASSERT_EQ(r["tok_s_all"].size(), 2u);
    EXPECT_GT(r["tok_s"].get<double>(), 0.0);
    const bool prompt = r["test"].get<std::string>().rfind("pp", 0) == 0;
    EXPECT_EQ(r.contains("ttft_s"), prompt) << r.dump();
    EXPECT_EQ(r.contains("bound_tok_s"), !prompt) << r.dump();
    if (prompt) {
      EXPECT_GT(r["ttft_s"].get<double>(), 0.0);
    } else {
      // The read bandwidth around the test and the ceiling it gives.
      EXPECT_GT(r["read_gb_s"].get<double>(), 0.0);
      EXPECT_NEAR(r["bound_tok_s"].get<double>(),
                  r["read_gb_s"].get<double>() * 1e9 / j["decode_bytes_per_token"].get<double>(), 1e-6);
    }
  }
}

// Without the warm-up run the same tests are measured.
TEST(BenchSmoke, NoWarmup) {
  const std::string model = Converted("tiny-e2b", "model-q4_0.gguf");
  std::string out;
  ASSERT_EQ(RunCommand(kGemletBin + " bench -m " + model + " -p 8 -n 2 -r 1 -t 1 --no-warmup --json --bandwidth-mib 0", &out),
            0)
      << out;
  const auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["test"], "pp8");
  EXPECT_EQ(j["results"][1]["test"], "tg2");
  EXPECT_GT(j["results"][1]["tok_s"].get<double>(), 0.0);
}

// LiteRT-LM's protocol: a 1,024-token prompt, then 256 tokens decoded after it, the prompt in
// the chunks run, chat and serve prefill in (256) unless -ub says otherwise.
TEST(BenchSmoke, LiteRtPreset) {
  const std::string model = Converted("tiny-e2b", "model-q4_0.gguf");
  for (const std::string ub : {"", "64"}) {
    std::string out;
    ASSERT_EQ(RunCommand(kGemletBin + " bench -m " + model + " --preset litert -r 1 -t 1 --json --bandwidth-mib 0" +
                             (ub.empty() ? "" : " -ub " + ub),
                         &out),
              0)
        << out;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["ubatch"], ub.empty() ? 256 : 64);
    ASSERT_EQ(j["results"].size(), 2u);
    EXPECT_EQ(j["results"][0]["test"], "pp1024");
    EXPECT_EQ(j["results"][1]["test"], "tg256@d1024");
    EXPECT_EQ(j["results"][1]["depth"], 1024);
  }
}

TEST(BenchSmoke, RejectsBadFlags) {
  const std::string model = Converted("tiny-e2b", "model-q4_0.gguf");
  std::string out;
  EXPECT_EQ(RunCommand(kGemletBin + " bench", &out), 2);
  EXPECT_EQ(RunCommand(kGemletBin + " bench -m " + model + " -r 0", &out), 2);
  EXPECT_EQ(RunCommand(kGemletBin + " bench -m " + model + " --preset nope", &out), 2);
  EXPECT_EQ(RunCommand(kGemletBin + " bench -m " + model + " -p x", &out), 2);
  EXPECT_EQ(RunCommand(kGemletBin + " bench -m " + model + " --bandwidth-mib -1", &out), 2);
  EXPECT_EQ(RunCommand(kGemletBin + " bench -m " + model + " -ub 0", &out), 2);
  EXPECT_EQ(RunCommand(kGemletBin + " bench -m /nonexistent.gemlet -r 1", &out), 1);
}

}  // namespace bench_smoke_test
}  // namespace gemlet::oracle
