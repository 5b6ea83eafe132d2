#include "tools/convert/gguf_import.h"

#include <gtest/gtest.h>

#include <cstring>

#include "base/mapped_file.h"
#include "format/gguf_test_util.h"
#include "model/gemma4_config.h"
#include "model/gemma4_drafter_config.h"
#include "tools/convert/hf_import.h"

namespace gemlet::convert {
namespace gguf_import_test {

using gemlet::testing::GgufBuilder;

TEST(GgufImport, ShortestDecimal) {
  EXPECT_EQ(ShortestDecimal(1e-6f), 1e-6);
  EXPECT_EQ(ShortestDecimal(9.99999997e-7f), 1e-6);
  EXPECT_EQ(ShortestDecimal(0.1f), 0.1);
  EXPECT_EQ(ShortestDecimal(30.0f), 30.0);
  EXPECT_EQ(ShortestDecimal(1e6f), 1e6);
  EXPECT_EQ(ShortestDecimal(0.0f), 0.0);
}

// tiny-e2b's GGUF metadata maps to the same Gemma4Config as its config.json.
TEST(GgufImport, OracleConfigsEqualHf) {
  for (const char* v : {"tiny-e2b", "tiny-e4b"}) {
    const std::string dir = std::string(GEMLET_SHARED_DIR) + "/oracle/" + v;
    auto g = GgufFile::Open(dir + "/model-q8_0.gguf");
    ASSERT_TRUE(g.ok());
    auto j = GgufTextConfig(**g);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    auto from_gguf = model::Gemma4Config::FromJson(*j);
    ASSERT_TRUE(from_gguf.ok()) << from_gguf.status().ToString();
    auto text = ReadFileToString(dir + "/config.json");
    ASSERT_TRUE(text.ok());
    auto tc = HfTextConfig(nlohmann::json::parse(*text), "config.json");
    ASSERT_TRUE(tc.ok());
    auto from_hf = model::Gemma4Config::FromJson(*tc);
    ASSERT_TRUE(from_hf.ok());
    EXPECT_EQ(from_gguf->ToJson(), from_hf->ToJson()) << v;
    EXPECT_EQ(from_gguf->rope_pairs(from_gguf->num_layers - 1), 8);
    EXPECT_EQ(from_gguf->use_double_wide_mlp, std::string(v) == "tiny-e2b");
  }
}

// llama.cpp's gemma4-assistant GGUFs of the drafter oracle (tests/data/assistant) map to the
// oracle's own config; without the sparse head, to the same with use_ordered_embeddings false;
// without the top-k key, to HF's default 32 (more than the tiny drafter's 16 centroids: refused).
TEST(GgufImport, AssistantConfigsEqualHf) {
  const std::string data = std::string(GEMLET_SOURCE_DIR) + "/tests/data/assistant/";
  auto text = ReadFileToString(std::string(GEMLET_SHARED_DIR) + "/oracle/tiny-e2b-assistant/config.json");
  ASSERT_TRUE(text.ok());
  auto hf = model::Gemma4DrafterConfig::FromJson(nlohmann::json::parse(*text));
  ASSERT_TRUE(hf.ok()) << hf.status().ToString();
  for (const char* f : {"tiny-assistant-centroids-f32.gguf", "tiny-assistant-f32.gguf"}) {
    auto g = GgufFile::Open(data + f);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    auto j = GgufDrafterConfig(**g);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    auto cfg = model::Gemma4DrafterConfig::FromJson(*j);
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    model::Gemma4DrafterConfig want = *hf;
    if (std::string(f) == "tiny-assistant-f32.gguf") {
      want.use_ordered_embeddings = false;
      want.num_centroids = want.centroid_top_k = 0;
    }
    EXPECT_EQ(cfg->ToJson(), want.ToJson()) << f;
    EXPECT_EQ(GgufTextConfig(**g).status().message(),
              data + f + ": general.architecture is 'gemma4-assistant', not gemma4 (or gemma4-assistant, an MTP drafter)");
  }
  auto g = GgufFile::Open(data + "tiny-assistant-centroids-f32.gguf");
  ASSERT_TRUE(g.ok());
  GgufBuilder b;
  for (const std::string& k : (*g)->keys()) {
    if (k == "gemma4-assistant.centroid_intermediate_top_k") continue;
    const GgufValue* v = (*g)->Find(k);
    b.Raw(k, v->type, std::string(reinterpret_cast<const char*>(v->raw), v->raw_size));
  }
  for (const auto& t : (*g)->tensors()) {
    b.Tensor(t.name, std::vector<int64_t>(t.shape.rbegin(), t.shape.rend()), t.ggml_type,
             std::string(reinterpret_cast<const char*>(t.data), t.nbytes));
  }
  const std::string image = b.Build();
  auto no_key = GgufFile::FromMemory(reinterpret_cast<const uint8_t*>(image.data()), image.size(), "no-top-k.gguf");
  ASSERT_TRUE(no_key.ok()) << no_key.status().ToString();
  auto j = GgufDrafterConfig(**no_key);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(), "no-top-k.gguf: drafter config: centroid_intermediate_top_k = 32 is not in [1, 16]");
}

struct Meta {
  std::string arch = "gemma4";
  std::vector<int32_t> ff = {32, 32, 32, 32, 64, 64, 64};
  std::vector<bool> pattern = {true, true, true, false, true, true, false};
  uint32_t value_length = 64;
  uint32_t rope_dim_swa = 32;
  uint32_t rope_dim = 64;
  bool rope_freqs = true;
  std::vector<float> freqs;  // default: 8 × 1, 24 × 1e30
  uint32_t experts = 0;
};

std::string Build(const Meta& m) {
  GgufBuilder b;
  b.Str("general.architecture", m.arch)
      .U32("gemma4.block_count", 7)
      .U32("gemma4.context_length", 131072)
      .U32("gemma4.embedding_length", 64)
      .I32s("gemma4.feed_forward_length", m.ff)
      .U32("gemma4.attention.head_count", 2)
      .U32("gemma4.attention.head_count_kv", 1)
      .F32("gemma4.rope.freq_base", 1e6f)
      .F32("gemma4.rope.freq_base_swa", 1e4f)
      .F32("gemma4.attention.layer_norm_rms_epsilon", 1e-6f)
      .U32("gemma4.attention.key_length", 64)
      .U32("gemma4.attention.value_length", m.value_length)
      .U32("gemma4.attention.key_length_swa", 32)
      .U32("gemma4.attention.value_length_swa", 32)
      .F32("gemma4.final_logit_softcapping", 30.0f)
      .U32("gemma4.attention.sliding_window", 16)
      .U32("gemma4.attention.shared_kv_layers", 3)
      .U32("gemma4.embedding_length_per_layer_input", 32)
      .Bools("gemma4.attention.sliding_window_pattern", m.pattern)
      .U32("gemma4.rope.dimension_count", m.rope_dim)
      .U32("gemma4.rope.dimension_count_swa", m.rope_dim_swa)
      .Strings("tokenizer.ggml.tokens", {"<pad>", "<eos>", "<bos>", "x"});
  if (m.experts) b.U32("gemma4.expert_count", m.experts);
  if (m.rope_freqs) {
    std::vector<float> f = m.freqs;
    if (f.empty()) {
      f.assign(32, 1e30f);
      for (int i = 0; i < 8; ++i) f[i] = 1.0f;
    }
    std::string data(f.size() * 4, '\0');
    std::memcpy(data.data(), f.data(), data.size());
    b.Tensor("rope_freqs.weight", {static_cast<int64_t>(f.size())}, 0, data);
  }
  return b.Build();
}

Result<nlohmann::json> Config(const std::string& image) {
  auto g = GgufFile::FromMemory(reinterpret_cast<const uint8_t*>(image.data()), image.size(), "g.gguf");
  if (!g.ok()) return g.status();
  return GgufTextConfig(**g);
}

TEST(GgufImport, HandBuiltConfig) {
  const std::string image = Build(Meta());
  auto j = Config(image);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ((*j)["vocab_size"], 4);
  EXPECT_EQ((*j)["head_dim"], 32);
  EXPECT_EQ((*j)["global_head_dim"], 64);
  EXPECT_EQ((*j)["intermediate_size"], 32);
  EXPECT_EQ((*j)["use_double_wide_mlp"], true);
  EXPECT_EQ((*j)["rms_norm_eps"], 1e-6);
  EXPECT_EQ((*j)["rope_parameters"]["full_attention"]["partial_rotary_factor"], 0.25);
  EXPECT_EQ((*j)["rope_parameters"]["sliding_attention"]["rope_theta"], 1e4);
  EXPECT_EQ((*j)["layer_types"][3], "full_attention");

  Meta no_freqs;
  no_freqs.rope_freqs = false;
  no_freqs.ff = {32, 32, 32, 32, 32, 32, 32};
  auto k = Config(Build(no_freqs));
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  EXPECT_EQ((*k)["rope_parameters"]["full_attention"]["partial_rotary_factor"], 1.0);
  EXPECT_EQ((*k)["use_double_wide_mlp"], false);
}

void ExpectError(const Meta& m, const std::string& needle) {
  const std::string image = Build(m);
  auto j = Config(image);
  ASSERT_FALSE(j.ok()) << needle;
  EXPECT_NE(j.status().message().find("g.gguf"), std::string::npos) << j.status().message();
  EXPECT_NE(j.status().message().find(needle), std::string::npos) << j.status().message();
}

TEST(GgufImport, Rejections) {
  Meta m;
  m.arch = "llama";
  ExpectError(m, "general.architecture is 'llama', not gemma4");
  m = Meta();
  m.freqs.assign(32, 1.0f);
  m.freqs[20] = 2.0f;
  ExpectError(m, "rope_freqs.weight[20] = 2.0");
  m = Meta();
  m.freqs.assign(16, 1.0f);
  ExpectError(m, "rope_freqs.weight is F32 [16], expected F32 [32]");
  m = Meta();
  m.rope_dim_swa = 16;
  ExpectError(m, "rope.dimension_count_swa 16");
  m = Meta();
  m.rope_dim = 16;
  ExpectError(m, "rope.dimension_count 16");
  m = Meta();
  m.value_length = 32;
  ExpectError(m, "value_length 32 differs");
  m = Meta();
  m.ff = {32, 32, 48, 32, 64, 64, 64};
  ExpectError(m, "feed_forward_length[2] = 48");
  m = Meta();
  m.ff = {32, 32, 32, 32, 64, 32, 64};
  ExpectError(m, "doubles on some KV-shared layers only");
  m = Meta();
  m.ff = {32, 32};
  ExpectError(m, "feed_forward_length has 2 entries for 7 layers");
  m = Meta();
  m.pattern = {true, false};
  ExpectError(m, "sliding_window_pattern has 2 entries for 7 layers");
  m = Meta();
  m.experts = 128;
  ExpectError(m, "MoE");
}

}  // namespace gguf_import_test
}  // namespace gemlet::convert
