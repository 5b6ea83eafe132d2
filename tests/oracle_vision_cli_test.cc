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
namespace {

// The Arm64 cross build has no Arm64 libpng/libjpeg (format/CMakeLists.txt): these tests read
// the oracle's PNG and JPEG files, so there they cannot run, and say so.
#if !(GEMLET_HAVE_PNG && GEMLET_HAVE_JPEG)
#define GEMLET_NEED_IMAGE_LIBS() GTEST_SKIP() << "built without libpng/libjpeg: the oracle images cannot be decoded"
#else
#define GEMLET_NEED_IMAGE_LIBS() (void)0
#endif

const std::string kGemlet = std::string(GEMLET_BINARY_DIR) + "/tools/cli/gemlet";
const std::string& VisionDir() {
  static const std::string d = OracleDir() + "tiny-e2b-vision/";
  return d;
}

// Runs the command with its stderr in the returned text.
int RunBoth(const std::string& cmd, std::string* out) { return RunCommand("{ " + cmd + " 2>&1; }", out); }

double MaxAbs(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(double(a[i]) - b[i]));
  return m;
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
  auto text = ReadFileToString(VisionDir() + "cases.json");
  ASSERT_TRUE(text.ok());
  const auto p = nlohmann::json::parse(*text)["prompts"][2];
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

}  // namespace
}  // namespace gemlet::oracle
