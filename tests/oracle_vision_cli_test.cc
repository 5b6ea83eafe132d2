// `gemlet encode-image` and `gemlet logits --image` driven as a user would, on the converted
// tiny vision oracle: outputs against the golden soft tokens and logits, and bad images (a
// truncated JPEG, a PNG with a broken CRC, a 0×0 and a 100000×100000 declared size, random
// bytes) each refused with one line naming the file.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "format/npy.h"
#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace oracle_vision_cli_test {

const std::string& VisionDir() {
  static const std::string d = OracleDir() + "tiny-e2b-vision/";
  return d;
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

TEST(OracleVisionCli, EncodeImageAndLogitsWithImages) {
  GEMLET_NEED_IMAGE_LIBS();
  const std::string model = Converted("tiny-e2b-vision", "model.safetensors");
  ASSERT_FALSE(model.empty());
  const std::string soft = ScratchDir() + "/vision_soft.npy";
  std::string out;
  ASSERT_EQ(RunBoth(kGemlet + " encode-image -m " + model + " --image " + VisionDir() + "resized-C-140.png" +
                        " --no-resize --exact --threads 2 -o " + soft,
                    &out),
            0)
      << out;
  auto got = ReadNpy(soft);
  auto want = ReadNpy(VisionDir() + "soft-C-140.npy");
  ASSERT_TRUE(got.ok() && want.ok());
  EXPECT_EQ(got->shape, (std::vector<int64_t>{126, 64}));
  EXPECT_LE(MaxAbs(got->data, want->data), 1e-3);

  // Prompt 2: B@70 then C@70, from the image files.
  const auto& p = OracleCases("tiny-e2b-vision")["prompts"][2];
  std::string ids;
  for (int t : p["tokens"]) ids += (ids.empty() ? "" : ",") + std::to_string(t);
  const std::string logits = ScratchDir() + "/vision_logits.npy";
  ASSERT_EQ(RunBoth(kGemlet + " logits -m " + model + " --exact --tokens " + ids + " --image " + VisionDir() +
                        "image-B.png --image " + VisionDir() + "image-C.png --image-tokens 70 --mode chunk:40 -o " +
                        logits,
                    &out),
            0)
      << out;
  auto l = ReadNpy(logits);
  ASSERT_TRUE(l.ok());
  const int64_t T = p["length"], V = 512;
  const NpyArray& gold = Golden("tiny-e2b-vision", "ref");
  const Stats s = Compare(l->data.data(), gold.data.data() + p["row_offset"].get<int64_t>() * V, T, V);
  ExpectExactTier(s, "gemlet logits --image (prompt B70+C70)");
  Report("tiny-e2b-vision gemlet logits --image B, C (prompt 2)", s);

  // One image for two spans, and a budget whose soft-token count does not fit the span.
  EXPECT_EQ(RunBoth(kGemlet + " logits -m " + model + " --tokens " + ids + " --image " + VisionDir() +
                        "image-B.png -o " + logits,
                    &out),
            2)
      << out;
  EXPECT_NE(out.find("2 run(s)"), std::string::npos) << out;
  EXPECT_EQ(RunBoth(kGemlet + " logits -m " + model + " --tokens " + ids + " --image " + VisionDir() +
                        "image-B.png --image " + VisionDir() + "image-C.png --image-tokens 140 -o " + logits,
                    &out),
            2)
      << out;
  EXPECT_NE(out.find("soft tokens but image span 1"), std::string::npos) << out;
}

// The greedy ids of `gemlet run --json` (the "ids" array of its one line).
std::vector<int32_t> JsonIds(const std::string& out) {
  const size_t b = out.find('{');
  if (b == std::string::npos) return {};
  auto j = nlohmann::json::parse(out.substr(b, out.find('\n', b) - b), nullptr, false);
  if (j.is_discarded() || !j.contains("ids")) return {};
  return j["ids"].get<std::vector<int32_t>>();
}

TEST(OracleVisionCli, RunWithImagesFollowsTheOracle) {
  GEMLET_NEED_IMAGE_LIBS();
  const std::string model = Converted("tiny-e2b-vision", "model.safetensors");
  ASSERT_FALSE(model.empty());
  const auto& cases = OracleCases("tiny-e2b-vision");
  const std::string run = kGemlet + " run -m " + model + " --exact --threads 2 --temp 0 --json --chat --image-tokens 70 ";
  // Prompt 0 (A@70, "What is it?", the image before the text): the greedy ids until the
  // first gap under 1 (steps 0..7 here; the soft tokens come from the file, not the golden).
  const auto& p0 = cases["prompts"][0];
  std::string out;
  ASSERT_EQ(RunCommand(run + "-n 8 --image " + VisionDir() + "image-A.png -p 'What is it?'", &out), 0) << out;
  const auto want0 = p0["greedy"]["tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(JsonIds(out), std::vector<int32_t>(want0.begin(), want0.begin() + 8)) << out;
  EXPECT_NE(out.find("\"prompt_tokens\":103"), std::string::npos) << out;
  EXPECT_NE(out.find("\"media_encode_ms\":"), std::string::npos) << out;  // part of the time to first token
  // Prompt 2: two images placed by {image} and <|image|> (its first two steps: gaps > 1).
  const auto want2 = cases["prompts"][2]["greedy"]["tokens"].get<std::vector<int32_t>>();
  ASSERT_EQ(RunCommand(run + "-n 2 --image " + VisionDir() + "image-B.png --image " + VisionDir() +
                           "image-C.png -p 'Compare{image}and<|image|>'",
                       &out),
            0)
      << out;
  EXPECT_EQ(JsonIds(out), std::vector<int32_t>(want2.begin(), want2.begin() + 2)) << out;
  EXPECT_NE(out.find("\"prompt_tokens\":149"), std::string::npos) << out;
  // The images swapped give another prompt (the check can fail).
  ASSERT_EQ(RunCommand(run + "-n 2 --image " + VisionDir() + "image-C.png --image " + VisionDir() +
                           "image-B.png -p 'Compare{image}and<|image|>'",
                       &out),
            0)
      << out;
  EXPECT_NE(JsonIds(out), std::vector<int32_t>(want2.begin(), want2.begin() + 2)) << out;
  // Placeholders that do not match the images, a bad image file, a text-only model.
  EXPECT_EQ(RunBoth(run + "-n 1 --image " + VisionDir() + "image-B.png -p '{image}{image}'", &out), 2) << out;
  EXPECT_NE(out.find("places 2"), std::string::npos) << out;
  EXPECT_EQ(RunBoth(run + "-n 1 --image " + ScratchDir() + "/missing.png -p hi", &out), 1) << out;
  EXPECT_NE(out.find("missing.png"), std::string::npos) << out;
  // tiny-e2b's stub tower (a 16-entry position table) cannot take this image: one clear line.
  const std::string stub_model = Converted("tiny-e2b", "model.safetensors");
  EXPECT_NE(RunBoth(kGemlet + " run -m " + stub_model + " --temp 0 -n 1 --image " + VisionDir() +
                        "image-B.png -p hi",
                    &out),
            0)
      << out;
  EXPECT_NE(out.find("image-B.png: image of"), std::string::npos) << out;
}

TEST(OracleVisionCli, ChatImageCommand) {
  GEMLET_NEED_IMAGE_LIBS();
  const std::string model = Converted("tiny-e2b-vision", "model.safetensors");
  ASSERT_FALSE(model.empty());
  const std::string opts = " -m " + model + " --exact --threads 2 --temp 0 -n 8 --image-tokens 70";
  std::string chat, run;
  const std::string script = ScratchDir() + "/chat_image.txt";
  WriteBytes(script, "/image " + VisionDir() + "image-A.png\nWhat is it?\n/image " + ScratchDir() +
                         "/missing.png\n/stats\n");
  ASSERT_EQ(RunCommand(kGemlet + " chat --no-history" + opts + " < " + script, &chat), 0) << chat;
  EXPECT_NE(chat.find("[image 1 attached: " + VisionDir() + "image-A.png, 70 soft tokens"), std::string::npos)
      << chat;
  EXPECT_NE(chat.find("error: " + ScratchDir() + "/missing.png"), std::string::npos) << chat;
  // The answer is run --chat's for the same image and text.
  ASSERT_EQ(RunCommand(kGemlet + " run --chat" + opts + " --image " + VisionDir() + "image-A.png -p 'What is it?'",
                       &run),
            0)
      << run;
  while (!run.empty() && run.back() == '\n') run.pop_back();
  ASSERT_FALSE(run.empty());
  EXPECT_NE(chat.find(run), std::string::npos) << "chat:\n" << chat << "\nrun:\n" << run;
  EXPECT_NE(chat.find("prefilled 103 tokens"), std::string::npos) << chat;  // /stats
}

TEST(OracleVisionCli, BadImagesAreClearErrors) {
  GEMLET_NEED_IMAGE_LIBS();
  const std::string model = Converted("tiny-e2b-vision", "model.safetensors");
  ASSERT_FALSE(model.empty());
  auto jpg = ReadFileToString(VisionDir() + "image-B.jpg");
  auto png = ReadFileToString(VisionDir() + "image-B.png");
  ASSERT_TRUE(jpg.ok() && png.ok());
  std::string bad_crc = *png;
  bad_crc[29] ^= 1;  // IHDR's CRC
  auto ihdr = [](uint32_t w, uint32_t h) {  // a PNG header declaring w×h (IHDR CRC left wrong:
    std::string s("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 16);  // the size is checked first)
    for (uint32_t v : {w, h}) {
      for (int k = 24; k >= 0; k -= 8) s += static_cast<char>((v >> k) & 0xFF);
    }
    return s + std::string("\x08\x02\0\0\0\0\0\0\0", 9);
  };
  std::mt19937 rng(3);
  std::string junk(2000, '\0');
  for (char& c : junk) c = static_cast<char>(rng());
  junk[0] = 'j';
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated.jpg", jpg->substr(0, jpg->size() / 2)}, {"bad-crc.png", bad_crc},
      {"zero.png", ihdr(0, 0)},                            {"huge.png", ihdr(100000, 100000)},
      {"random.bin", junk}};
  const std::vector<std::string> needles = {"corrupt or truncated JPEG", "CRC", "empty image", "over the budget",
                                            "not a JPEG, PNG or WebP"};
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = ScratchDir() + "/" + cases[i].first;
    WriteBytes(path, cases[i].second);
    std::string out;
    EXPECT_EQ(RunBoth(kGemlet + " encode-image -m " + model + " --image " + path + " -o /dev/null", &out), 1)
        << cases[i].first << ": " << out;
    EXPECT_NE(out.find(path), std::string::npos) << out;
    EXPECT_NE(out.find(needles[i]), std::string::npos) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  }
}

}  // namespace oracle_vision_cli_test
}  // namespace gemlet::oracle
