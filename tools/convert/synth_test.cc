#include "tools/convert/synth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "base/half.h"
#include "base/mapped_file.h"
#include "format/safetensors.h"
#include "model/gemma4_tensors.h"
#include "tools/convert/sha256.h"
#include "tools/convert/synth_tokenizer.h"

namespace gemlet::convert {
namespace synth_test {

namespace fs = std::filesystem;
using model::Gemma4Config;

std::string TempDir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/synth_" + name + "." + std::to_string(::getpid());
  fs::remove_all(d);
  return d;
}

nlohmann::json ReadJson(const std::string& path) {
  auto text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << path;
  return text.ok() ? nlohmann::json::parse(*text) : nlohmann::json();
}

std::vector<int64_t> FullLayers(const Gemma4Config& c) {
  std::vector<int64_t> out;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    if (c.is_full(l)) out.push_back(l);
  }
  return out;
}

TEST(SynthPreset, E2bIsTheSpecConfig) {
  auto c = SynthPresetConfig("e2b");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->vocab_size, 262144);
  EXPECT_EQ(c->hidden_size, 1536);
  EXPECT_EQ(c->num_layers, 35);
  EXPECT_EQ(c->num_heads, 8);
  EXPECT_EQ(c->num_kv_heads, 1);
  EXPECT_EQ(c->head_dim, 256);
  EXPECT_EQ(c->global_head_dim, 512);
  EXPECT_EQ(c->hidden_size_per_layer_input, 256);
  EXPECT_EQ(c->sliding_window, 512);
  EXPECT_EQ(c->num_kv_shared_layers, 20);
  EXPECT_EQ(FullLayers(*c), (std::vector<int64_t>{4, 9, 14, 19, 24, 29, 34}));
  EXPECT_EQ(c->ffn_dim(14), 6144);
  EXPECT_EQ(c->ffn_dim(15), 12288);  // double-wide on the KV-shared layers
  EXPECT_EQ(c->kv_source(34), 14);
  EXPECT_EQ(c->kv_source(33), 13);
  EXPECT_EQ(c->ple_total(), 8960);
}

TEST(SynthPreset, E4bIsTheSpecConfig) {
  auto c = SynthPresetConfig("e4b");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->vocab_size, 262144);
  EXPECT_EQ(c->hidden_size, 2560);
  EXPECT_EQ(c->num_layers, 42);
  EXPECT_EQ(c->num_kv_heads, 2);
  EXPECT_EQ(c->num_kv_shared_layers, 18);
  EXPECT_EQ(FullLayers(*c), (std::vector<int64_t>{5, 11, 17, 23, 29, 35, 41}));
  EXPECT_EQ(c->ffn_dim(0), 10240);
  EXPECT_EQ(c->ffn_dim(41), 10240);
  EXPECT_EQ(c->ple_total(), 10752);
}

TEST(SynthPreset, TinyIsShapedLikeTheOracle) {
  auto c = SynthPresetConfig("tiny");
  ASSERT_TRUE(c.ok());
  auto oracle_json = ReadJson(std::string(GEMLET_SHARED_DIR) + "/oracle/tiny-e2b/config.json");
  auto oracle = Gemma4Config::FromJson(oracle_json["text_config"]);
  ASSERT_TRUE(oracle.ok()) << oracle.status().ToString();
  EXPECT_EQ(c->layer_types, oracle->layer_types);
  EXPECT_EQ(FullLayers(*c), (std::vector<int64_t>{3, 6}));
  for (auto f : {&Gemma4Config::vocab_size, &Gemma4Config::hidden_size, &Gemma4Config::num_heads,
                 &Gemma4Config::num_kv_heads, &Gemma4Config::head_dim, &Gemma4Config::global_head_dim,
                 &Gemma4Config::hidden_size_per_layer_input, &Gemma4Config::sliding_window,
                 &Gemma4Config::num_kv_shared_layers}) {
    EXPECT_EQ((*c).*f, (*oracle).*f);
  }
  EXPECT_TRUE(c->use_double_wide_mlp);
  EXPECT_EQ(c->ffn_dim(3), c->intermediate_size);
  EXPECT_EQ(c->ffn_dim(4), 2 * c->intermediate_size);
}

TEST(SynthPreset, UnknownPresetIsAnError) {
  auto c = SynthPresetConfig("e8b");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("unknown preset 'e8b'"), std::string::npos);
}

TEST(SynthTensors, AllTextTensorsPlusUnusedSharedKv) {
  auto c = SynthPresetConfig("e2b");
  ASSERT_TRUE(c.ok());
  const auto expected = model::ExpectedTensors(*c);
  const auto tensors = SynthTensors(*c);
  EXPECT_EQ(tensors.size(), expected.size() + 3 * static_cast<size_t>(c->num_kv_shared_layers));
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& t : tensors) EXPECT_TRUE(shapes.emplace(t.hf_name, t.shape).second) << t.hf_name;
  for (const auto& e : expected) {
    ASSERT_TRUE(shapes.count(e.hf_name)) << e.hf_name;
    EXPECT_EQ(shapes[e.hf_name], e.shape) << e.hf_name;
  }
  // Layer 34 (full, shared) carries the unused K/V of a full layer, and the loader skips them.
  const std::string k34 = "model.language_model.layers.34.self_attn.k_proj.weight";
  ASSERT_TRUE(shapes.count(k34));
  EXPECT_EQ(shapes[k34], (std::vector<int64_t>{512, 1536}));
  EXPECT_TRUE(model::IsSkippedHfTensor(*c, k34));
  EXPECT_EQ(shapes["model.language_model.layers.15.self_attn.k_norm.weight"], (std::vector<int64_t>{256}));
}

TEST(SynthTensors, RecipeScales) {
  auto c = SynthPresetConfig("e2b");
  ASSERT_TRUE(c.ok());
  std::map<std::string, SynthTensor> by_name;
  for (const auto& t : SynthTensors(*c)) by_name[t.hf_name] = t;
  const std::string p = "model.language_model.";
  EXPECT_FLOAT_EQ(by_name[p + "embed_tokens.weight"].b, 0.8f / std::sqrt(1536.0f));
  EXPECT_FLOAT_EQ(by_name[p + "embed_tokens_per_layer.weight"].b, 1.0f / 16.0f);
  EXPECT_FLOAT_EQ(by_name[p + "layers.0.mlp.down_proj.weight"].b, 1.0f / std::sqrt(6144.0f));
  EXPECT_FLOAT_EQ(by_name[p + "layers.0.per_layer_projection.weight"].b, 1.0f / 16.0f);
  EXPECT_FLOAT_EQ(by_name[p + "layers.4.self_attn.q_norm.weight"].a, std::pow(512.0f, -0.25f));
  EXPECT_FLOAT_EQ(by_name[p + "layers.0.self_attn.k_norm.weight"].a, 0.25f);
  EXPECT_FLOAT_EQ(by_name[p + "norm.weight"].a, 5.0f);
  EXPECT_FLOAT_EQ(by_name[p + "layers.0.input_layernorm.weight"].a, 1.0f);
  EXPECT_EQ(by_name[p + "layers.7.layer_scalar"].dist, SynthTensor::Dist::kUniform);
}

TEST(SynthFill, DeterministicAndIndependentOfChunking) {
  SynthTensor t{"model.language_model.x.weight", {64, 1000}, SynthTensor::Dist::kNormal, 0.0f, 0.05f};
  const uint64_t n = 64000;
  std::vector<uint16_t> whole(n), pieces(n), again(n), other_seed(n), other_name(n);
  SynthFillBf16(t, 42, 0, n, whole.data());
  for (uint64_t b = 0; b < n; b += 777)
    SynthFillBf16(t, 42, b, std::min<uint64_t>(777, n - b), pieces.data() + b);
  SynthFillBf16(t, 42, 0, n, again.data());
  SynthFillBf16(t, 43, 0, n, other_seed.data());
  SynthTensor t2 = t;
  t2.hf_name = "model.language_model.y.weight";
  SynthFillBf16(t2, 42, 0, n, other_name.data());
  EXPECT_EQ(whole, pieces);
  EXPECT_EQ(whole, again);
  EXPECT_NE(whole, other_seed);
  EXPECT_NE(whole, other_name);
  int same = 0;
  for (uint64_t i = 0; i < n; ++i) same += whole[i] == other_seed[i];
  EXPECT_LT(same, static_cast<int>(n / 20));  // only chance collisions of bf16 values
}

TEST(SynthFill, NormalMomentsAndBounds) {
  SynthTensor t{"w", {1 << 20}, SynthTensor::Dist::kNormal, 0.25f, 0.5f};
  std::vector<uint16_t> v(1 << 20);
  SynthFillBf16(t, 7, 0, v.size(), v.data());
  double sum = 0, sum2 = 0, sum4 = 0, lo = 1e9, hi = -1e9;
  for (uint16_t h : v) {
    const double x = Bf16ToF32(h);
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const double mean = sum / v.size();
  for (uint16_t h : v) {
    const double d = Bf16ToF32(h) - mean;
    sum2 += d * d;
    sum4 += d * d * d * d;
  }
  const double var = sum2 / v.size();
  EXPECT_NEAR(mean, 0.25, 0.002);
  EXPECT_NEAR(std::sqrt(var), 0.5, 0.005);
  // Irwin–Hall(4) has excess kurtosis −0.3 (a Gaussian 0) and is bounded at ±2/√(1/3) = ±3.46σ.
  EXPECT_NEAR(sum4 / v.size() / (var * var), 2.7, 0.05);
  EXPECT_GE(lo, 0.25 - 3.47 * 0.5);
  EXPECT_LE(hi, 0.25 + 3.47 * 0.5);
  EXPECT_LT(lo, 0.25 - 2.5 * 0.5);  // the tails are really there
}

TEST(SynthFill, UniformLayerScalar) {
  SynthTensor t{"s", {4096}, SynthTensor::Dist::kUniform, 0.5f, 1.5f};
  std::vector<uint16_t> v(4096);
  SynthFillBf16(t, 1, 0, v.size(), v.data());
  double sum = 0;
  for (uint16_t h : v) {
    const float x = Bf16ToF32(h);
    EXPECT_GE(x, 0.5f);
    EXPECT_LE(x, 1.5f);  // bf16 rounding may reach the upper bound
    sum += x;
  }
  EXPECT_NEAR(sum / v.size(), 1.0, 0.02);
}

TEST(PlanShards, FillsInOrderAndIsolatesLargeTensors) {
  EXPECT_EQ(PlanShards({10, 10, 10}, 100), (std::vector<std::vector<size_t>>{{0, 1, 2}}));
  EXPECT_EQ(PlanShards({10, 10, 10}, 20), (std::vector<std::vector<size_t>>{{0, 1}, {2}}));
  EXPECT_EQ(PlanShards({5, 50, 5, 5}, 20), (std::vector<std::vector<size_t>>{{0}, {1}, {2, 3}}));
  EXPECT_EQ(PlanShards({}, 20), (std::vector<std::vector<size_t>>{}));
}

// Checks every tensor of a synthesized folder against the generator and the recipe.
void CheckWeights(const std::string& dir, const Gemma4Config& cfg, uint64_t seed) {
  auto folder = SafetensorsFolder::Open(dir);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  const auto tensors = SynthTensors(cfg);
  EXPECT_EQ((*folder)->entries().size(), tensors.size());
  for (const auto& t : tensors) {
    const auto* e = (*folder)->Find(t.hf_name);
    ASSERT_NE(e, nullptr) << t.hf_name;
    EXPECT_EQ(e->tensor->dtype, "BF16");
    EXPECT_EQ(e->tensor->shape, t.shape);
    std::vector<uint16_t> want(static_cast<size_t>(e->tensor->numel()));
    SynthFillBf16(t, seed, 0, want.size(), want.data());
    ASSERT_EQ(e->tensor->nbytes, want.size() * 2);
    EXPECT_EQ(std::memcmp(e->tensor->data, want.data(), e->tensor->nbytes), 0) << t.hf_name;
  }
}

TEST(Synthesize, TinyFolderLoadsAndMatchesTheGenerator) {
  const std::string dir = TempDir("tiny");
  SynthOptions o;
  o.out_dir = dir;
  o.seed = 5;
  auto r = Synthesize(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(std::set<std::string>(r->files.begin(), r->files.end()),
            (std::set<std::string>{"config.json", "generation_config.json", "tokenizer.json",
                                   "tokenizer_config.json", "model.safetensors"}));
  EXPECT_FALSE(fs::exists(dir + "/chat_template.jinja"));

  auto config = ReadJson(dir + "/config.json");
  EXPECT_EQ(config["model_type"], "gemma4");
  EXPECT_EQ(config["eos_token_id"], nlohmann::json({1, 106}));
  auto cfg = Gemma4Config::FromJson(config["text_config"]);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto preset = SynthPresetConfig("tiny");
  EXPECT_EQ(cfg->ToJson(), preset->ToJson());
  EXPECT_EQ(ReadJson(dir + "/generation_config.json")["eos_token_id"], nlohmann::json({1, 106, 50}));
  auto tok_size = TokenizerJsonVocabSize(ReadJson(dir + "/tokenizer.json"));
  ASSERT_TRUE(tok_size.ok());
  EXPECT_EQ(*tok_size, 512);
  CheckWeights(dir, *cfg, 5);
  fs::remove_all(dir);
}

TEST(Synthesize, SameSeedSameBytesForAnyThreadCount) {
  const std::string a = TempDir("det_a"), b = TempDir("det_b"), c = TempDir("det_c");
  SynthOptions o;
  o.seed = 11;
  o.out_dir = a;
  o.threads = 1;
  ASSERT_TRUE(Synthesize(o).ok());
  o.out_dir = b;
  o.threads = 3;
  ASSERT_TRUE(Synthesize(o).ok());
  o.out_dir = c;
  o.seed = 12;
  ASSERT_TRUE(Synthesize(o).ok());
  for (const char* f : {"/model.safetensors", "/config.json", "/tokenizer.json"}) {
    EXPECT_EQ(*ReadFileToString(a + f), *ReadFileToString(b + f)) << f;
  }
  EXPECT_NE(*ReadFileToString(a + "/model.safetensors"), *ReadFileToString(c + "/model.safetensors"));
  for (const auto& d : {a, b, c}) fs::remove_all(d);
}

// "The same seed gives byte-identical files on any machine": the tiny preset's files at seed 0
// against their sha256 (made once with `gemlet synth --preset tiny --seed 0` and sha256sum on
// x86-64). CI checks it on x86-64 (release and ASan) and on Arm64 under qemu; a change to the
// recipe, the generator, the file layout or the floating-point contraction of a build shows
// here. Changing the output on purpose means updating these values, in the same commit.
TEST(Synthesize, TinyPresetMatchesGoldenSha256) {
  const std::string dir = TempDir("golden");
  SynthOptions o;
  o.out_dir = dir;
  o.seed = 0;
  ASSERT_TRUE(Synthesize(o).ok());
  const std::map<std::string, std::string> golden = {
      {"config.json", "8ca8f63ca2b2f12021aaae2c2d89e5174ecd0e51750c9819a15e88b8aed650e3"},
      {"generation_config.json", "5439541d3bf0ba9ade7c1122dc14703f85f32a520150351b344b14f48c574cc2"},
      {"model.safetensors", "3951d4b30109db078980919a926f0c8d09fae60f5ec2ea4608582973c447afc5"},
      {"tokenizer.json", "f1c346c9e351c621d4346e5e5e5122988bad1c14d82de53d13f15e09da6047c6"},
      {"tokenizer_config.json", "d7d3d54520fd3c611b36c8097af6bca783a61999343fdae4bd19985207baaa38"},
  };
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.insert(e.path().filename().string());
  std::set<std::string> want;
  for (const auto& [f, sha] : golden) want.insert(f);
  EXPECT_EQ(files, want);
  for (const auto& [f, sha] : golden) {
    auto got = Sha256File(dir + "/" + f);
    ASSERT_TRUE(got.ok()) << f << ": " << got.status().ToString();
    EXPECT_EQ(*got, sha) << f;
  }
  fs::remove_all(dir);
}

TEST(Synthesize, ShardsWithAnIndexAndReplacesStaleWeights) {
  const std::string dir = TempDir("sharded");
  fs::create_directories(dir);
  ASSERT_TRUE(WriteStringToFile(dir + "/model-00009-of-00009.safetensors", "stale").ok());
  ASSERT_TRUE(WriteStringToFile(dir + "/model.safetensors", "stale").ok());
  SynthOptions o;
  o.out_dir = dir;
  o.max_shard_bytes = 200'000;
  uint64_t last_done = 0, total = 0;
  o.progress = [&](uint64_t done, uint64_t t) {
    EXPECT_GT(done, last_done);
    last_done = done;
    total = t;
  };
  auto r = Synthesize(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(last_done, total);
  EXPECT_FALSE(fs::exists(dir + "/model-00009-of-00009.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors"));
  auto index = ReadJson(dir + "/model.safetensors.index.json");
  EXPECT_EQ(index["metadata"]["total_size"], total);
  std::set<std::string> shard_files;
  for (const auto& [name, file] : index["weight_map"].items()) shard_files.insert(file.get<std::string>());
  ASSERT_GE(shard_files.size(), 3u);
  const size_t n = shard_files.size();
  for (size_t i = 0; i < n; ++i) {
    char want[64];
    std::snprintf(want, sizeof(want), "model-%05zu-of-%05zu.safetensors", i + 1, n);
    ASSERT_TRUE(shard_files.count(want)) << want;
    auto f = SafetensorsFile::Open(dir + "/" + want);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    uint64_t data = 0;
    for (const auto& t : (*f)->tensors()) data += t.nbytes;
    // At most 200 kB of data, unless the shard is one tensor (the 512×224 PLE table, 229 kB).
    EXPECT_TRUE(data <= 200'000 || (*f)->tensors().size() == 1) << want;
  }
  auto cfg = SynthPresetConfig("tiny");
  CheckWeights(dir, *cfg, 0);
  fs::remove_all(dir);
}

TEST(Synthesize, CopiesAGivenTokenizerAndTakesItsVocabSize) {
  // A tokenizer folder with a chat template: the oracle's 512-piece tokenizer.json, and a
  // tokenizer.json whose vocabulary is 600 ids.
  const std::string src = TempDir("tok_src"), dir = TempDir("tok_out");
  fs::create_directories(src);
  const std::string oracle = std::string(GEMLET_SHARED_DIR) + "/oracle/tiny-e2b/";
  auto tok = ReadJson(oracle + "tokenizer.json");
  tok["added_tokens"].push_back({{"id", 599}, {"content", "<extra>"}, {"special", true}});
  const std::string tok_text = tok.dump();
  ASSERT_TRUE(WriteStringToFile(src + "/tokenizer.json", tok_text).ok());
  ASSERT_TRUE(WriteStringToFile(src + "/chat_template.jinja", "{{ bos_token }}").ok());
  SynthOptions o;
  o.out_dir = dir;
  o.tokenizer = src;  // a folder
  auto r = Synthesize(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->config.vocab_size, 600);
  EXPECT_EQ(*ReadFileToString(dir + "/tokenizer.json"), tok_text);
  EXPECT_EQ(*ReadFileToString(dir + "/chat_template.jinja"), "{{ bos_token }}");
  EXPECT_FALSE(fs::exists(dir + "/tokenizer_config.json"));
  auto cfg = Gemma4Config::FromJson(ReadJson(dir + "/config.json")["text_config"]);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->vocab_size, 600);
  EXPECT_EQ(cfg->vocab_size_per_layer_input, 600);
  CheckWeights(dir, *cfg, 0);

  o.tokenizer = oracle + "tokenizer.json";  // a file, with tokenizer_config.json beside it
  ASSERT_TRUE(Synthesize(o).ok());
  EXPECT_EQ(*ReadFileToString(dir + "/tokenizer_config.json"),
            *ReadFileToString(oracle + "tokenizer_config.json"));
  fs::remove_all(src);
  fs::remove_all(dir);
}

TEST(Synthesize, ReportsBadInputs) {
  const std::string dir = TempDir("bad");
  SynthOptions o;
  o.out_dir = dir;
  o.preset = "huge";
  EXPECT_EQ(Synthesize(o).status().code(), ErrorCode::kInvalidArgument);
  o.preset = "tiny";
  o.tokenizer = dir + "/missing/tokenizer.json";
  auto missing = Synthesize(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing/tokenizer.json"), std::string::npos);
  fs::create_directories(dir);
  ASSERT_TRUE(WriteStringToFile(dir + "/bad.json", "{\"model\": {\"vocab\": [1, 2]}}").ok());
  o.tokenizer = dir + "/bad.json";
  auto bad = Synthesize(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.json: tokenizer.json: model.vocab"), std::string::npos)
      << bad.status().message();
  ASSERT_TRUE(WriteStringToFile(dir + "/trunc.json", "{\"model\": ").ok());
  o.tokenizer = dir + "/trunc.json";
  EXPECT_FALSE(Synthesize(o).ok());
  o.tokenizer.clear();
  o.out_dir = dir + "/bad.json";  // a file, not a folder
  EXPECT_EQ(Synthesize(o).status().code(), ErrorCode::kIo);
  fs::remove_all(dir);
}

}  // namespace synth_test
}  // namespace gemlet::convert
