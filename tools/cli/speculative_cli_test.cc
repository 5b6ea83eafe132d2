// --draft, --draft-max, --draft-fixed and --drafter on `gemlet run`, `serve` and `gemlet bench
// --draft-p` (tools/cli/draft_flags.h, bench_speculative.h): on the tiny synthetic model and
// its synthetic drafter (synth --preset tiny --assistant), greedy output with every proposer
// is plain greedy output, --json reports the rounds, and misuse is a usage error (exit 2).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/cli/cli_test_util.h"

namespace gemlet::cli {
namespace speculative_cli_test {

const std::string& Dir() {
  static const std::string d = testing_util::MakeScratchDir("speculative_cli");
  return d;
}

int Gemlet(const std::string& args, std::string* out, std::string* err = nullptr) {
  return testing_util::RunGemlet(Dir(), args, out, err, "/dev/null");
}

const std::string& TinyModel() {
  static const std::string path = testing_util::MakeTinyModel(Dir(), 5);
  return path;
}

const std::string& TinyDrafter() {
  static const std::string path = [] {
    const std::string src = Dir() + "/drafter-src", out_path = Dir() + "/drafter.gemlet";
    std::string out, err;
    EXPECT_EQ(Gemlet("synth --preset tiny --assistant --seed 5 -o " + src + " -q", &out, &err), 0) << err;
    EXPECT_EQ(Gemlet("convert " + src + " -o " + out_path + " --quiet", &out, &err), 0) << err;
    return out_path;
  }();
  return path;
}

nlohmann::json RunJson(const std::string& flags) {
  std::string out, err;
  EXPECT_EQ(Gemlet("run -m " + TinyModel() + " --tokens 2,105,437,107,300,301,302,300,301 -n 200 --ignore-eos "
                   "--temp 0 --json " + flags,
                   &out, &err),
            0)
      << flags << ": " << err;
  auto j = nlohmann::json::parse(out, nullptr, /*allow_exceptions=*/false);
  EXPECT_TRUE(j.is_object()) << out;
  return j;
}

TEST(SpeculativeCli, RunGreedyIsPlainWithEveryProposer) {
  const auto plain = RunJson("");
  ASSERT_TRUE(plain.contains("ids"));
  EXPECT_FALSE(plain["timings"].contains("speculative")) << "off without a drafter";
  for (const std::string& flags : std::vector<std::string>{"--drafter " + TinyDrafter() + " --draft mtp --draft-max 5 --draft-fixed",
                                  "--draft lookup --draft-max 3 --draft-fixed",
                                  "--drafter " + TinyDrafter(),  // auto, adaptive
                                  "--drafter " + TinyDrafter() + " --draft auto --draft-max 16"}) {
    const auto j = RunJson(flags);
    EXPECT_EQ(j["ids"], plain["ids"]) << flags;
    ASSERT_TRUE(j["timings"].contains("speculative")) << flags;
    const auto& sp = j["timings"]["speculative"];
    EXPECT_GT(sp["rounds"].get<int64_t>() + sp["plain_steps"].get<int64_t>(), 0) << flags;
    EXPECT_LE(sp["accepted"].get<int64_t>(), sp["drafted"].get<int64_t>()) << flags;
  }
  const auto fixed = RunJson("--drafter " + TinyDrafter() + " --draft mtp --draft-max 4 --draft-fixed");
  EXPECT_EQ(fixed["timings"]["speculative"]["plain_steps"], 1) << "fixed K drafts every round but the last";
  EXPECT_GT(fixed["timings"]["speculative"]["drafted"].get<int64_t>(), 100);
}

TEST(SpeculativeCli, MisuseIsAUsageError) {
  std::string out, err;
  const std::string run = "run -m " + TinyModel() + " --tokens 2,105 -n 4 ";
  EXPECT_EQ(Gemlet(run + "--draft sometimes", &out, &err), 2);
  EXPECT_NE(err.find("--draft must be"), std::string::npos) << err;
  EXPECT_EQ(Gemlet(run + "--draft mtp", &out, &err), 2);
  EXPECT_NE(err.find("--drafter"), std::string::npos) << err;
  EXPECT_EQ(Gemlet(run + "--draft lookup --draft-max 17", &out, &err), 2);
  EXPECT_EQ(Gemlet(run + "--drafter /nonexistent.gemlet", &out, &err), 1);
  // serve takes the same flags (checked before the model loads, but for mtp's drafter).
  const std::string serve = "serve -m " + TinyModel() + " --port 0 ";
  EXPECT_EQ(Gemlet(serve + "--draft sometimes", &out, &err), 2);
  EXPECT_NE(err.find("--draft must be"), std::string::npos) << err;
  EXPECT_EQ(Gemlet(serve + "--draft lookup --draft-max 0", &out, &err), 2);
  EXPECT_NE(err.find("--draft-max must be in [1, 16]"), std::string::npos) << err;
  EXPECT_EQ(Gemlet(serve + "--draft mtp", &out, &err), 1);
  EXPECT_NE(err.find("--drafter"), std::string::npos) << err;
  EXPECT_EQ(Gemlet(serve + "--drafter /nonexistent.gemlet", &out, &err), 1);
  // A drafter belongs to the model it was made for: serve needs that model with -m.
  EXPECT_EQ(Gemlet("serve --port 0 --drafter " + TinyDrafter(), &out, &err), 2);
  EXPECT_NE(err.find("give that model with -m"), std::string::npos) << err;
}

TEST(SpeculativeCli, BenchDraftP) {
  std::string out, err;
  ASSERT_EQ(Gemlet("bench -m " + TinyModel() + " --drafter " + TinyDrafter() +
                       " --draft-p 0,1 --draft-max 4 --draft-fixed -p 8 -n 48 -r 1 -t 1 --json",
                   &out, &err),
            0)
      << err;
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << out;
  ASSERT_EQ(j["results"].size(), 3u);
  EXPECT_TRUE(j["results"][0]["draft_p"].is_null());
  EXPECT_GT(j["results"][0]["tok_s"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(j["results"][2]["acceptance_rate"].get<double>(), 1.0) << "p = 1: every draft is the continuation";
  EXPECT_LT(j["results"][1]["acceptance_rate"].get<double>(), 1.0);
  EXPECT_GT(j["verify_rel"]["8"].get<double>(), 0);
  EXPECT_GT(j["draft_step_rel"].get<double>(), 0);
}

}  // namespace speculative_cli_test
}  // namespace gemlet::cli
