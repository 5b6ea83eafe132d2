// `gemlet logits` and `gemlet run` driven end to end as a user would: the binary runs on a
// converted oracle checkpoint and its outputs are checked against the golden files.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "format/npy.h"
#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace oracle_cli_test {


std::string Join(const std::vector<int32_t>& ids) {
  std::string s;
  for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
  return s;
}

TEST(OracleCli, LogitsCommandMatchesReference) {
  const Oracle& o = LoadOracle("tiny-e2b");
  const std::string model = Converted("tiny-e2b", "model.safetensors");
  ASSERT_FALSE(model.empty());
  const Case& c = o.cases.back();  // 36 tokens, more than twice the window
  const int64_t T = static_cast<int64_t>(c.tokens.size()), V = 512;
  const NpyArray& gold = Golden("tiny-e2b", "ref");
  for (const char* mode : {"prefill", "decode", "chunk:7"}) {
    std::string file = mode;
    for (char& ch : file) {
      if (ch == ':') ch = '_';
    }
    const std::string out = ScratchDir() + "/cli_" + file + ".npy";
    std::string stdout_text;
    const int rc = RunCommand(kGemlet + " logits -m " + model + " --tokens " + Join(c.tokens) + " -o " + out +
                                  " --mode " + mode + " --threads 2",
                              &stdout_text);
    ASSERT_EQ(rc, 0) << mode << ": " << stdout_text;
    auto a = ReadNpy(out);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_EQ(a->shape, (std::vector<int64_t>{T, V}));
    const Stats s = Compare(a->data.data(), gold.data.data() + c.row_offset * V, T, V);
    ExpectExactTier(s, std::string("gemlet logits --mode ") + mode);
    Report(std::string("tiny-e2b gemlet logits --mode ") + mode + " (case 3)", s);
  }
}

TEST(OracleCli, LogitsAndRunReportBadInput) {
  const std::string model = Converted("tiny-e2b", "model.safetensors");
  std::string out;
  EXPECT_EQ(RunCommand(kGemlet + " logits -m " + model + " --tokens 2,512 -o /dev/null", &out), 2);
  EXPECT_EQ(RunCommand(kGemlet + " logits -m " + model + " --tokens 2,3 -o /dev/null --mode chunk:0", &out),
            2);
  EXPECT_EQ(
      RunCommand(kGemlet + " logits -m " + ScratchDir() + "/missing.gemlet --tokens 2 -o /dev/null", &out),
      1);
  EXPECT_EQ(RunCommand(kGemlet + " run -m " + model + " --tokens 2,3,4 -n 10 --ctx 12", &out), 2);
  EXPECT_EQ(RunCommand(kGemlet + " run -m " + model + " --tokens 2 --temp -1", &out), 2);
}

// `gemlet run --temp 0 --json` reproduces the golden greedy continuation.
TEST(OracleCli, RunGreedyJson) {
  const Oracle& o = LoadOracle("tiny-e4b");
  const std::string model = Converted("tiny-e4b", "model.safetensors");
  ASSERT_FALSE(model.empty());
  for (const Case& c : o.cases) {
    const Greedy& g = c.greedy.at("ref");
    std::string out;
    const int rc = RunCommand(kGemlet + " run -m " + model + " --tokens " + Join(c.tokens) +
                                  " -n 32 --temp 0 --ignore-eos --json --threads 1",
                              &out);
    ASSERT_EQ(rc, 0) << out;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["ids"].get<std::vector<int32_t>>(), g.tokens) << "case " << c.id;
    EXPECT_EQ(j["stop"], "length");
    EXPECT_EQ(j["timings"]["generated_tokens"], 32);
    EXPECT_TRUE(j["text"].is_string());
  }
}

}  // namespace oracle_cli_test
}  // namespace gemlet::oracle
