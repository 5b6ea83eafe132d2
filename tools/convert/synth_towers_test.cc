#include "tools/convert/synth_towers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "model/gemma4_audio_tensors.h"
#include "model/gemma4_vision_tensors.h"

namespace gemlet::convert {
namespace synth_towers_test {

uint64_t Params(const std::vector<SynthTensor>& tensors) {
  uint64_t params = 0;
  for (const auto& t : tensors) {
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    params += n;
  }
  return params;
}

// What the converter (hf_import.cc) checks of a tower: the table's tensors in its order, with
// its shapes, except that a clip bound is 0-d as in HF (the table stores it as [1]).
void ExpectTheTable(const std::vector<SynthTensor>& tensors, const std::vector<model::TensorSpec>& specs) {
  ASSERT_EQ(tensors.size(), specs.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(tensors[i].hf_name, specs[i].hf_name);
    if (specs[i].cls == model::TensorClass::kScalar) {
      EXPECT_TRUE(tensors[i].shape.empty()) << tensors[i].hf_name;
      EXPECT_EQ(tensors[i].dist, SynthTensor::Dist::kUniform);
      const bool min = tensors[i].hf_name.find("_min") != std::string::npos;
      EXPECT_TRUE(min ? tensors[i].b < 0 : tensors[i].a > 0) << tensors[i].hf_name;
    } else {
      EXPECT_EQ(tensors[i].shape, specs[i].shape) << tensors[i].hf_name;
    }
  }
}

TEST(SynthVision, E2bTowerHasTheRealShapesAndHfNames) {
  model::Gemma4VisionConfig v;
  EXPECT_FALSE(SynthVisionConfig("tiny", 64, &v));  // the tests' model stays text-only
  ASSERT_TRUE(SynthVisionConfig("e2b", 1536, &v));
  const auto tensors = SynthVisionTensors(v);
  ExpectTheTable(tensors, model::ExpectedVisionTensors(v));
  EXPECT_EQ(tensors.front().hf_name, "model.vision_tower.patch_embedder.input_proj.weight");
  EXPECT_EQ(tensors.back().hf_name, "model.embed_vision.embedding_projection.weight");
  EXPECT_EQ(tensors.back().shape, (std::vector<int64_t>{1536, 768}));
  // spec-multimodal §1.1: ~168.5 M parameters.
  EXPECT_GT(Params(tensors), 168'000'000u);
  EXPECT_LT(Params(tensors), 169'000'000u);
}

// The config.json the e2b plan writes, read back the way the converter reads it.
TEST(SynthAudio, E2bConfigIsHfsDefaults) {
  model::Gemma4AudioConfig none;
  EXPECT_FALSE(SynthAudioConfig("tiny", 64, &none));  // the tests' audio model is the oracle's
  SynthOptions o;
  o.preset = "e2b";
  auto plan = PlanSynth(o, 0);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_TRUE(plan->audio);
  const nlohmann::json& j = plan->config_json["audio_config"];
  EXPECT_EQ(j["model_type"], "gemma4_audio");
  EXPECT_EQ(j["hidden_act"], "silu");
  EXPECT_EQ(j["use_clipped_linears"], true);
  EXPECT_EQ(j["subsampling_conv_channels"], nlohmann::json({128, 32}));
  auto c = model::Gemma4AudioConfig::FromHfConfig(plan->config_json);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->hidden_size, 1024);
  EXPECT_EQ(c->num_layers, 12);
  EXPECT_EQ(c->num_heads, 8);
  EXPECT_EQ(c->head_dim(), 128);
  EXPECT_EQ(c->sscp_out_dim(), 1024);  // 32 mel bins × 32 channels
  EXPECT_EQ(c->conv_kernel_size, 5);
  EXPECT_EQ(c->chunk_size, 12);
  EXPECT_EQ(c->context_left, 13);
  EXPECT_EQ(c->context_right, 0);
  EXPECT_EQ(c->logit_cap, 50.0);
  EXPECT_EQ(c->residual_weight, 0.5);
  EXPECT_EQ(c->rms_norm_eps, 1e-6);
  EXPECT_EQ(c->gradient_clipping, 1e10);
  EXPECT_EQ(c->output_proj_dims, 1536);
  EXPECT_EQ(c->text_hidden_size, 1536);
  EXPECT_EQ(c->boa_token_id, 256000);
  EXPECT_EQ(c->audio_token_id, 258881);
  EXPECT_EQ(c->eoa_token_id, 258883);
}

TEST(SynthAudio, E2bTowerHasTheRealShapesAndHfNames) {
  model::Gemma4AudioConfig a;
  ASSERT_TRUE(SynthAudioConfig("e2b", 1536, &a));
  const auto tensors = SynthAudioTensors(a);
  ExpectTheTable(tensors, model::ExpectedAudioTensors(a));
  EXPECT_EQ(tensors.front().hf_name, "model.audio_tower.subsample_conv_projection.layer0.conv.weight");
  EXPECT_EQ(tensors.front().shape, (std::vector<int64_t>{128, 1, 3, 3}));
  EXPECT_EQ(tensors.back().hf_name, "model.embed_audio.embedding_projection.weight");
  EXPECT_EQ(tensors.back().shape, (std::vector<int64_t>{1536, 1536}));
  int bounds = 0;
  for (const auto& t : tensors) bounds += t.shape.empty();
  EXPECT_EQ(bounds, 12 * 10 * 4);  // 10 clipped linears a layer (2 per FFN), 4 bounds each
  // spec-multimodal §2.4: ≈ 307 M parameters.
  EXPECT_GT(Params(tensors), 306'000'000u);
  EXPECT_LT(Params(tensors), 308'000'000u);

  ASSERT_TRUE(SynthAudioConfig("e4b", 2560, &a));  // the same tower, embed_audio 1536 → 2560
  EXPECT_EQ(SynthAudioTensors(a).back().shape, (std::vector<int64_t>{2560, 1536}));
}

TEST(SynthAudio, RecipeScales) {
  model::Gemma4AudioConfig a;
  ASSERT_TRUE(SynthAudioConfig("e2b", 1536, &a));
  std::map<std::string, SynthTensor> by;
  for (const auto& t : SynthAudioTensors(a)) by[t.hf_name] = t;
  const std::string p = "model.audio_tower.", l = p + "layers.11.";
  EXPECT_FLOAT_EQ(by[p + "subsample_conv_projection.layer0.conv.weight"].b, 1.0f / 3.0f);  // fan_in 9
  EXPECT_FLOAT_EQ(by[p + "subsample_conv_projection.layer1.conv.weight"].b, 1.0f / std::sqrt(1152.0f));
  EXPECT_FLOAT_EQ(by[l + "lconv1d.depthwise_conv1d.weight"].b, 1.0f / std::sqrt(5.0f));
  EXPECT_FLOAT_EQ(by[l + "feed_forward2.ffw_layer_2.linear.weight"].b, 1.0f / 64.0f);
  EXPECT_FLOAT_EQ(by[l + "self_attn.relative_k_proj.weight"].b, 1.0f / 32.0f);
  EXPECT_FLOAT_EQ(by["model.embed_audio.embedding_projection.weight"].b, 1.0f / std::sqrt(1536.0f));
  EXPECT_FLOAT_EQ(by[l + "norm_out.weight"].a, 1.0f);
  EXPECT_FLOAT_EQ(by[p + "subsample_conv_projection.layer1.norm.weight"].a, 1.0f);
  EXPECT_FLOAT_EQ(by[l + "self_attn.per_dim_scale"].a, 0.0f);
  EXPECT_FLOAT_EQ(by[l + "self_attn.per_dim_scale"].b, 0.3f);
  EXPECT_FLOAT_EQ(by[p + "output_proj.bias"].a, 0.0f);
  EXPECT_FLOAT_EQ(by[l + "lconv1d.linear_end.output_min"].a, -12.0f);
  EXPECT_FLOAT_EQ(by[l + "lconv1d.linear_end.input_max"].b, 12.0f);
}

bool AnyTensor(const SynthPlan& plan, bool (*pred)(const std::string&)) {
  for (const auto& t : plan.tensors) {
    if (pred(t.hf_name)) return true;
  }
  return false;
}

TEST(SynthPlan, NoAudioAndNoVisionLeaveTheirTowersOut) {
  SynthOptions o;
  o.preset = "e2b";
  auto both = PlanSynth(o, 0);
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  const size_t text = SynthTensors(both->config).size();
  model::Gemma4VisionConfig v;
  model::Gemma4AudioConfig a;
  ASSERT_TRUE(SynthVisionConfig("e2b", 1536, &v));
  ASSERT_TRUE(SynthAudioConfig("e2b", 1536, &a));
  const size_t nv = model::ExpectedVisionTensors(v).size(), na = model::ExpectedAudioTensors(a).size();
  EXPECT_EQ(both->tensors.size(), text + nv + na);
  EXPECT_TRUE(model::HasVisionConfig(both->config_json));
  EXPECT_TRUE(model::HasAudioConfig(both->config_json));

  o.audio = false;
  auto no_audio = PlanSynth(o, 0);
  ASSERT_TRUE(no_audio.ok());
  EXPECT_FALSE(no_audio->audio);
  EXPECT_TRUE(no_audio->config_json["audio_config"].is_null());
  EXPECT_EQ(no_audio->tensors.size(), text + nv);
  EXPECT_FALSE(AnyTensor(*no_audio, model::IsAudioHfTensor));
  EXPECT_TRUE(AnyTensor(*no_audio, model::IsVisionHfTensor));

  o.audio = true;
  o.vision = false;  // what the audio benchmark writes
  auto no_vision = PlanSynth(o, 0);
  ASSERT_TRUE(no_vision.ok());
  EXPECT_TRUE(no_vision->config_json["vision_config"].is_null());
  EXPECT_TRUE(model::HasAudioConfig(no_vision->config_json));
  EXPECT_EQ(no_vision->tensors.size(), text + na);
  EXPECT_FALSE(AnyTensor(*no_vision, model::IsVisionHfTensor));

  o.audio = false;
  auto text_only = PlanSynth(o, 0);
  ASSERT_TRUE(text_only.ok());
  EXPECT_EQ(text_only->tensors.size(), text);

  o = SynthOptions();  // tiny: no towers, whatever the flags say
  auto tiny = PlanSynth(o, 0);
  ASSERT_TRUE(tiny.ok());
  EXPECT_FALSE(tiny->vision || tiny->audio);
  EXPECT_TRUE(tiny->config_json["audio_config"].is_null());
  EXPECT_EQ(tiny->tensors.size(), SynthTensors(tiny->config).size());
}

TEST(SynthPlan, VocabOverridesThePresets) {
  SynthOptions o;
  auto plan = PlanSynth(o, 600);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->config.vocab_size, 600);
  EXPECT_EQ(plan->config_json["text_config"]["vocab_size"], 600);
}

}  // namespace synth_towers_test
}  // namespace gemlet::convert
