#include "model/gemma4_audio_tensors.h"

#include "model/gemma4_vision_tensors.h"

namespace gemlet::model {

namespace {

Status GetInt(const nlohmann::json& j, const char* key, int64_t* out, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return required ? InvalidArgument(std::string("audio config has no \"") + key + "\"") : Status::Ok();
  }
  if (!it->is_number_integer() || it->get<int64_t>() < 0) {
    return InvalidArgument(std::string("audio config \"") + key + "\" is not a non-negative integer");
  }
  *out = it->get<int64_t>();
  return Status::Ok();
}

Status GetDouble(const nlohmann::json& j, const char* key, double* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_number()) return InvalidArgument(std::string("audio config \"") + key + "\" is not a number");
  *out = it->get<double>();
  return Status::Ok();
}

Status GetChannels(const nlohmann::json& j, int64_t* c) {
  auto it = j.find("subsampling_conv_channels");
  if (it == j.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_number_integer() ||
      !(*it)[1].is_number_integer()) {
    return InvalidArgument("audio config \"subsampling_conv_channels\" is not a list of two integers");
  }
  c[0] = (*it)[0].get<int64_t>();
  c[1] = (*it)[1].get<int64_t>();
  return Status::Ok();
}

Status Check(const Gemma4AudioConfig& c) {
  if (c.hidden_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 || c.sscp_channels[0] <= 0 ||
      c.sscp_channels[1] <= 0 || c.conv_kernel_size <= 0 || c.chunk_size <= 0 || c.context_left < 2 ||
      c.output_proj_dims <= 0 || c.text_hidden_size <= 0 || c.n_mels <= 0) {
    return InvalidArgument("audio config: sizes must be positive (attention_context_left at least 2)");
  }
  if (c.hidden_size > 65536 || c.num_layers > 256 || c.num_heads > 1024 || c.sscp_channels[0] > 4096 ||
      c.sscp_channels[1] > 4096 || c.conv_kernel_size > 64 || c.chunk_size > 4096 || c.context_left > 4096 ||
      c.output_proj_dims > 65536 || c.text_hidden_size > 65536 || c.n_mels > 1024) {
    return InvalidArgument("audio config: a size is implausibly large");
  }
  if (c.hidden_size % c.num_heads != 0) {
    return InvalidArgument("audio config: hidden_size is not a multiple of num_attention_heads");
  }
  if (c.hidden_size % 2 != 0) return InvalidArgument("audio config: hidden_size must be even (sin|cos positions)");
  if (c.context_right != 0) {
    return Unsupported("audio config: attention_context_right " + std::to_string(c.context_right) +
                       " is not supported (E2B/E4B: 0)");
  }
  if (!(c.logit_cap > 0) || !(c.rms_norm_eps > 0) || !(c.gradient_clipping > 0)) {
    return InvalidArgument("audio config: attention_logit_cap, rms_norm_eps and gradient_clipping must be positive");
  }
  return Status::Ok();
}

}  // namespace

bool HasAudioConfig(const nlohmann::json& j) {
  return j.is_object() && j.contains("audio_config") && j["audio_config"].is_object();
}

Result<Gemma4AudioConfig> Gemma4AudioConfig::FromHfConfig(const nlohmann::json& j) {
  if (!HasAudioConfig(j)) return InvalidArgument("config.json has no audio_config");
  const nlohmann::json& a = j["audio_config"];
  Gemma4AudioConfig c;
  RETURN_IF_ERROR(GetInt(a, "hidden_size", &c.hidden_size, true));
  RETURN_IF_ERROR(GetInt(a, "num_hidden_layers", &c.num_layers, true));
  RETURN_IF_ERROR(GetInt(a, "num_attention_heads", &c.num_heads, true));
  RETURN_IF_ERROR(GetChannels(a, c.sscp_channels));
  RETURN_IF_ERROR(GetInt(a, "conv_kernel_size", &c.conv_kernel_size, false));
  RETURN_IF_ERROR(GetInt(a, "attention_chunk_size", &c.chunk_size, false));
  RETURN_IF_ERROR(GetInt(a, "attention_context_left", &c.context_left, false));
  RETURN_IF_ERROR(GetInt(a, "attention_context_right", &c.context_right, false));
  RETURN_IF_ERROR(GetDouble(a, "attention_logit_cap", &c.logit_cap));
  RETURN_IF_ERROR(GetDouble(a, "residual_weight", &c.residual_weight));
  RETURN_IF_ERROR(GetDouble(a, "rms_norm_eps", &c.rms_norm_eps));
  RETURN_IF_ERROR(GetDouble(a, "gradient_clipping", &c.gradient_clipping));
  RETURN_IF_ERROR(GetInt(a, "output_proj_dims", &c.output_proj_dims, true));
  if (a.contains("hidden_act") && a["hidden_act"] != "silu") return Unsupported("audio config: hidden_act must be silu");
  if (a.contains("use_clipped_linears") && a["use_clipped_linears"] != true) {
    return Unsupported("audio config: use_clipped_linears = false is not supported (E2B/E4B: true)");
  }
  RETURN_IF_ERROR(GetInt(j, "boa_token_id", &c.boa_token_id, false));
  RETURN_IF_ERROR(GetInt(j, "audio_token_id", &c.audio_token_id, false));
  RETURN_IF_ERROR(GetInt(j, "eoa_token_index", &c.eoa_token_id, false));  // HF's name
  RETURN_IF_ERROR(GetInt(j, "eoa_token_id", &c.eoa_token_id, false));
  const nlohmann::json& t = j.contains("text_config") && j["text_config"].is_object() ? j["text_config"] : j;
  RETURN_IF_ERROR(GetInt(t, "hidden_size", &c.text_hidden_size, true));
  RETURN_IF_ERROR(Check(c));
  return c;
}

nlohmann::json Gemma4AudioConfig::ToJson() const {
  return {{"hidden_size", hidden_size},
          {"num_hidden_layers", num_layers},
          {"num_attention_heads", num_heads},
          {"subsampling_conv_channels", {sscp_channels[0], sscp_channels[1]}},
          {"conv_kernel_size", conv_kernel_size},
          {"attention_chunk_size", chunk_size},
          {"attention_context_left", context_left},
          {"attention_context_right", context_right},
          {"attention_logit_cap", logit_cap},
          {"residual_weight", residual_weight},
          {"rms_norm_eps", rms_norm_eps},
          {"gradient_clipping", gradient_clipping},
          {"output_proj_dims", output_proj_dims},
          {"text_hidden_size", text_hidden_size},
          {"n_mels", n_mels},
          {"boa_token_id", boa_token_id},
          {"audio_token_id", audio_token_id},
          {"eoa_token_id", eoa_token_id}};
}

Result<Gemma4AudioConfig> Gemma4AudioConfig::FromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgument("audio metadata is not a JSON object");
  Gemma4AudioConfig c;
  RETURN_IF_ERROR(GetInt(j, "hidden_size", &c.hidden_size, true));
  RETURN_IF_ERROR(GetInt(j, "num_hidden_layers", &c.num_layers, true));
  RETURN_IF_ERROR(GetInt(j, "num_attention_heads", &c.num_heads, true));
  RETURN_IF_ERROR(GetChannels(j, c.sscp_channels));
  RETURN_IF_ERROR(GetInt(j, "conv_kernel_size", &c.conv_kernel_size, true));
  RETURN_IF_ERROR(GetInt(j, "attention_chunk_size", &c.chunk_size, true));
  RETURN_IF_ERROR(GetInt(j, "attention_context_left", &c.context_left, true));
  RETURN_IF_ERROR(GetInt(j, "attention_context_right", &c.context_right, true));
  RETURN_IF_ERROR(GetDouble(j, "attention_logit_cap", &c.logit_cap));
  RETURN_IF_ERROR(GetDouble(j, "residual_weight", &c.residual_weight));
  RETURN_IF_ERROR(GetDouble(j, "rms_norm_eps", &c.rms_norm_eps));
  RETURN_IF_ERROR(GetDouble(j, "gradient_clipping", &c.gradient_clipping));
  RETURN_IF_ERROR(GetInt(j, "output_proj_dims", &c.output_proj_dims, true));
  RETURN_IF_ERROR(GetInt(j, "text_hidden_size", &c.text_hidden_size, true));
  RETURN_IF_ERROR(GetInt(j, "n_mels", &c.n_mels, true));
  RETURN_IF_ERROR(GetInt(j, "boa_token_id", &c.boa_token_id, true));
  RETURN_IF_ERROR(GetInt(j, "audio_token_id", &c.audio_token_id, true));
  RETURN_IF_ERROR(GetInt(j, "eoa_token_id", &c.eoa_token_id, true));
  RETURN_IF_ERROR(Check(c));
  return c;
}

bool IsAudioHfTensor(const std::string& n) {
  return n.rfind("model.audio_tower.", 0) == 0 || n.rfind("model.embed_audio.", 0) == 0;
}

std::vector<TensorSpec> ExpectedAudioTensors(const Gemma4AudioConfig& c) {
  std::vector<TensorSpec> out;
  const int64_t Da = c.hidden_size, C0 = c.sscp_channels[0], C1 = c.sscp_channels[1];
  const std::string hf = "model.audio_tower.";
  // `gguf` is llama.cpp's mmproj name without ".weight" (tools/mtmd/clip-impl.h).
  auto add = [&](std::string name, std::string hf_name, const std::string& gguf, std::vector<int64_t> shape,
                 TensorClass cls, int64_t layer) {
    out.push_back({std::move(name), std::move(hf_name), gguf + ".weight", std::move(shape), cls, layer});
  };
  // A clipped linear (Gemma4ClippableLinear): the matrix and its four bounds.
  auto linear = [&](const std::string& name, const std::string& hf_base, const std::string& gguf,
                    std::vector<int64_t> shape, int64_t layer) {
    add(name, hf_base + ".linear.weight", gguf, std::move(shape), TensorClass::kAudioMatrix, layer);
    for (const char* b : kClipBoundNames) {
      out.push_back({name + "." + b, hf_base + "." + b, gguf + "." + b, {1}, TensorClass::kScalar, layer});
    }
  };
  const std::string s = hf + "subsample_conv_projection.";
  add("a.conv0", s + "layer0.conv.weight", "a.conv1d.0", {C0, 1, 3, 3}, TensorClass::kAudioConv, -1);
  add("a.conv0_norm", s + "layer0.norm.weight", "a.conv1d.0.norm", {C0}, TensorClass::kNorm, -1);
  add("a.conv1", s + "layer1.conv.weight", "a.conv1d.1", {C1, C0, 3, 3}, TensorClass::kAudioConv, -1);
  add("a.conv1_norm", s + "layer1.norm.weight", "a.conv1d.1.norm", {C1}, TensorClass::kNorm, -1);
  add("a.input_proj", s + "input_proj_linear.weight", "a.input_projection", {Da, c.sscp_out_dim()},
      TensorClass::kAudioMatrix, -1);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string b = "a.blk." + std::to_string(l) + ".";
    const std::string h = hf + "layers." + std::to_string(l) + ".";
    for (int f = 1; f <= 2; ++f) {
      const std::string fb = b + "ffn" + std::to_string(f) + "_", fh = h + "feed_forward" + std::to_string(f) + ".";
      const std::string gs = f == 1 ? "" : "_1";  // llama.cpp: ffn_up, ffn_up_1, ...
      add(fb + "pre_norm", fh + "pre_layer_norm.weight", b + "ffn_norm" + gs, {Da}, TensorClass::kNorm, l);
      linear(fb + "up", fh + "ffw_layer_1", b + "ffn_up" + gs, {4 * Da, Da}, l);
      linear(fb + "down", fh + "ffw_layer_2", b + "ffn_down" + gs, {Da, 4 * Da}, l);
      add(fb + "post_norm", fh + "post_layer_norm.weight", b + "ffn_post_norm" + gs, {Da}, TensorClass::kNorm, l);
    }
    add(b + "attn_pre_norm", h + "norm_pre_attn.weight", b + "attn_pre_norm", {Da}, TensorClass::kNorm, l);
    linear(b + "attn_q", h + "self_attn.q_proj", b + "attn_q", {Da, Da}, l);
    linear(b + "attn_k", h + "self_attn.k_proj", b + "attn_k", {Da, Da}, l);
    linear(b + "attn_v", h + "self_attn.v_proj", b + "attn_v", {Da, Da}, l);
    linear(b + "attn_out", h + "self_attn.post", b + "attn_out", {Da, Da}, l);
    add(b + "attn_rel_k", h + "self_attn.relative_k_proj.weight", b + "attn_k_rel", {Da, Da},
        TensorClass::kAudioMatrix, l);
    // llama.cpp stores softplus(per_dim_scale) under this name (tools/convert/mmproj_import.h).
    add(b + "per_dim_scale", h + "self_attn.per_dim_scale", b + "per_dim_scale", {c.head_dim()}, TensorClass::kNorm,
        l);
    add(b + "attn_post_norm", h + "norm_post_attn.weight", b + "attn_post_norm", {Da}, TensorClass::kNorm, l);
    // llama.cpp swaps the two conv norms' names: HF pre_layer_norm is its conv_norm, HF
    // conv_norm its norm_conv.
    add(b + "conv_pre_norm", h + "lconv1d.pre_layer_norm.weight", b + "conv_norm", {Da}, TensorClass::kNorm, l);
    linear(b + "conv_start", h + "lconv1d.linear_start", b + "conv_pw1", {2 * Da, Da}, l);
    // llama.cpp: [Da, K] (the HF kernel's middle 1 dropped).
    add(b + "conv_dw", h + "lconv1d.depthwise_conv1d.weight", b + "conv_dw", {Da, 1, c.conv_kernel_size},
        TensorClass::kAudioConv, l);
    add(b + "conv_norm", h + "lconv1d.conv_norm.weight", b + "norm_conv", {Da}, TensorClass::kNorm, l);
    linear(b + "conv_end", h + "lconv1d.linear_end", b + "conv_pw2", {Da, Da}, l);
    add(b + "norm_out", h + "norm_out.weight", b + "ln2", {Da}, TensorClass::kNorm, l);
  }
  add("a.output_proj", hf + "output_proj.weight", "a.pre_encode.out", {c.output_proj_dims, Da},
      TensorClass::kAudioMatrix, -1);
  out.push_back({"a.output_proj_bias", hf + "output_proj.bias", "a.pre_encode.out.bias", {c.output_proj_dims},
                 TensorClass::kNorm, -1});
  add("mm.a.input_projection", "model.embed_audio.embedding_projection.weight", "mm.a.input_projection",
      {c.text_hidden_size, c.output_proj_dims}, TensorClass::kAudioProj, -1);
  return out;
}

}  // namespace gemlet::model
