#include "tools/convert/synth_towers.h"

#include <cmath>

namespace gemlet::convert {

namespace {

bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// The recipe shared by both towers (synth_towers.h): clip bounds, norms around 1, and every
// other tensor (a matrix or a convolution) N(0, 1/fan_in).
SynthTensor TowerTensor(const model::TensorSpec& s) {
  SynthTensor t{s.hf_name, s.shape, SynthTensor::Dist::kNormal, 0.0f, 1.0f};
  switch (s.cls) {
    case model::TensorClass::kScalar: {  // a clip bound: 0-d in HF
      t.shape.clear();
      t.dist = SynthTensor::Dist::kUniform;
      const bool min = Contains(s.hf_name, "_min");
      t.a = min ? -12.0f : 8.0f;
      t.b = min ? -8.0f : 12.0f;
      break;
    }
    case model::TensorClass::kNorm:
      t.b = 0.1f;
      t.a = 1.0f;
      break;
    default: {
      int64_t fan_in = 1;
      for (size_t i = 1; i < s.shape.size(); ++i) fan_in *= s.shape[i];
      t.b = 1.0f / std::sqrt(static_cast<float>(fan_in));
      break;
    }
  }
  return t;
}

}  // namespace

bool SynthVisionConfig(const std::string& preset, int64_t text_hidden, model::Gemma4VisionConfig* out) {
  if (preset != "e2b" && preset != "e4b") return false;
  model::Gemma4VisionConfig v;
  v.hidden_size = 768;
  v.intermediate_size = 3072;
  v.num_layers = 16;
  v.num_heads = 12;
  v.head_dim = 64;
  v.patch_size = 16;
  v.pooling_kernel_size = 3;
  v.position_embedding_size = 10240;
  v.default_output_length = 280;
  v.rope_theta = 100.0;
  v.rms_norm_eps = 1e-6;
  v.text_hidden_size = text_hidden;
  *out = v;
  return true;
}

std::vector<SynthTensor> SynthVisionTensors(const model::Gemma4VisionConfig& cfg) {
  std::vector<SynthTensor> out;
  for (const model::TensorSpec& s : model::ExpectedVisionTensors(cfg)) {
    SynthTensor t = TowerTensor(s);
    if (s.cls == model::TensorClass::kVisionPosTable) {
      t.b = 0.5f;
    } else if (s.cls == model::TensorClass::kNorm && (Contains(s.hf_name, "q_norm") || Contains(s.hf_name, "k_norm"))) {
      t.a = std::pow(static_cast<float>(s.shape[0]), -0.25f);
      t.b = 0.1f * t.a;
    }
    out.push_back(std::move(t));
  }
  return out;
}

nlohmann::json SynthVisionConfigJson(const model::Gemma4VisionConfig& v) {
  return {{"attention_bias", false},
          {"attention_dropout", 0.0},
          {"default_output_length", v.default_output_length},
          {"head_dim", v.head_dim},
          {"hidden_activation", "gelu_pytorch_tanh"},
          {"hidden_size", v.hidden_size},
          {"initializer_range", 0.02},
          {"intermediate_size", v.intermediate_size},
          {"max_position_embeddings", 131072},
          {"model_type", "gemma4_vision"},
          {"num_attention_heads", v.num_heads},
          {"num_hidden_layers", v.num_layers},
          {"num_key_value_heads", v.num_heads},
          {"patch_size", v.patch_size},
          {"pooling_kernel_size", v.pooling_kernel_size},
          {"position_embedding_size", v.position_embedding_size},
          {"rms_norm_eps", v.rms_norm_eps},
          {"rope_parameters", {{"rope_theta", v.rope_theta}, {"rope_type", "default"}}},
          {"standardize", false},
          {"use_clipped_linears", true}};
}

bool SynthAudioConfig(const std::string& preset, int64_t text_hidden, model::Gemma4AudioConfig* out) {
  if (preset != "e2b" && preset != "e4b") return false;
  model::Gemma4AudioConfig a;  // the defaults are HF's for what is not set here
  a.hidden_size = 1024;
  a.num_layers = 12;
  a.num_heads = 8;
  a.sscp_channels[0] = 128;
  a.sscp_channels[1] = 32;
  a.conv_kernel_size = 5;
  a.chunk_size = 12;
  a.context_left = 13;
  a.context_right = 0;
  a.logit_cap = 50.0;
  a.residual_weight = 0.5;
  a.rms_norm_eps = 1e-6;
  a.gradient_clipping = 1e10;
  a.output_proj_dims = 1536;
  a.text_hidden_size = text_hidden;
  *out = a;
  return true;
}

std::vector<SynthTensor> SynthAudioTensors(const model::Gemma4AudioConfig& cfg) {
  std::vector<SynthTensor> out;
  for (const model::TensorSpec& s : model::ExpectedAudioTensors(cfg)) {
    SynthTensor t = TowerTensor(s);
    // Two vectors of class kNorm are not norm weights: softplus(per_dim_scale) scales the
    // queries (0.3·N keeps it near ln 2), and output_proj's bias is added.
    if (Contains(s.hf_name, "per_dim_scale")) {
      t.a = 0.0f;
      t.b = 0.3f;
    } else if (Contains(s.hf_name, "output_proj.bias")) {
      t.a = 0.0f;
      t.b = 0.1f;
    }
    out.push_back(std::move(t));
  }
  return out;
}

nlohmann::json SynthAudioConfigJson(const model::Gemma4AudioConfig& a) {
  return {{"attention_chunk_size", a.chunk_size},
          {"attention_context_left", a.context_left},
          {"attention_context_right", a.context_right},
          {"attention_invalid_logits_value", -1e9},
          {"attention_logit_cap", a.logit_cap},
          {"conv_kernel_size", a.conv_kernel_size},
          {"gradient_clipping", a.gradient_clipping},
          {"hidden_act", "silu"},
          {"hidden_size", a.hidden_size},
          {"initializer_range", 0.02},
          {"model_type", "gemma4_audio"},
          {"num_attention_heads", a.num_heads},
          {"num_hidden_layers", a.num_layers},
          {"output_proj_dims", a.output_proj_dims},
          {"residual_weight", a.residual_weight},
          {"rms_norm_eps", a.rms_norm_eps},
          {"subsampling_conv_channels", {a.sscp_channels[0], a.sscp_channels[1]}},
          {"use_clipped_linears", true}};
}

}  // namespace gemlet::convert
