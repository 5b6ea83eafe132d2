// `gemlet convert MODEL.gguf --mmproj MMPROJ.gguf` on llama.cpp's own files of the tiny oracles
// (tests/data/mmproj/README.md): the towers it writes equal, bit for bit, the ones the HF path
// writes from the same checkpoint (names, values, types under the default plan, "vision" /
// "audio" metadata), the soft tokens and greedy ids are the HF-converted model's, the F16
// mmproj stays in the f16 tier (and is the HF path's default-plan towers byte for byte), and
// bad mmproj files each give one clear error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "format/gemlet_file.h"
#include "format/npy.h"
#include "kernels/ref/quant.h"
#include "kernels/repack.h"
#include "tests/oracle_test_util.h"

namespace gemlet::oracle {
namespace convert_mmproj_test {

namespace fs = std::filesystem;

const std::string kData = std::string(GEMLET_SOURCE_DIR) + "/tests/data/mmproj/";

std::string VisionDir() { return OracleDir() + "tiny-e2b-vision/"; }
std::string AudioDir() { return OracleDir() + "tiny-e2b-audio/"; }

// Converts the text GGUF `text` with the mmproj `mmproj` (both in tests/data/mmproj) under `plan`.
std::string ConvertMmproj(const std::string& text, const std::string& mmproj, const std::string& plan) {
  convert::ConvertOptions o;
  o.src = kData + text;
  o.mmproj = kData + mmproj;
  o.out = ScratchDir() + "/mmproj-" + mmproj + "-" + plan + ".gemlet";
  o.plan = plan;
  o.progress = false;
  o.threads = 2;
  auto r = convert::Convert(o);
  EXPECT_TRUE(r.ok()) << o.mmproj << ": " << r.status().ToString();
  return r.ok() ? o.out : "";
}

std::unique_ptr<GemletFile> Open(const std::string& path) {
  auto f = GemletFile::Open(path);
  EXPECT_TRUE(f.ok()) << path << ": " << f.status().ToString();
  return f.ok() ? std::move(*f) : nullptr;
}

bool IsTower(const std::string& name) {
  return name.rfind("v.", 0) == 0 || name.rfind("a.", 0) == 0 || name.rfind("mm.", 0) == 0;
}

std::vector<float> Values(const TensorView& t) {
  std::vector<uint8_t> buf;
  const uint8_t* rows = kernels::RowMajorBytes(t.data, t.type, t.layout, t.rows(), t.cols(), &buf);
  std::vector<float> out(static_cast<size_t>(t.numel()));
  kernels::DequantizeRowRef(t.type, rows, out.data(), t.numel());
  return out;
}

// How ExpectSameTowers compares values.
enum class Same {
  kValues,  // equal bit for bit
  kBytes,   // and the same stored types and bytes
  // equal bit for bit, except that `got` went through f16 (an f16 mmproj) where `want` kept the
  // checkpoint's bf16: values below f16's normal range (2^-14) may differ by half its
  // subnormal spacing (2^-25), rounded to bf16
  kValuesThroughF16,
};

// Element-wise: a == b bit for bit, or within f16's subnormal rounding where |b| < 2^-14.
bool SameThroughF16(const std::vector<float>& a, const std::vector<float>& b, int64_t* n_rounded) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], 4) == 0) continue;
    if (std::abs(b[i]) >= std::ldexp(1.0f, -14) || std::abs(a[i] - b[i]) > std::ldexp(1.0f, -25) * 1.01f) return false;
    ++*n_rounded;
  }
  return true;
}

// The tower tensors of `got` and `want`: the same names and shapes, values compared as `same`.
// Returns how many were compared.
int ExpectSameTowers(const GemletFile& got, const GemletFile& want, Same same) {
  int64_t n_rounded = 0;
  int n = 0;
  for (const TensorView& w : want.tensors()) {
    if (!IsTower(w.name)) continue;
    SCOPED_TRACE(w.name);
    const TensorView* g = got.Find(w.name);
    if (!g) {
      ADD_FAILURE() << "missing from the mmproj conversion";
      continue;
    }
    ++n;
    EXPECT_EQ(g->shape, w.shape);
    if (g->shape != w.shape) continue;
    const std::vector<float> a = Values(*g), b = Values(w);
    if (same == Same::kValuesThroughF16) {
      EXPECT_TRUE(SameThroughF16(a, b, &n_rounded));
      continue;
    }
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
    if (same == Same::kBytes) {
      EXPECT_EQ(TensorTypeName(g->type), TensorTypeName(w.type));
      EXPECT_TRUE(g->nbytes == w.nbytes && std::memcmp(g->data, w.data, g->nbytes) == 0);
    }
  }
  for (const TensorView& g : got.tensors()) {
    if (IsTower(g.name)) {
      EXPECT_NE(want.Find(g.name), nullptr) << g.name << " is not on the HF path";
    }
  }
  for (const char* key : {"vision", "audio"}) {
    EXPECT_EQ(got.metadata().value(key, nlohmann::json()), want.metadata().value(key, nlohmann::json())) << key;
  }
  if (same == Same::kValuesThroughF16) std::printf("[mmproj] %lld values differ by f16's subnormal rounding\n", static_cast<long long>(n_rounded));
  return n;
}

struct Pair {
  const char* variant;  // the oracle checkpoint
  const char* text;
  const char* mmproj;
  int towers;  // tower tensors the HF path writes
};

class ConvertMmprojF32 : public ::testing::TestWithParam<Pair> {};

TEST_P(ConvertMmprojF32, TowersEqualTheHfPath) {
  const Pair p = GetParam();
  for (const char* plan : {"keep", "default"}) {
    SCOPED_TRACE(plan);
    auto mm = Open(ConvertMmproj(p.text, p.mmproj, plan));
    auto hf = Open(Converted(p.variant, "model.safetensors", plan));
    ASSERT_TRUE(mm && hf);
    // keep: bf16 (HF) against f32 (llama.cpp's F32 file), the same values; default: the same bytes.
    EXPECT_EQ(ExpectSameTowers(*mm, *hf, plan == std::string("default") ? Same::kBytes : Same::kValues), p.towers);
    EXPECT_EQ(mm->metadata()["provenance"]["mmproj"], fs::absolute(kData + p.mmproj).lexically_normal().string());
  }
}

INSTANTIATE_TEST_SUITE_P(Oracles, ConvertMmprojF32,
                         ::testing::Values(Pair{"tiny-e2b-vision", "tiny-vision-text-f32.gguf",
                                                "tiny-vision-mmproj.gguf", 85},
                                           Pair{"tiny-e2b-audio", "tiny-audio-text-f32.gguf",
                                                "tiny-audio-mmproj.gguf", 164}));

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// max |a − b| and mean |a − b|.
std::pair<double, double> Diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0, s = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    m = std::max(m, std::abs(double(a[i]) - b[i]));
    s += std::abs(double(a[i]) - b[i]);
  }
  return {m, a.empty() ? 0 : s / a.size()};
}

double Rms(const std::vector<float>& a) {
  double s = 0;
  for (float x : a) s += double(x) * x;
  return std::sqrt(s / std::max<size_t>(a.size(), 1));
}

// Runs `gemlet <args>` writing OUT.npy; returns the array.
NpyArray Encode(const std::string& args, const std::string& out) {
  std::string log;
  EXPECT_EQ(RunBoth(kGemlet + " " + args + " --exact --threads 2 -o " + out, &log), 0) << log;
  auto a = ReadNpy(out);
  EXPECT_TRUE(a.ok()) << out;
  return a.ok() ? *a : NpyArray{};
}

TEST(ConvertMmproj, SoftTokensAndGreedyIdsAreTheHfModels) {
  GEMLET_NEED_IMAGE_LIBS();
  GEMLET_NEED_AUDIO_LIBS();
  const std::string s = ScratchDir() + "/mmproj-soft-";
  // Vision, F32 mmproj, keep: resized-C-140 (no resize) and image-A at 70 soft tokens.
  const std::string mv = ConvertMmproj("tiny-vision-text-f32.gguf", "tiny-vision-mmproj.gguf", "keep");
  const std::string hv = Converted("tiny-e2b-vision", "model.safetensors", "keep");
  for (const auto& [image, golden, opts] :
       {std::tuple{"resized-C-140.png", "soft-C-140.npy", " --no-resize"},
        std::tuple{"image-A.png", "soft-A-70.npy", " --image-tokens 70"}}) {
    SCOPED_TRACE(image);
    const std::string args = std::string("encode-image --image ") + VisionDir() + image + opts;
    const NpyArray got = Encode(args + " -m " + mv, s + "mv.npy");
    Encode(args + " -m " + hv, s + "hv.npy");
    EXPECT_EQ(ReadAll(s + "mv.npy"), ReadAll(s + "hv.npy"));
    auto want = ReadNpy(VisionDir() + golden);
    ASSERT_TRUE(want.ok());
    const auto [max_d, mean_d] = Diff(got.data, want->data);
    std::printf("[mmproj] vision F32 %-18s vs golden: max %.2e mean %.2e\n", image, max_d, mean_d);
    EXPECT_LE(max_d, 1e-3);  // the vision oracle's exact tier
    EXPECT_LE(mean_d, 1e-4);
  }
  // Audio, F32 mmproj, keep: the golden features of bursts, and sweep.wav from the file.
  const std::string ma = ConvertMmproj("tiny-audio-text-f32.gguf", "tiny-audio-mmproj.gguf", "keep");
  const std::string ha = Converted("tiny-e2b-audio", "model.safetensors", "keep");
  const NpyArray got = Encode("encode-audio --features-in " + AudioDir() + "features-bursts.npy -m " + ma, s + "ma.npy");
  Encode("encode-audio --features-in " + AudioDir() + "features-bursts.npy -m " + ha, s + "ha.npy");
  EXPECT_EQ(ReadAll(s + "ma.npy"), ReadAll(s + "ha.npy"));
  auto want = ReadNpy(AudioDir() + "soft-bursts.npy");
  ASSERT_TRUE(want.ok());
  const auto [max_d, mean_d] = Diff(got.data, want->data);
  std::printf("[mmproj] audio F32 bursts vs golden: max %.2e (x RMS %.2e) mean %.2e\n", max_d,
              max_d / Rms(want->data), mean_d);
  EXPECT_LE(max_d, 1e-3 * Rms(want->data));  // the audio oracle's exact tier
  Encode("encode-audio --audio " + AudioDir() + "sweep.wav -m " + ma, s + "ma.npy");
  Encode("encode-audio --audio " + AudioDir() + "sweep.wav -m " + ha, s + "ha.npy");
  EXPECT_EQ(ReadAll(s + "ma.npy"), ReadAll(s + "ha.npy"));

  // run --image / --audio: the same greedy ids and text as the HF-converted model.
  auto ids_text = [](const std::string& out) {
    const size_t at = out.find('{');
    auto j = nlohmann::json::parse(at == std::string::npos ? "" : out.substr(at), nullptr, false);
    return j.is_object() ? nlohmann::json{j["ids"], j["prompt_tokens"], j["text"]} : nlohmann::json();
  };
  std::string a, b;
  const std::string run = " --exact --threads 2 --temp 0 --json --chat -n 8 ";
  const std::string img = "--image-tokens 70 --image " + VisionDir() + "image-A.png -p 'What is it?'";
  ASSERT_EQ(RunCommand(kGemlet + " run -m " + mv + run + img, &a), 0) << a;
  ASSERT_EQ(RunCommand(kGemlet + " run -m " + hv + run + img, &b), 0) << b;
  EXPECT_FALSE(ids_text(a).is_null()) << a;
  EXPECT_EQ(ids_text(a), ids_text(b)) << a << "\n" << b;
  EXPECT_NE(a.find("\"prompt_tokens\":103"), std::string::npos) << a;
  const std::string aud = "--audio " + AudioDir() + "click.wav -p 'What is it?'";
  ASSERT_EQ(RunCommand(kGemlet + " run -m " + ma + run + aud, &a), 0) << a;
  ASSERT_EQ(RunCommand(kGemlet + " run -m " + ha + run + aud, &b), 0) << b;
  EXPECT_FALSE(ids_text(a).is_null()) << a;
  EXPECT_EQ(ids_text(a), ids_text(b)) << a << "\n" << b;
}

// llama.cpp's F16 mmproj (2-D weights rounded to f16 by its converter) under the default plan
// (towers f16): the soft tokens within the f16 tier of oracle_vision_test.cc (max 1e-3, mean
// 2e-4) and the audio oracle's exact tier (1e-3 × RMS); and the towers byte for byte the HF
// path's under the same plan.
TEST(ConvertMmproj, F16MmprojWithinTheF16Tier) {
  GEMLET_NEED_IMAGE_LIBS();
  const std::string s = ScratchDir() + "/mmproj-f16-";
  const std::string mv = ConvertMmproj("tiny-vision-text-f32.gguf", "tiny-vision-mmproj-f16.gguf", "default");
  const NpyArray got =
      Encode("encode-image --no-resize --image " + VisionDir() + "resized-C-140.png -m " + mv, s + "v.npy");
  auto want = ReadNpy(VisionDir() + "soft-C-140.npy");
  ASSERT_TRUE(want.ok());
  auto [max_d, mean_d] = Diff(got.data, want->data);
  std::printf("[mmproj] vision F16 mmproj C-140 vs golden: max %.2e mean %.2e\n", max_d, mean_d);
  EXPECT_LE(max_d, 1e-3);
  EXPECT_LE(mean_d, 2e-4);

  const std::string ma = ConvertMmproj("tiny-audio-text-f32.gguf", "tiny-audio-mmproj-f16.gguf", "default");
  const NpyArray got_a = Encode("encode-audio --features-in " + AudioDir() + "features-bursts.npy -m " + ma, s + "a.npy");
  auto want_a = ReadNpy(AudioDir() + "soft-bursts.npy");
  ASSERT_TRUE(want_a.ok());
  std::tie(max_d, mean_d) = Diff(got_a.data, want_a->data);
  std::printf("[mmproj] audio F16 mmproj bursts vs golden: max %.2e (x RMS %.2e) mean %.2e\n", max_d,
              max_d / Rms(want_a->data), mean_d);
  EXPECT_LE(max_d, 1e-3 * Rms(want_a->data));

  // The default plan stores the audio tower in f16, rounding bf16 as llama.cpp does: byte for
  // byte the HF path's. The vision tower is bf16, the checkpoint's values; the f16 mmproj's are
  // those values except where f16's subnormals rounded them.
  auto v16 = Open(mv), hv16 = Open(Converted("tiny-e2b-vision", "model.safetensors", "default"));
  auto a16 = Open(ma), ha16 = Open(Converted("tiny-e2b-audio", "model.safetensors", "default"));
  ASSERT_TRUE(v16 && hv16 && a16 && ha16);
  EXPECT_EQ(ExpectSameTowers(*v16, *hv16, Same::kValuesThroughF16), 85);
  EXPECT_EQ(ExpectSameTowers(*a16, *ha16, Same::kBytes), 164);
}

// A copy of tests/data/mmproj/<name> with the first occurrence of `from` replaced by `to`
// (same length: header bytes only).
std::string Doctored(const std::string& name, const std::string& from, const std::string& to) {
  std::string b = ReadAll(kData + name);
  const size_t at = b.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(from.size(), to.size());
  if (at != std::string::npos) b.replace(at, from.size(), to);
  const std::string out = ScratchDir() + "/doctored-" + std::to_string(std::hash<std::string>()(from + to)) + ".gguf";
  std::ofstream(out, std::ios::binary) << b;
  return out;
}

// The u32 value of `key` set to `v` (the key, its u32 type tag, then the value).
std::string WithU32(const std::string& name, const std::string& key, uint32_t v) {
  std::string b = ReadAll(kData + name);
  const size_t at = b.find(key);
  EXPECT_NE(at, std::string::npos) << key;
  std::memcpy(b.data() + at + key.size() + 4, &v, 4);
  const std::string out = ScratchDir() + "/doctored-" + key + ".gguf";
  std::ofstream(out, std::ios::binary) << b;
  return out;
}

// The tensor info of `tensor` with its ne[dim] (GGUF order, innermost first) set to `v`
// (smaller: the data stays inside the file).
std::string WithDim(const std::string& name, const std::string& tensor, int dim, uint64_t v) {
  std::string b = ReadAll(kData + name);
  const size_t at = b.find(tensor);
  EXPECT_NE(at, std::string::npos) << tensor;
  std::memcpy(b.data() + at + tensor.size() + 4 + 8 * dim, &v, 8);
  const std::string out = ScratchDir() + "/doctored-" + tensor + ".gguf";
  std::ofstream(out, std::ios::binary) << b;
  return out;
}

TEST(ConvertMmproj, BadInputsGiveOneClearError) {
  const std::string text = kData + "tiny-vision-text-f32.gguf", vision = kData + "tiny-vision-mmproj.gguf";
  const std::string out = ScratchDir() + "/mmproj-bad.gemlet";
  struct Case {
    std::string what, src, mmproj;
    std::vector<std::string> says;  // each must be in the one line
  };
  const std::vector<Case> cases = {
      {"a text model of another hidden size (tiny-e4b: 96)", OracleDir() + "tiny-e4b/model-bf16.gguf", vision,
       {"tiny-vision-mmproj.gguf", "clip.vision.projection_dim is 64", "hidden size is 96"}},
      {"a doctored projection_dim", text, WithU32("tiny-vision-mmproj.gguf", "clip.vision.projection_dim", 65),
       {"doctored-clip.vision.projection_dim.gguf", "clip.vision.projection_dim is 65", "hidden size is 64"}},
      {"a projection tensor of another width", text, WithDim("tiny-vision-mmproj.gguf", "mm.input_projection.weight", 1, 32),
       {"doctored-", "tensor mm.input_projection.weight has shape [32, 64] but the config needs [64, 64]"}},
      {"a missing tensor", text, Doctored("tiny-vision-mmproj.gguf", "v.blk.1.ln1.weight", "v.blk.1.lnX.weight"),
       {"doctored-", "tensor v.blk.1.ln1.weight is missing"}},
      {"an unknown projector type", text, Doctored("tiny-vision-mmproj.gguf", "gemma4v", "qwen2vl"),
       {"doctored-", "clip.vision.projector_type is 'qwen2vl'", "gemma4v"}},
      {"an unknown audio projector type", kData + "tiny-audio-text-f32.gguf",
       Doctored("tiny-audio-mmproj.gguf", "gemma4a", "ultravx"), {"clip.audio.projector_type is 'ultravx'"}},
      {"a non-GGUF file", text, VisionDir() + "image-A.png", {"image-A.png", "not a valid GGUF file"}},
      {"a text GGUF as the mmproj", text, text, {"general.architecture is 'gemma4', not clip"}},
      {"an HF folder with --mmproj", OracleDir() + "tiny-e2b-vision", vision, {"--mmproj goes with a GGUF text model"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    std::string log;
    EXPECT_EQ(RunBoth(kGemlet + " convert " + c.src + " --mmproj " + c.mmproj + " -q -o " + out, &log), 1) << log;
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
    EXPECT_EQ(log.rfind("gemlet convert: ", 0), 0u) << log;
    for (const std::string& s : c.says) EXPECT_NE(log.find(s), std::string::npos) << s << " not in: " << log;
    EXPECT_FALSE(fs::exists(out)) << log;
  }
}

}  // namespace convert_mmproj_test
}  // namespace gemlet::oracle
