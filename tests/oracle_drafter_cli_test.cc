// `gemlet draft` end to end on ../shared/oracle/tiny-e2b-assistant: the binary runs a round on
// a bundle (target + drafter in one file, gemlet convert --assistant) and on a target with
// --drafter, and its ids and arrays are checked against the goldens. (Apart from
// oracle_drafter_test.cc so that those in-process tests also run in the aarch64 stage.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "base/mapped_file.h"
#include "format/npy.h"
#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace oracle_drafter_cli_test {

const std::string kAssistant = "tiny-e2b-assistant";

// Max |Δ| of rows row0 … row0 + 3 of an oracle array against a [4, cols] file.
double MaxDiff(const std::string& file, const std::string& gold, int64_t row0, int64_t cols) {
  auto a = ReadNpy(file);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  if (!a.ok()) return 1e30;
  EXPECT_EQ(a->shape, (std::vector<int64_t>{4, cols}));
  auto g = ReadNpy(OracleDir() + kAssistant + "/" + gold);
  EXPECT_TRUE(g.ok());
  double m = 0;
  for (int64_t i = 0; i < 4 * cols; ++i) {
    m = std::max(m, std::abs(static_cast<double>(a->data[i]) - g->data[row0 * cols + i]));
  }
  return m;
}

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
      EXPECT_LE(MaxDiff(file, gold, row0, cols), 1e-3) << models << " " << gold;
    }
  }
  // No drafter: exit 1 naming the way out; too few tokens: a usage error.
  std::string out;
  EXPECT_EQ(RunCommand(kGemlet + " draft -m " + target + " --tokens 2,105", &out), 1);
  EXPECT_EQ(RunCommand(kGemlet + " draft -m " + o.out + " --tokens 2", &out), 2);
}

// ---- llama.cpp's gemma4-assistant GGUF (tests/data/assistant/README.md) through the binary.

const std::string kGgufDir = std::string(GEMLET_SOURCE_DIR) + "/tests/data/assistant/";

TEST(OracleDrafterCli, GgufAssistantConvertsAndDrafts) {
  const auto& round = OracleCases(kAssistant)["cases"][2]["rounds"][1];
  const auto seq = round["sequence"].get<std::vector<int32_t>>();
  std::string ids, sparse_drafts, dense_drafts;
  for (size_t i = 0; i < seq.size(); ++i) ids += (i ? "," : "") + std::to_string(seq[i]);
  for (size_t k = 0; k < round["steps"].size(); ++k) {
    sparse_drafts += (k ? "," : "") + std::to_string(round["steps"][k]["draft"].get<int32_t>());
  }
  const int64_t row0 = round["steps"][0]["row"].get<int64_t>();
  const std::string target = Converted("tiny-e2b", "model.safetensors");
  const std::string d = ScratchDir() + "/gd.npy", s = ScratchDir() + "/gs.npy", h = ScratchDir() + "/gh.npy";

  // With the sparse head: as the HF-converted drafter.
  const std::string with = ScratchDir() + "/gguf-centroids.gemlet";
  std::string out;
  ASSERT_EQ(RunBoth(kGemlet + " convert " + kGgufDir + "tiny-assistant-centroids-f32.gguf -o " + with +
                        " --plan keep -q --threads 1",
                    &out),
            0)
      << out;
  EXPECT_EQ(out.find("note:"), std::string::npos) << out;
  ASSERT_EQ(RunCommand(kGemlet + " info " + with, &out), 0);
  EXPECT_NE(out.find("LM head sparse (16 centroids, top 4: 128 candidates)"), std::string::npos) << out;
  ASSERT_EQ(RunCommand(kGemlet + " draft -m " + target + " --drafter " + with + " --tokens " + ids +
                           " -k 4 --exact --dense-logits " + d + " --sparse-logits " + s + " --hidden " + h +
                           " --threads 1",
                       &out),
            0)
      << out;
  EXPECT_EQ(out, sparse_drafts + "\n");
  EXPECT_LE(MaxDiff(d, "dense-logits.npy", row0, 512), 1e-3);
  EXPECT_LE(MaxDiff(s, "sparse-logits.npy", row0, 512), 1e-3);
  EXPECT_LE(MaxDiff(h, "h-next.npy", row0, 64), 1e-3);

  // llama.cpp's converter output as is: a note, the dense head (its argmax drafts), and
  // --sparse-logits refused.
  const std::string dense = ScratchDir() + "/gguf-dense.gemlet";
  ASSERT_EQ(RunBoth(kGemlet + " convert " + kGgufDir + "tiny-assistant-f32.gguf -o " + dense +
                        " --plan keep -q --threads 1",
                    &out),
            0)
      << out;
  EXPECT_NE(out.find("note: " + kGgufDir + "tiny-assistant-f32.gguf has no sparse head"), std::string::npos) << out;
  EXPECT_NE(out.find("the drafter uses the dense head"), std::string::npos) << out;
  ASSERT_EQ(RunCommand(kGemlet + " info " + dense, &out), 0);
  EXPECT_NE(out.find("LM head dense (no centroids"), std::string::npos) << out;
  // The oracle feeds each step the sparse draft: the dense drafter's own round is the oracle's
  // where the two heads agree at every step, as in round 2 of the 5-token case (P = 8).
  const auto& agree = OracleCases(kAssistant)["cases"][1]["rounds"][1];
  std::string agree_ids;
  for (const int32_t t : agree["sequence"].get<std::vector<int32_t>>()) {
    agree_ids += (agree_ids.empty() ? "" : ",") + std::to_string(t);
  }
  for (size_t k = 0; k < agree["steps"].size(); ++k) {
    ASSERT_TRUE(agree["steps"][k]["sparse_dense_agree"].get<bool>());
    dense_drafts += (k ? "," : "") + std::to_string(agree["steps"][k]["dense_argmax"].get<int32_t>());
  }
  const int64_t agree_row0 = agree["steps"][0]["row"].get<int64_t>();
  ASSERT_EQ(RunCommand(kGemlet + " draft -m " + target + " --drafter " + dense + " --tokens " + agree_ids +
                           " -k 4 --exact --dense-logits " + d + " --hidden " + h + " --threads 1",
                       &out),
            0)
      << out;
  EXPECT_EQ(out, dense_drafts + "\n");
  EXPECT_LE(MaxDiff(d, "dense-logits.npy", agree_row0, 512), 1e-3);
  EXPECT_LE(MaxDiff(h, "h-next.npy", agree_row0, 64), 1e-3);
  std::string err;
  EXPECT_EQ(RunCommand("{ " + kGemlet + " draft -m " + target + " --drafter " + dense + " --tokens " + ids +
                           " -k 4 --exact --sparse-logits " + s + " --threads 1 2>&1 >/dev/null; }",
                       &err),
            1);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("has no sparse head"), std::string::npos) << err;
}

// Bad files: exit 1, one line on stderr naming the file and the problem.
TEST(OracleDrafterCli, BadAssistantGgufs) {
  const std::string src = kGgufDir + "tiny-assistant-centroids-f32.gguf";
  auto patched = [&](const std::string& name, const std::string& after, const std::string& from,
                     const std::string& to) {
    std::string b = ReadFileToString(src).value();
    const size_t p = b.find(from, b.find(after));
    EXPECT_NE(p, std::string::npos) << from;
    b.replace(p, from.size(), to);
    const std::string path = ScratchDir() + "/" + name;
    EXPECT_TRUE(WriteStringToFile(path, b).ok());
    return path;
  };
  const std::string not_gguf = ScratchDir() + "/not.gguf";
  ASSERT_TRUE(WriteStringToFile(not_gguf, "this is not a GGUF file\n").ok());
  const std::string arch = patched("arch.gguf", "general.architecture", "gemma4-assistant", "gemma5-assistant");
  const std::string missing = patched("missing.gguf", "blk.2.ffn_gate", "blk.2.ffn_gate", "blk.2.ffn_xxxx");
  const std::string half = patched("half.gguf", "masked_embd_ordering", "masked_embd_ordering", "masked_embd_orderinX");
  const std::string target_gguf = OracleDir() + "tiny-e2b/model-f32.gguf";
  const std::string target_dir = OracleDir() + "tiny-e2b";
  const std::string out = ScratchDir() + "/bad.gemlet";
  for (const auto& [cmd, needle] : std::vector<std::pair<std::string, std::string>>{
           {not_gguf, not_gguf + ": neither a GGUF file nor a Hugging Face checkpoint folder"},
           {arch, arch + ": general.architecture is 'gemma5-assistant', not gemma4 (or gemma4-assistant"},
           {target_dir + " --assistant " + arch, arch + ": general.architecture is 'gemma5-assistant', not gemma4-assistant"},
           {target_dir + " --assistant " + target_gguf,
            target_gguf + ": general.architecture is 'gemma4', not gemma4-assistant"},
           {target_dir + " --assistant " + not_gguf, not_gguf},
           {missing, missing + ": drafter tensor blk.2.ffn_gate.weight is missing"},
           {target_dir + " --assistant " + missing, missing + ": drafter tensor blk.2.ffn_gate.weight is missing"},
           {half, half + ": has masked_embd_centroids.weight but not masked_embd_ordering"},
       }) {
    std::string err;
    EXPECT_EQ(RunCommand("{ " + kGemlet + " convert " + cmd + " -o " + out + " -q 2>&1 >/dev/null; }", &err), 1)
        << cmd;
    EXPECT_NE(err.find(needle), std::string::npos) << cmd << ": " << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
}

}  // namespace oracle_drafter_cli_test
}  // namespace gemlet::oracle
