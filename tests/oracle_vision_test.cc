// Image input against ../shared/oracle/tiny-e2b-vision (its README: conventions and tiers):
// decoding and preprocessing (target sizes exact, the float-path resize within u8 ±1 on ≤ 3%
// of values), the tower's soft tokens on the golden pixels (exact tier: max 1e-3, mean 1e-4)
// and end to end from the image files (max 0.02, mean 2e-3), the multimodal prompts' logits
// and greedy continuations (exact tier), and the fast path (q8 tower and decoder, int8
// kernels) within the reduced tier documented below.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "format/image_decode.h"
#include "format/npy.h"
#include "kernels/kernels.h"
#include "model/gemma4_image.h"
#include "model/gemma4_vision.h"
#include "tests/oracle_test_util.h"
#include "tools/convert/sha256.h"

namespace gemlet {
namespace oracle_vision_test {

using oracle::OracleDir;

const std::string& Dir() {
  static const std::string d = OracleDir() + "tiny-e2b-vision/";
  return d;
}

const nlohmann::json& Cases() { return oracle::OracleCases("tiny-e2b-vision"); }

RgbImage Decode(const std::string& file) {
  auto img = DecodeImageFile(Dir() + file);
  EXPECT_TRUE(img.ok()) << img.status().ToString();
  return img.ok() ? *img : RgbImage{};
}

std::string PixelSha(const RgbImage& img) {
  return convert::Sha256Hex(std::string_view(reinterpret_cast<const char*>(img.pixels.data()), img.pixels.size()));
}

// The golden pixels the tower is checked on: the PNG itself for a case without resize, else
// the golden resized-*.png.
std::string GoldenPixelsFile(const nlohmann::json& vc) {
  if (vc["did_resize"].get<bool>()) return vc["resized_file"].get<std::string>();
  return Cases()["images"][vc["image"].get<std::string>()]["png"].get<std::string>();
}

struct Diff {
  double max_abs = 0, mean_abs = 0;
};
Diff Compare(const std::vector<float>& got, const NpyArray& want) {
  Diff d;
  EXPECT_EQ(got.size(), want.data.size());
  const size_t n = std::min(got.size(), want.data.size());
  for (size_t i = 0; i < n; ++i) {
    const double a = std::abs(static_cast<double>(got[i]) - want.data[i]);
    d.max_abs = std::max(d.max_abs, std::isnan(a) ? 1e30 : a);
    d.mean_abs += a;
  }
  d.mean_abs /= std::max<size_t>(n, 1);
  return d;
}

struct Tower {
  std::unique_ptr<runtime::Engine> engine;
  std::unique_ptr<model::Gemma4Vision> vision;
};
Tower OpenTower(const std::string& plan, ops::MatMulMode mode) {
  Tower t;
  const std::string path = oracle::Converted("tiny-e2b-vision", "model.safetensors", plan);
  runtime::EngineOptions eo;
  eo.threads = 2;
  eo.mode = mode;
  auto e = runtime::Engine::Open(path, eo);
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  if (!e.ok()) return t;
  t.engine = std::move(*e);
  auto v = model::Gemma4Vision::Bind(t.engine->file());
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  if (v.ok()) t.vision = std::move(*v);
  return t;
}

std::vector<float> Encode(const Tower& t, const RgbImage& img, int64_t budget, bool resize,
                          model::VisionTrace* trace = nullptr) {
  auto in = model::PreprocessImage(img, budget, resize, t.vision->config());
  EXPECT_TRUE(in.ok()) << in.status().ToString();
  std::vector<float> soft;
  if (!in.ok()) return soft;
  Status st = t.vision->Encode(*in, t.engine->mode(), t.engine->pool(), &soft, trace);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return soft;
}

TEST(OracleVision, DecodeMatchesPillow) {
  GEMLET_NEED_IMAGE_LIBS();
  for (const auto& [name, im] : Cases()["images"].items()) {
    const RgbImage png = Decode(im["png"]);
    EXPECT_EQ(png.width, im["width"].get<int64_t>());
    EXPECT_EQ(png.height, im["height"].get<int64_t>());
    EXPECT_EQ(PixelSha(png), im["png_rgb_sha256"].get<std::string>()) << name << " png";
    const RgbImage jpg = Decode(im["jpg"]);
    EXPECT_EQ(PixelSha(jpg), im["jpg_rgb_sha256_pil94"].get<std::string>()) << name << " jpg (libjpeg-turbo as PIL 9.4)";
  }
}

TEST(OracleVision, TargetSizesAndFloatPathResize) {
  GEMLET_NEED_IMAGE_LIBS();
  const auto& cfg_json = Cases();
  Tower t = OpenTower("keep", ops::MatMulMode::kExact);
  ASSERT_TRUE(t.vision);
  const auto& cfg = t.vision->config();
  for (const auto& vc : cfg_json["vision_cases"]) {
    const std::string what = "case " + std::to_string(vc["id"].get<int>());
    const auto& im = cfg_json["images"][vc["image"].get<std::string>()];
    const RgbImage src = Decode(vc["format"] == "png" ? im["png"] : im["jpg"]);
    const int64_t budget = vc["budget"].get<int64_t>();
    const model::ImageSize s = model::VisionTargetSize(src.height, src.width, budget, cfg);
    EXPECT_EQ(s.height, vc["resized_hw"][0].get<int64_t>()) << what;
    EXPECT_EQ(s.width, vc["resized_hw"][1].get<int64_t>()) << what;
    auto in = model::PreprocessImage(src, budget, true, cfg);
    ASSERT_TRUE(in.ok()) << in.status().ToString();
    EXPECT_EQ(in->grid_h, vc["patch_grid_hw"][0].get<int64_t>()) << what;
    EXPECT_EQ(in->grid_w, vc["patch_grid_hw"][1].get<int64_t>()) << what;
    EXPECT_EQ(t.vision->n_soft(*in), vc["n_soft"].get<int64_t>()) << what;
    if (vc["format"] != "png" || !vc["did_resize"].get<bool>()) continue;
    const RgbImage got = model::ResizeForVision(src, budget, cfg);
    const RgbImage gold = Decode(vc["resized_file"]);
    ASSERT_EQ(got.pixels.size(), gold.pixels.size()) << what;
    int64_t differ = 0, worst = 0;
    for (size_t i = 0; i < got.pixels.size(); ++i) {
      const int d = std::abs(int(got.pixels[i]) - int(gold.pixels[i]));
      differ += d != 0;
      worst = std::max<int64_t>(worst, d);
    }
    const double frac = static_cast<double>(differ) / got.pixels.size();
    std::printf("[oracle] resize %-8s u8 max |d| %lld, %.4f%% differ\n", what.c_str(), static_cast<long long>(worst),
                100 * frac);
    EXPECT_LE(worst, 1) << what;
    EXPECT_LE(frac, 0.03) << what;
  }
}

TEST(OracleVision, SoftTokensOnGoldenPixelsExactTier) {
  GEMLET_NEED_IMAGE_LIBS();
  Tower t = OpenTower("keep", ops::MatMulMode::kExact);
  ASSERT_TRUE(t.vision);
  for (const auto& vc : Cases()["vision_cases"]) {
    if (vc["format"] != "png") continue;  // the JPEG case's golden pixels are PIL's decode
    const std::string what = "case " + std::to_string(vc["id"].get<int>());
    const RgbImage px = Decode(GoldenPixelsFile(vc));
    EXPECT_EQ(PixelSha(px), vc["resized_rgb_sha256"].get<std::string>()) << what;
    model::VisionTrace trace;
    const std::vector<float> soft = Encode(t, px, vc["budget"].get<int64_t>(), /*resize=*/false, &trace);
    auto gold = ReadNpy(Dir() + vc["soft_tokens"].get<std::string>());
    ASSERT_TRUE(gold.ok());
    const Diff d = Compare(soft, *gold);
    std::printf("[oracle] soft tokens %-6s golden pixels, exact: max |d| %.2e, mean |d| %.2e\n", what.c_str(),
                d.max_abs, d.mean_abs);
    EXPECT_LE(d.max_abs, 1e-3) << what;
    EXPECT_LE(d.mean_abs, 1e-4) << what;
    if (vc["id"] == 0) {  // the intermediates of A-70 localise a failure
      for (const auto& [file, got] : {std::pair{"patch-embed-A-70.npy", &trace.patch_embed},
                                      std::pair{"pooled-A-70.npy", &trace.pooled}}) {
        auto g = ReadNpy(Dir() + file);
        ASSERT_TRUE(g.ok());
        const Diff di = Compare(*got, *g);
        EXPECT_LE(di.max_abs, 1e-3) << file;
        EXPECT_LE(di.mean_abs, 1e-4) << file;
      }
    }
  }
}

TEST(OracleVision, SoftTokensFromImageFiles) {
  GEMLET_NEED_IMAGE_LIBS();
  Tower t = OpenTower("keep", ops::MatMulMode::kExact);
  ASSERT_TRUE(t.vision);
  for (const auto& vc : Cases()["vision_cases"]) {
    const std::string what = "case " + std::to_string(vc["id"].get<int>());
    const auto& im = Cases()["images"][vc["image"].get<std::string>()];
    const std::vector<float> soft =
        Encode(t, Decode(vc["format"] == "png" ? im["png"] : im["jpg"]), vc["budget"].get<int64_t>(), true);
    auto gold = ReadNpy(Dir() + vc["soft_tokens"].get<std::string>());
    ASSERT_TRUE(gold.ok());
    const Diff d = Compare(soft, *gold);
    std::printf("[oracle] soft tokens %-6s from the file:       max |d| %.2e, mean |d| %.2e\n", what.c_str(),
                d.max_abs, d.mean_abs);
    EXPECT_LE(d.max_abs, 0.02) << what;
    EXPECT_LE(d.mean_abs, 2e-3) << what;
  }
}

// Runs prompt `p` with the given soft tokens per image span; returns logits [length, V].
std::vector<float> PromptLogits(const runtime::Engine& engine, const nlohmann::json& p,
                                const std::vector<std::vector<float>>& softs) {
  const std::vector<int32_t> tokens = p["tokens"].get<std::vector<int32_t>>();
  std::vector<int64_t> rows;
  std::vector<float> emb;
  for (size_t k = 0; k < p["image_spans"].size(); ++k) {
    const int64_t first = p["image_spans"][k][0], n = p["image_spans"][k][1];
    for (int64_t r = 0; r < n; ++r) rows.push_back(first + r);
    emb.insert(emb.end(), softs[k].begin(), softs[k].end());
  }
  runtime::SessionOptions so;
  so.context_limit = static_cast<int64_t>(tokens.size()) + 32;
  so.prefill_chunk = 64;  // chunks that cut through the image spans
  runtime::Session s(engine, so);
  std::vector<float> logits;
  Status st = s.Prefill(tokens, rows, emb.data(), &logits, /*all_rows=*/true);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return logits;
}

std::vector<float> GoldenSoft(int vision_case) {
  auto g = ReadNpy(Dir() + Cases()["vision_cases"][vision_case]["soft_tokens"].get<std::string>());
  EXPECT_TRUE(g.ok());
  return g.ok() ? g->data : std::vector<float>{};
}

TEST(OracleVision, PromptLogitsAndGreedyExactTier) {
  GEMLET_NEED_IMAGE_LIBS();
  Tower t = OpenTower("keep", ops::MatMulMode::kExact);
  ASSERT_TRUE(t.vision);
  const NpyArray& gold = oracle::Golden("tiny-e2b-vision", "ref");
  const int64_t V = t.engine->config().vocab_size;
  for (const auto& p : Cases()["prompts"]) {
    const std::string what = "prompt " + p["name"].get<std::string>();
    std::vector<std::vector<float>> softs;
    for (const auto& vc : p["vision_cases"]) softs.push_back(GoldenSoft(vc.get<int>()));
    const std::vector<float> logits = PromptLogits(*t.engine, p, softs);
    const int64_t T = p["length"].get<int64_t>();
    ASSERT_EQ(static_cast<int64_t>(logits.size()), T * V);
    const oracle::Stats s =
        oracle::Compare(logits.data(), gold.data.data() + p["row_offset"].get<int64_t>() * V, T, V);
    oracle::Report(what + " logits, golden soft tokens", s);
    oracle::ExpectExactTier(s, what);

    // Greedy: the prompt, then argmax tokens, equal to ref up to the first near-tie.
    runtime::SessionOptions so;
    so.context_limit = T + 32;
    runtime::Session sess(*t.engine, so);
    std::vector<int32_t> tokens = p["tokens"].get<std::vector<int32_t>>();
    std::vector<int64_t> rows;
    std::vector<float> emb;
    for (size_t k = 0; k < p["image_spans"].size(); ++k) {
      for (int64_t r = 0; r < p["image_spans"][k][1].get<int64_t>(); ++r) rows.push_back(p["image_spans"][k][0].get<int64_t>() + r);
      emb.insert(emb.end(), softs[k].begin(), softs[k].end());
    }
    std::vector<float> last;
    ASSERT_TRUE(sess.Prefill(tokens, rows, emb.data(), &last).ok());
    const auto want = p["greedy"]["tokens"].get<std::vector<int32_t>>();
    const auto gaps = p["greedy"]["gaps"].get<std::vector<double>>();
    for (size_t i = 0; i < want.size(); ++i) {
      const int32_t got = static_cast<int32_t>(oracle::TopGap(last.data(), V).first);
      if (gaps[i] < 2e-3) break;
      ASSERT_EQ(got, want[i]) << what << " greedy step " << i;
      ASSERT_TRUE(sess.Decode(got, &last).ok());
    }
  }
}

// The fast path. The tower in q8 with int8 activations (`--type vision=q8 --type
// vision_proj=q8`, here the q8 plan): soft tokens within issue #21's reduced tier, max |Δ| ≤ 0.1,
// mean ≤ 0.02 (measured: 0.087 / 0.015). The default plan's tower is bf16 (the checkpoint's own
// values): on a CPU with the bf16 dot products (AVX512_BF16) its activations are rounded to
// bf16 and its attention's products run in bf16, measured max 0.012 / mean 0.0020 over these
// cases and held to 0.02 / 0.004 here (a fifth of the tier); elsewhere it runs the float kernels on f32 activations, within max 1e-3,
// mean 2e-4. The prompts' logits on the fast decoder (q8, int8 kernels) with the default plan's
// soft tokens stay in the text int8 tier, max 2.0, mean 0.2; with the q8 tower's soft tokens
// they reach max 2.4 (with f32 activations in its clipped linears, so from the q8 weights'
// rounding alone, also 2.4), which is why the default plan does not quantize the tower
// (tools/convert/quant_plan.cc).
TEST(OracleVision, FastPathWithinReducedTier) {
  GEMLET_NEED_IMAGE_LIBS();
  Tower q8 = OpenTower("q8", ops::MatMulMode::kFast);
  Tower def = OpenTower("default", ops::MatMulMode::kFast);
  ASSERT_TRUE(q8.vision && def.vision);
  std::vector<std::vector<float>> soft_by_case;
  for (const auto& vc : Cases()["vision_cases"]) {
    const std::string what = "case " + std::to_string(vc["id"].get<int>());
    const auto& im = Cases()["images"][vc["image"].get<std::string>()];
    const RgbImage img = Decode(vc["format"] == "png" ? im["png"] : im["jpg"]);
    const int64_t budget = vc["budget"].get<int64_t>();
    auto gold = ReadNpy(Dir() + vc["soft_tokens"].get<std::string>());
    ASSERT_TRUE(gold.ok());
    const Diff d = Compare(Encode(q8, img, budget, true), *gold);
    std::printf("[oracle] soft tokens %-6s q8 tower, int8 kernels: max |d| %.2e, mean |d| %.2e\n", what.c_str(),
                d.max_abs, d.mean_abs);
    EXPECT_LE(d.max_abs, 0.1) << what;
    EXPECT_LE(d.mean_abs, 0.02) << what;
    soft_by_case.push_back(Encode(def, img, budget, true));
    const Diff dd = Compare(soft_by_case.back(), *gold);
    const bool bf16_dot = kernels::ActiveKernels().gemm_bf16 != nullptr;
    std::printf("[oracle] soft tokens %-6s bf16 tower, fast path (%s): max |d| %.2e, mean |d| %.2e\n", what.c_str(),
                bf16_dot ? "bf16 dot products" : "float kernels", dd.max_abs, dd.mean_abs);
    // From the image file, through the resize: the oracle's end-to-end tier is max 0.02, mean
    // 2e-3 (its README); with f32 activations the tower is held to the exact tier's max and
    // twice its mean. Under qemu -cpu max most cases give ~1e-7, but cases 4 and 5 (image C
    // downscaled, stripes and hatching) reach max 7.1e-4, mean 1.01e-4 -- most likely a few
    // resized pixels rounding the other way at ties (not analysed further).
    EXPECT_LE(dd.max_abs, bf16_dot ? 0.02 : 1e-3) << what << " (default plan, bf16 tower)";
    EXPECT_LE(dd.mean_abs, bf16_dot ? 4e-3 : 2e-4) << what << " (default plan, bf16 tower)";
  }
  const NpyArray& gold = oracle::Golden("tiny-e2b-vision", "ref");
  const int64_t V = q8.engine->config().vocab_size;
  for (const auto& p : Cases()["prompts"]) {
    std::vector<std::vector<float>> softs;
    for (const auto& vc : p["vision_cases"]) softs.push_back(soft_by_case[vc.get<int>()]);
    const std::vector<float> logits = PromptLogits(*q8.engine, p, softs);
    const int64_t T = p["length"].get<int64_t>();
    const oracle::Stats s =
        oracle::Compare(logits.data(), gold.data.data() + p["row_offset"].get<int64_t>() * V, T, V);
    oracle::Report("prompt " + p["name"].get<std::string>() + " logits, q8 decoder, int8 kernels", s);
    EXPECT_LE(s.max_abs, 2.0);
    EXPECT_LE(s.mean_abs(), 0.2);
  }
}

}  // namespace oracle_vision_test
}  // namespace gemlet
