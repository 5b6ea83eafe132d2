// `gemlet encode-audio` and `gemlet logits --audio` driven as a user would, on the converted
// tiny audio oracle: outputs against the golden features, soft tokens and logits, span
// mismatches, and bad audio files (a truncated WAV, random bytes, an empty file) each refused
// with one line naming the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "format/npy.h"
#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace oracle_audio_cli_test {

const std::string& AudioDir() {
  static const std::string d = OracleDir() + "tiny-e2b-audio/";
  return d;
}

TEST(OracleAudioCli, EncodeAudioAndLogitsWithAudio) {
  GEMLET_NEED_AUDIO_LIBS();
  const std::string model = Converted("tiny-e2b-audio", "model.safetensors");
  ASSERT_FALSE(model.empty());
  const std::string soft = ScratchDir() + "/audio_soft.npy", feats = ScratchDir() + "/audio_features.npy";
  std::string out;
  ASSERT_EQ(RunBoth(kGemlet + " encode-audio -m " + model + " --audio " + AudioDir() + "sweep.wav --exact --threads 2" +
                        " --features-out " + feats + " -o " + soft,
                    &out),
            0)
      << out;
  auto got = ReadNpy(soft), want = ReadNpy(AudioDir() + "soft-sweep.npy");
  auto gf = ReadNpy(feats), wf = ReadNpy(AudioDir() + "features-sweep.npy");
  ASSERT_TRUE(got.ok() && want.ok() && gf.ok() && wf.ok());
  EXPECT_EQ(got->shape, (std::vector<int64_t>{38, 64}));
  EXPECT_LE(MaxAbs(got->data, want->data), 1e-3);
  EXPECT_EQ(gf->shape, wf->shape);
  EXPECT_LE(MaxAbs(gf->data, wf->data), 1e-2);
  // The golden features fed to the tower.
  ASSERT_EQ(RunBoth(kGemlet + " encode-audio -m " + model + " --features-in " + AudioDir() + "features-bursts.npy" +
                        " --exact -o " + soft,
                    &out),
            0)
      << out;
  got = ReadNpy(soft);
  want = ReadNpy(AudioDir() + "soft-bursts.npy");
  ASSERT_TRUE(got.ok() && want.ok());
  EXPECT_EQ(got->shape, (std::vector<int64_t>{68, 64}));
  EXPECT_LE(MaxAbs(got->data, want->data), 1e-3);

  // Case 4: click then sweep in one turn, from the WAV files.
  const auto& c = OracleCases("tiny-e2b-audio")["cases"][4];
  std::string ids;
  for (int t : c["tokens"]) ids += (ids.empty() ? "" : ",") + std::to_string(t);
  const std::string logits = ScratchDir() + "/audio_logits.npy";
  ASSERT_EQ(RunBoth(kGemlet + " logits -m " + model + " --exact --tokens " + ids + " --audio " + AudioDir() +
                        "click.wav --audio " + AudioDir() + "sweep.wav --mode chunk:40 -o " + logits,
                    &out),
            0)
      << out;
  auto l = ReadNpy(logits);
  ASSERT_TRUE(l.ok());
  const int64_t T = c["length"], V = 512;
  const NpyArray& gold = Golden("tiny-e2b-audio", "ref");
  const Stats s = Compare(l->data.data(), gold.data.data() + c["row_offset"].get<int64_t>() * V, T, V);
  Report("tiny-e2b-audio gemlet logits --audio click, sweep (case 4)", s);
  EXPECT_LE(s.max_abs, 1e-2);
  EXPECT_LE(s.mean_abs(), 3e-4);

  // One clip for two spans; clips in the wrong order (the counts do not fit the spans).
  EXPECT_EQ(RunBoth(kGemlet + " logits -m " + model + " --tokens " + ids + " --audio " + AudioDir() + "click.wav -o " +
                        logits,
                    &out),
            2)
      << out;
  EXPECT_NE(out.find("2 run(s)"), std::string::npos) << out;
  EXPECT_EQ(RunBoth(kGemlet + " logits -m " + model + " --tokens " + ids + " --audio " + AudioDir() +
                        "sweep.wav --audio " + AudioDir() + "click.wav -o " + logits,
                    &out),
            2)
      << out;
  EXPECT_NE(out.find("soft tokens but audio span 1"), std::string::npos) << out;
}

TEST(OracleAudioCli, BadAudioFilesAreClearErrors) {
  GEMLET_NEED_AUDIO_LIBS();
  const std::string model = Converted("tiny-e2b-audio", "model.safetensors");
  ASSERT_FALSE(model.empty());
  auto wav = ReadFileToString(AudioDir() + "click.wav");
  ASSERT_TRUE(wav.ok());
  std::mt19937 rng(5);
  std::string junk(2000, '\0');
  for (char& ch : junk) ch = static_cast<char>(rng());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated.wav", wav->substr(0, wav->size() / 2)}, {"random.bin", junk}, {"empty.wav", ""}};
  const std::vector<std::string> needles = {"truncated WAV", "not a readable audio file", "empty"};
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = ScratchDir() + "/" + cases[i].first;
    std::ofstream(path, std::ios::binary) << cases[i].second;
    std::string out;
    EXPECT_EQ(RunBoth(kGemlet + " encode-audio -m " + model + " --audio " + path + " -o /dev/null", &out), 1)
        << cases[i].first << ": " << out;
    EXPECT_NE(out.find(path), std::string::npos) << out;
    EXPECT_NE(out.find(needles[i]), std::string::npos) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  }
}

}  // namespace oracle_audio_cli_test
}  // namespace gemlet::oracle
