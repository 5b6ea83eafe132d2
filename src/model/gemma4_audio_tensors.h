// Gemma 4's audio tower (the conformer) and embed_audio (../shared/spec/gemma4-multimodal-mtp.md
// §2): the configuration (HF `audio_config`, plus the audio token ids of the top-level
// config.json) and the tensor table — .gemlet names, shapes (outermost first), HF names and plan
// classes — shared by the converter and the loader (model/gemma4_audio.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "model/gemma4_tensors.h"

namespace gemlet::model {

struct Gemma4AudioConfig {
  int64_t hidden_size = 0;           // Da
  int64_t num_layers = 0;
  int64_t num_heads = 0;             // head_dim = Da / num_heads
  int64_t sscp_channels[2] = {0, 0};  // subsampling_conv_channels: C0, C1
  int64_t conv_kernel_size = 5;      // the light conv's causal depthwise kernel
  int64_t chunk_size = 12;           // attention_chunk_size
  int64_t context_left = 13;         // attention_context_left: keys q−k < context_left − 1
  int64_t context_right = 0;         // attention_context_right (only 0 is implemented)
  double logit_cap = 50.0;           // attention_logit_cap: cap·tanh(l/cap)
  double residual_weight = 0.5;      // the feed-forward blocks' residual factor
  double rms_norm_eps = 1e-6;
  double gradient_clipping = 1e10;   // the clamp before the norms
  int64_t output_proj_dims = 0;      // output_proj's width (embed_audio's input)
  int64_t text_hidden_size = 0;      // D of the decoder (embed_audio's output)
  int64_t n_mels = 128;              // the feature extractor's mel bins
  // Token ids (top-level config.json): <|audio> boa, <|audio|> soft-token slot, <audio|> eoa.
  int64_t boa_token_id = 256000;
  int64_t audio_token_id = 258881;
  int64_t eoa_token_id = 258883;

  // From the whole HF config.json. Refuses what the encoder does not implement.
  static Result<Gemma4AudioConfig> FromHfConfig(const nlohmann::json& config_json);
  // The form stored in a .gemlet file's metadata "audio"; FromJson(ToJson()) round-trips.
  static Result<Gemma4AudioConfig> FromJson(const nlohmann::json& j);
  nlohmann::json ToJson() const;

  int64_t head_dim() const { return hidden_size / num_heads; }
  // Mel bins after each stride-2 convolution (3×3, padding 1).
  int64_t mels_after(int conv) const {
    int64_t f = n_mels;
    for (int i = 0; i <= conv; ++i) f = (f - 1) / 2 + 1;
    return f;
  }
  int64_t sscp_out_dim() const { return mels_after(1) * sscp_channels[1]; }  // input_proj_linear's input
  int64_t past_horizon() const { return context_left - 1; }                    // P: RPE distances 0..P
};

// True if the config.json describes an audio tower (a non-null audio_config).
bool HasAudioConfig(const nlohmann::json& config_json);

// Every tensor of the tower and embed_audio, in file order. The four clip bounds of each
// clipped linear (HF 0-d tensors) are stored as [1]; a checkpoint may lack some (then unbounded).
// TensorSpec::gguf_name is the tensor's name in llama.cpp's mmproj GGUF (projector gemma4a).
std::vector<TensorSpec> ExpectedAudioTensors(const Gemma4AudioConfig& cfg);

// The HF prefixes of the tower's tensors ("model.audio_tower.", "model.embed_audio.").
bool IsAudioHfTensor(const std::string& hf_name);

}  // namespace gemlet::model
