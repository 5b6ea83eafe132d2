// Gemma 4's vision tower and embed_vision (../shared/spec/gemma4-multimodal-mtp.md §1): the
// configuration (HF `vision_config`, plus the image token ids of the top-level config.json)
// and the tensor table — .gemlet names, shapes (outermost first), HF names and plan classes —
// shared by the converter and the loader (model/gemma4_vision.h), as gemma4_tensors.h is for
// the text decoder.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "model/gemma4_tensors.h"

namespace gemlet::model {

struct Gemma4VisionConfig {
  int64_t hidden_size = 0;              // Dv
  int64_t intermediate_size = 0;        // Iv
  int64_t num_layers = 0;
  int64_t num_heads = 0;                // plain MHA (num_key_value_heads must equal it)
  int64_t head_dim = 0;                 // hd; 2-D RoPE rotates hd/2 channels per axis
  int64_t patch_size = 16;              // p: a patch is p·p·3 values
  int64_t pooling_kernel_size = 3;      // k: soft tokens pool k×k patches
  int64_t position_embedding_size = 0;  // rows of each axis of the position table
  int64_t default_output_length = 280;  // the processor's default soft-token budget
  double rope_theta = 100.0;
  double rms_norm_eps = 1e-6;
  int64_t text_hidden_size = 0;         // D of the decoder (embed_vision's output)
  // Token ids (top-level config.json): <|image> boi, <|image|> soft-token slot, <image|> eoi.
  int64_t boi_token_id = 255999;
  int64_t image_token_id = 258880;
  int64_t eoi_token_id = 258882;
  // text_config.use_bidirectional_attention: "" (null: the decoder stays causal over image
  // rows, E2B/E4B) or "vision" (each image block attends bidirectionally).
  std::string bidirectional;

  // From the whole HF config.json (vision_config, the token ids, text_config's hidden size and
  // use_bidirectional_attention). Refuses what the encoder does not implement.
  static Result<Gemma4VisionConfig> FromHfConfig(const nlohmann::json& config_json);
  // The form stored in a .gemlet file's metadata "vision"; FromJson(ToJson()) round-trips.
  static Result<Gemma4VisionConfig> FromJson(const nlohmann::json& j);
  nlohmann::json ToJson() const;

  int64_t patch_dim() const { return patch_size * patch_size * 3; }
  int64_t pixel_multiple() const { return patch_size * pooling_kernel_size; }  // 48
};

// True if the config.json describes a vision tower (a non-null vision_config).
bool HasVisionConfig(const nlohmann::json& config_json);

// Every tensor of the tower and embed_vision, in file order. The four clip bounds of each
// linear (HF 0-d tensors) are stored as [1]; a checkpoint may lack some (then unbounded).
// TensorSpec::gguf_name is the tensor's name in llama.cpp's mmproj GGUF (projector gemma4v).
std::vector<TensorSpec> ExpectedVisionTensors(const Gemma4VisionConfig& cfg);

// The HF prefixes of the tower's tensors ("model.vision_tower.", "model.embed_vision.").
bool IsVisionHfTensor(const std::string& hf_name);

// The names of one clipped linear's bounds: "<name>.input_min" and so on.
extern const char* const kClipBoundNames[4];  // input_min, input_max, output_min, output_max

}  // namespace gemlet::model
