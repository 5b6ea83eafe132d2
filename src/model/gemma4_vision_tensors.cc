#include "model/gemma4_vision_tensors.h"

namespace gemlet::model {

const char* const kClipBoundNames[4] = {"input_min", "input_max", "output_min", "output_max"};

namespace {

Status GetInt(const nlohmann::json& j, const char* key, int64_t* out, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    return required ? InvalidArgument(std::string("vision config has no \"") + key + "\"") : Status::Ok();
  }
  if (!it->is_number_integer() || it->get<int64_t>() < 0) {
    return InvalidArgument(std::string("vision config \"") + key + "\" is not a non-negative integer");
  }
  *out = it->get<int64_t>();
  return Status::Ok();
}

Status GetDouble(const nlohmann::json& j, const char* key, double* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Status::Ok();
  if (!it->is_number()) return InvalidArgument(std::string("vision config \"") + key + "\" is not a number");
  *out = it->get<double>();
  return Status::Ok();
}

Status Check(const Gemma4VisionConfig& c) {
  if (c.hidden_size <= 0 || c.intermediate_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 ||
      c.head_dim <= 0 || c.patch_size <= 0 || c.pooling_kernel_size <= 0 || c.position_embedding_size <= 0 ||
      c.text_hidden_size <= 0) {
    return InvalidArgument("vision config: sizes must be positive");
  }
  if (c.hidden_size > 65536 || c.intermediate_size > 262144 || c.num_layers > 256 || c.head_dim > 1024 ||
      c.patch_size > 64 || c.pooling_kernel_size > 16 || c.position_embedding_size > (1 << 20) ||
      c.num_heads > 1024 || c.text_hidden_size > 65536) {
    return InvalidArgument("vision config: a size is implausibly large");
  }
  if (c.head_dim % 4 != 0) return Unsupported("vision config: head_dim must be a multiple of 4 (2-D RoPE halves)");
  if (c.bidirectional != "") {  // "vision" (12B and up): bidirectional image blocks, not implemented
    return Unsupported("config: use_bidirectional_attention '" + c.bidirectional + "' is not supported");
  }
  return Status::Ok();
}

}  // namespace

bool HasVisionConfig(const nlohmann::json& j) {
  return j.is_object() && j.contains("vision_config") && j["vision_config"].is_object();
}

Result<Gemma4VisionConfig> Gemma4VisionConfig::FromHfConfig(const nlohmann::json& j) {
  if (!HasVisionConfig(j)) return InvalidArgument("config.json has no vision_config");
  const nlohmann::json& v = j["vision_config"];
  Gemma4VisionConfig c;
  RETURN_IF_ERROR(GetInt(v, "hidden_size", &c.hidden_size, true));
  RETURN_IF_ERROR(GetInt(v, "intermediate_size", &c.intermediate_size, true));
  RETURN_IF_ERROR(GetInt(v, "num_hidden_layers", &c.num_layers, true));
  RETURN_IF_ERROR(GetInt(v, "num_attention_heads", &c.num_heads, true));
  int64_t kv = c.num_heads;
  RETURN_IF_ERROR(GetInt(v, "num_key_value_heads", &kv, false));
  if (kv != c.num_heads) return Unsupported("vision config: num_key_value_heads differs from num_attention_heads");
  RETURN_IF_ERROR(GetInt(v, "head_dim", &c.head_dim, true));
  RETURN_IF_ERROR(GetInt(v, "patch_size", &c.patch_size, false));
  RETURN_IF_ERROR(GetInt(v, "pooling_kernel_size", &c.pooling_kernel_size, false));
  RETURN_IF_ERROR(GetInt(v, "position_embedding_size", &c.position_embedding_size, true));
  RETURN_IF_ERROR(GetInt(v, "default_output_length", &c.default_output_length, false));
  RETURN_IF_ERROR(GetDouble(v, "rms_norm_eps", &c.rms_norm_eps));
  if (auto rp = v.find("rope_parameters"); rp != v.end() && rp->is_object()) {
    RETURN_IF_ERROR(GetDouble(*rp, "rope_theta", &c.rope_theta));
  }
  if (v.contains("hidden_activation") && v["hidden_activation"] != "gelu_pytorch_tanh") {
    return Unsupported("vision config: hidden_activation must be gelu_pytorch_tanh");
  }
  if (v.value("standardize", false) == true) {
    return Unsupported("vision config: standardize = true is not supported (E2B/E4B: false)");
  }
  if (v.contains("use_clipped_linears") && v["use_clipped_linears"] != true) {
    return Unsupported("vision config: use_clipped_linears = false is not supported (E2B/E4B: true)");
  }
  RETURN_IF_ERROR(GetInt(j, "boi_token_id", &c.boi_token_id, false));
  RETURN_IF_ERROR(GetInt(j, "image_token_id", &c.image_token_id, false));
  RETURN_IF_ERROR(GetInt(j, "eoi_token_id", &c.eoi_token_id, false));
  const nlohmann::json& t = j.contains("text_config") && j["text_config"].is_object() ? j["text_config"] : j;
  RETURN_IF_ERROR(GetInt(t, "hidden_size", &c.text_hidden_size, true));
  if (auto b = t.find("use_bidirectional_attention"); b != t.end() && !b->is_null()) {
    if (!b->is_string()) return InvalidArgument("config: use_bidirectional_attention is not a string");
    c.bidirectional = b->get<std::string>();
  }
  RETURN_IF_ERROR(Check(c));
  return c;
}

nlohmann::json Gemma4VisionConfig::ToJson() const {
  return {{"hidden_size", hidden_size},
          {"intermediate_size", intermediate_size},
          {"num_hidden_layers", num_layers},
          {"num_attention_heads", num_heads},
          {"head_dim", head_dim},
          {"patch_size", patch_size},
          {"pooling_kernel_size", pooling_kernel_size},
          {"position_embedding_size", position_embedding_size},
          {"default_output_length", default_output_length},
          {"rope_theta", rope_theta},
          {"rms_norm_eps", rms_norm_eps},
          {"text_hidden_size", text_hidden_size},
          {"boi_token_id", boi_token_id},
          {"image_token_id", image_token_id},
          {"eoi_token_id", eoi_token_id},
          {"use_bidirectional_attention", bidirectional.empty() ? nlohmann::json(nullptr) : nlohmann::json(bidirectional)}};
}

Result<Gemma4VisionConfig> Gemma4VisionConfig::FromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgument("vision metadata is not a JSON object");
  Gemma4VisionConfig c;
  RETURN_IF_ERROR(GetInt(j, "hidden_size", &c.hidden_size, true));
  RETURN_IF_ERROR(GetInt(j, "intermediate_size", &c.intermediate_size, true));
  RETURN_IF_ERROR(GetInt(j, "num_hidden_layers", &c.num_layers, true));
  RETURN_IF_ERROR(GetInt(j, "num_attention_heads", &c.num_heads, true));
  RETURN_IF_ERROR(GetInt(j, "head_dim", &c.head_dim, true));
  RETURN_IF_ERROR(GetInt(j, "patch_size", &c.patch_size, true));
  RETURN_IF_ERROR(GetInt(j, "pooling_kernel_size", &c.pooling_kernel_size, true));
  RETURN_IF_ERROR(GetInt(j, "position_embedding_size", &c.position_embedding_size, true));
  RETURN_IF_ERROR(GetInt(j, "default_output_length", &c.default_output_length, false));
  RETURN_IF_ERROR(GetDouble(j, "rope_theta", &c.rope_theta));
  RETURN_IF_ERROR(GetDouble(j, "rms_norm_eps", &c.rms_norm_eps));
  RETURN_IF_ERROR(GetInt(j, "text_hidden_size", &c.text_hidden_size, true));
  RETURN_IF_ERROR(GetInt(j, "boi_token_id", &c.boi_token_id, true));
  RETURN_IF_ERROR(GetInt(j, "image_token_id", &c.image_token_id, true));
  RETURN_IF_ERROR(GetInt(j, "eoi_token_id", &c.eoi_token_id, true));
  if (auto b = j.find("use_bidirectional_attention"); b != j.end() && b->is_string()) {
    c.bidirectional = b->get<std::string>();
  }
  RETURN_IF_ERROR(Check(c));
  return c;
}

bool IsVisionHfTensor(const std::string& n) {
  return n.rfind("model.vision_tower.", 0) == 0 || n.rfind("model.embed_vision.", 0) == 0;
}

std::vector<TensorSpec> ExpectedVisionTensors(const Gemma4VisionConfig& c) {
  std::vector<TensorSpec> out;
  const int64_t Dv = c.hidden_size, Iv = c.intermediate_size, hd = c.head_dim;
  const std::string hf = "model.vision_tower.";
  auto add = [&](std::string name, std::string hf_name, std::string gguf, std::vector<int64_t> shape,
                 TensorClass cls, int64_t layer) {
    out.push_back({std::move(name), std::move(hf_name), std::move(gguf), std::move(shape), cls, layer});
  };
  // A clipped linear (Gemma4ClippableLinear): the matrix and its four bounds.
  auto linear = [&](const std::string& name, const std::string& hf_base, const std::string& gguf,
                    std::vector<int64_t> shape, int64_t layer) {
    add(name, hf_base + ".linear.weight", gguf + ".weight", std::move(shape), TensorClass::kVisionMatrix, layer);
    for (const char* b : kClipBoundNames) {
      add(name + "." + b, hf_base + "." + b, gguf + "." + b, {1}, TensorClass::kScalar, layer);
    }
  };
  add("v.patch_embd", hf + "patch_embedder.input_proj.weight", "v.patch_embd.weight", {Dv, c.patch_dim()},
      TensorClass::kVisionMatrix, -1);
  add("v.position_embd", hf + "patch_embedder.position_embedding_table", "v.position_embd.weight",
      {2, c.position_embedding_size, Dv}, TensorClass::kVisionPosTable, -1);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    const std::string h = hf + "encoder.layers." + std::to_string(l) + ".";
    add(b + "ln1", h + "input_layernorm.weight", b + "ln1.weight", {Dv}, TensorClass::kNorm, l);
    linear(b + "attn_q", h + "self_attn.q_proj", b + "attn_q", {c.num_heads * hd, Dv}, l);
    linear(b + "attn_k", h + "self_attn.k_proj", b + "attn_k", {c.num_heads * hd, Dv}, l);
    linear(b + "attn_v", h + "self_attn.v_proj", b + "attn_v", {c.num_heads * hd, Dv}, l);
    linear(b + "attn_out", h + "self_attn.o_proj", b + "attn_out", {Dv, c.num_heads * hd}, l);
    add(b + "attn_q_norm", h + "self_attn.q_norm.weight", b + "attn_q_norm.weight", {hd}, TensorClass::kNorm, l);
    add(b + "attn_k_norm", h + "self_attn.k_norm.weight", b + "attn_k_norm.weight", {hd}, TensorClass::kNorm, l);
    add(b + "attn_post_norm", h + "post_attention_layernorm.weight", b + "attn_post_norm.weight", {Dv},
        TensorClass::kNorm, l);
    add(b + "ln2", h + "pre_feedforward_layernorm.weight", b + "ln2.weight", {Dv}, TensorClass::kNorm, l);
    linear(b + "ffn_gate", h + "mlp.gate_proj", b + "ffn_gate", {Iv, Dv}, l);
    linear(b + "ffn_up", h + "mlp.up_proj", b + "ffn_up", {Iv, Dv}, l);
    linear(b + "ffn_down", h + "mlp.down_proj", b + "ffn_down", {Dv, Iv}, l);
    add(b + "ffn_post_norm", h + "post_feedforward_layernorm.weight", b + "ffn_post_norm.weight", {Dv},
        TensorClass::kNorm, l);
  }
  add("mm.input_projection", "model.embed_vision.embedding_projection.weight", "mm.input_projection.weight",
      {c.text_hidden_size, Dv}, TensorClass::kVisionProj, -1);
  return out;
}

}  // namespace gemlet::model
