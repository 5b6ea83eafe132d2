// `gemlet draft` end to end on ../shared/oracle/tiny-e2b-assistant: the binary runs a round on
// a bundle (target + drafter in one file, gemlet convert --assistant) and on a target with
// --drafter, and its ids and arrays are checked against the goldens. (Apart from
// oracle_drafter_test.cc so that those in-process tests also run in the aarch64 stage.)
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "format/npy.h"
#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace oracle_drafter_cli_test {

const std::string kAssistant = "tiny-e2b-assistant";

TEST(OracleDrafterCli, DraftCommandMatchesTheRound) {
  // The last round of the 17-token case (P = 21: past the window + 1).
  const auto& round = OracleCases(kAssistant)["cases"][2]["rounds"][1];
  const auto seq = round["sequence"].get<std::vector<int32_t>>();
  ASSERT_EQ(seq.size(), 22u);
  std::string ids, want;
  for (size_t i = 0; i < seq.size(); ++i) ids += (i ? "," : "") + std::to_string(seq[i]);
  for (size_t k = 0; k < round["steps"].size(); ++k) {
    want += (k ? "," : "") + std::to_string(round["steps"][k]["draft"].get<int32_t>());
  }
  const int64_t row0 = round["steps"][0]["row"].get<int64_t>();

  convert::ConvertOptions o;
  o.src = OracleDir() + "tiny-e2b";
  o.assistant = OracleDir() + kAssistant;
  o.out = ScratchDir() + "/cli-bundle.gemlet";
  o.plan = "keep";
  o.progress = false;
  o.threads = 2;
  auto rep = convert::Convert(o);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  const std::string target = Converted("tiny-e2b", "model.safetensors");
  const std::string drafter = Converted(kAssistant, "model.safetensors");
  const std::string d = ScratchDir() + "/d.npy", s = ScratchDir() + "/s.npy", h = ScratchDir() + "/h.npy";
  for (const std::string& models : {"-m " + o.out, "-m " + target + " --drafter " + drafter}) {
    std::string out;
    ASSERT_EQ(RunCommand(kGemlet + " draft " + models + " --tokens " + ids + " -k 4 --exact --dense-logits " + d +
                             " --sparse-logits " + s + " --hidden " + h + " --threads 1",
                         &out),
              0)
        << models << ": " << out;
    EXPECT_EQ(out, want + "\n") << models;
    for (const auto& [file, gold, cols] : {std::tuple{d, "dense-logits.npy", 512}, {s, "sparse-logits.npy", 512},
                                           {h, "h-next.npy", 64}}) {
      auto a = ReadNpy(file);
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      ASSERT_EQ(a->shape, (std::vector<int64_t>{4, cols}));
      auto g = ReadNpy(OracleDir() + kAssistant + "/" + gold);
      ASSERT_TRUE(g.ok());
      std::vector<float> golden(g->data.begin() + row0 * cols, g->data.begin() + (row0 + 4) * cols);
      double m = 0;
      for (int64_t i = 0; i < 4 * cols; ++i) m = std::max(m, std::abs(static_cast<double>(a->data[i]) - golden[i]));
      EXPECT_LE(m, 1e-3) << models << " " << gold;
    }
  }
  // No drafter: exit 1 naming the way out; too few tokens: a usage error.
  std::string out;
  EXPECT_EQ(RunCommand(kGemlet + " draft -m " + target + " --tokens 2,105", &out), 1);
  EXPECT_EQ(RunCommand(kGemlet + " draft -m " + o.out + " --tokens 2", &out), 2);
}

}  // namespace oracle_drafter_cli_test
}  // namespace gemlet::oracle
