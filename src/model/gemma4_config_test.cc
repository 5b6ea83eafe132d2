#include "model/gemma4_config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "model/gemma4_tensors.h"

namespace gemlet::model {
namespace gemma4_config_test {

nlohmann::json LoadTextConfig(const std::string& variant) {
  std::ifstream in(std::string(GEMLET_SHARED_DIR) + "/oracle/" + variant + "/config.json");
  return nlohmann::json::parse(in)["text_config"];
}

TEST(Gemma4Config, TinyE2bDerivedTable) {
  auto c = Gemma4Config::FromJson(LoadTextConfig("tiny-e2b"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->first_kv_shared(), 4);
  EXPECT_EQ(c->kv_source(4), 2);
  EXPECT_EQ(c->kv_source(5), 2);
  EXPECT_EQ(c->kv_source(6), 3);
  for (int64_t l = 0; l < c->num_layers; ++l) EXPECT_EQ(c->read_by_shared(l), l == 2 || l == 3) << l;
  EXPECT_EQ(c->head_dim_of(3), 64);
  EXPECT_EQ(c->ffn_dim(3), 32);
  EXPECT_EQ(c->ffn_dim(4), 64);
  EXPECT_EQ(c->rope_pairs(3), 8);
  EXPECT_EQ(c->rope_pairs(0), 16);
  auto again = Gemma4Config::FromJson(c->ToJson());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ToJson(), c->ToJson());
}

TEST(Gemma4Config, TinyE4bKvSharing) {
  auto c = Gemma4Config::FromJson(LoadTextConfig("tiny-e4b"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->kv_source(3), 1);
  EXPECT_EQ(c->kv_source(4), 1);
  EXPECT_EQ(c->kv_source(5), 2);
  for (int64_t l = 0; l < c->num_layers; ++l) EXPECT_EQ(c->read_by_shared(l), l == 1 || l == 2) << l;
  EXPECT_EQ(c->ffn_dim(5), 32);
  int n_kv = 0;
  for (const auto& t : ExpectedTensors(*c)) n_kv += t.name.find("attn_k") != std::string::npos;
  EXPECT_EQ(n_kv, 3 * 2);  // attn_k and attn_k_norm on layers 0..2
}

TEST(Gemma4Config, RejectsBadConfigs) {
  auto j = LoadTextConfig("tiny-e2b");
  j["layer_types"].erase(0);
  EXPECT_FALSE(Gemma4Config::FromJson(j).ok());
  j = LoadTextConfig("tiny-e2b");
  j["enable_moe_block"] = true;
  EXPECT_FALSE(Gemma4Config::FromJson(j).ok());
  j = LoadTextConfig("tiny-e2b");
  j["hidden_size"] = "64";
  EXPECT_FALSE(Gemma4Config::FromJson(j).ok());
  j = LoadTextConfig("tiny-e2b");
  j.erase("head_dim");
  EXPECT_FALSE(Gemma4Config::FromJson(j).ok());
}

TEST(Gemma4Tensors, SkipRules) {
  auto c = Gemma4Config::FromJson(LoadTextConfig("tiny-e2b"));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(IsSkippedHfTensor(*c, "model.vision_tower.x.weight"));
  EXPECT_TRUE(IsSkippedHfTensor(*c, "model.language_model.layers.5.self_attn.k_proj.weight"));
  EXPECT_FALSE(IsSkippedHfTensor(*c, "model.language_model.layers.2.self_attn.k_proj.weight"));
  EXPECT_FALSE(IsSkippedHfTensor(*c, "model.language_model.layers.5.self_attn.q_proj.weight"));
  EXPECT_TRUE(IsSkippedGgufTensor(*c, "blk.6.attn_k_norm.weight"));
  EXPECT_TRUE(IsSkippedGgufTensor(*c, "rope_freqs.weight"));
  EXPECT_FALSE(IsSkippedGgufTensor(*c, "blk.3.attn_k_norm.weight"));
}

}  // namespace gemma4_config_test
}  // namespace gemlet::model
