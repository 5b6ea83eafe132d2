#include "model/gemma4_drafter_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "model/gemma4_drafter_tensors.h"

namespace gemlet::model {
namespace gemma4_drafter_config_test {

nlohmann::json Load(const std::string& variant) {
  std::ifstream in(std::string(GEMLET_SHARED_DIR) + "/oracle/" + variant + "/config.json");
  return nlohmann::json::parse(in);
}

Gemma4Config Target(const std::string& variant) {
  auto c = Gemma4Config::FromJson(Load(variant)["text_config"]);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

TEST(Gemma4DrafterConfig, OracleAssistantReadsAndRoundTrips) {
  auto c = Gemma4DrafterConfig::FromJson(Load("tiny-e2b-assistant"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->backbone_hidden_size, 64);
  EXPECT_EQ(c->hidden_size, 32);
  EXPECT_EQ(c->num_layers, 4);
  EXPECT_TRUE(c->is_full(3));
  EXPECT_FALSE(c->is_full(2));
  EXPECT_EQ(c->q_dim(3), 128);
  EXPECT_EQ(c->tokens_per_centroid(), 32);
  EXPECT_EQ(c->candidates(), 128);
  EXPECT_EQ(c->rope_pairs_full(), 8);
  auto again = Gemma4DrafterConfig::FromJson(c->ToJson());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->ToJson(), c->ToJson());
  // The oracle's 50 tensors: 6 globals (with the centroid head) + 11 per layer.
  EXPECT_EQ(DrafterTensors(*c).size(), 50u);
  const Gemma4Config t = Target("tiny-e2b");
  EXPECT_TRUE(c->CheckFits(t).ok());
  EXPECT_EQ(TargetKvLayer(t, AttnType::kSliding), 2);
  EXPECT_EQ(TargetKvLayer(t, AttnType::kFull), 3);
}

TEST(Gemma4DrafterConfig, RejectsWhatItCannotRun) {
  const nlohmann::json base = Load("tiny-e2b-assistant");
  auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = base;
    edit(j);
    return Gemma4DrafterConfig::FromJson(j).status();
  };
  EXPECT_FALSE(with([](nlohmann::json& j) { j["model_type"] = "gemma4"; }).ok());
  EXPECT_FALSE(with([](nlohmann::json& j) { j["text_config"]["num_kv_shared_layers"] = 2; }).ok());
  EXPECT_FALSE(with([](nlohmann::json& j) { j["text_config"]["hidden_size_per_layer_input"] = 8; }).ok());
  EXPECT_FALSE(with([](nlohmann::json& j) { j["text_config"]["final_logit_softcapping"] = 30.0; }).ok());
  EXPECT_FALSE(with([](nlohmann::json& j) { j["num_centroids"] = 15; }).ok());  // does not divide 512
  EXPECT_FALSE(with([](nlohmann::json& j) { j["centroid_intermediate_top_k"] = 17; }).ok());
  EXPECT_FALSE(with([](nlohmann::json& j) { j.erase("backbone_hidden_size"); }).ok());
  EXPECT_TRUE(with([](nlohmann::json& j) { j["use_ordered_embeddings"] = false; }).ok());
  auto dense = Gemma4DrafterConfig::FromJson([&] {
    nlohmann::json j = base;
    j["use_ordered_embeddings"] = false;
    return j;
  }());
  ASSERT_TRUE(dense.ok());
  EXPECT_EQ(DrafterTensors(*dense).size(), 48u);  // no centroids, no token ordering
}

TEST(Gemma4DrafterConfig, CheckFitsNamesTheMismatch) {
  auto c = Gemma4DrafterConfig::FromJson(Load("tiny-e2b-assistant"));
  ASSERT_TRUE(c.ok());
  Status st = c->CheckFits(Target("tiny-e4b"));  // hidden 96
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("hidden size is 64 in the drafter, 96 in the target"), std::string::npos) << st.message();
  Gemma4Config t = Target("tiny-e2b");
  t.vocab_size = 1024;
  st = c->CheckFits(t);
  EXPECT_NE(st.message().find("vocabulary is 512 in the drafter, 1024 in the target"), std::string::npos)
      << st.message();
  t = Target("tiny-e2b");
  t.global_head_dim = 128;
  st = c->CheckFits(t);
  EXPECT_NE(st.message().find("drafter layer 3 has head dim 64, its target KV layer 3 has 128"), std::string::npos)
      << st.message();
}

}  // namespace gemma4_drafter_config_test
}  // namespace gemlet::model
