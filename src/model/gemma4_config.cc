#include "model/gemma4_config.h"

#include <cmath>

#include "model/config_field.h"

namespace gemlet::model {

Result<Gemma4Config> Gemma4Config::FromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgument("config is not a JSON object");
  Gemma4Config c;
  RETURN_IF_ERROR(GetConfigField(j, "vocab_size", &c.vocab_size, true));
  RETURN_IF_ERROR(GetConfigField(j, "hidden_size", &c.hidden_size, true));
  RETURN_IF_ERROR(GetConfigField(j, "num_hidden_layers", &c.num_layers, true));
  RETURN_IF_ERROR(GetConfigField(j, "num_attention_heads", &c.num_heads, true));
  RETURN_IF_ERROR(GetConfigField(j, "num_key_value_heads", &c.num_kv_heads, true));
  RETURN_IF_ERROR(GetConfigField(j, "head_dim", &c.head_dim, true));
  c.global_head_dim = c.head_dim;
  RETURN_IF_ERROR(GetConfigField(j, "global_head_dim", &c.global_head_dim, false));
  RETURN_IF_ERROR(GetConfigField(j, "intermediate_size", &c.intermediate_size, true));
  RETURN_IF_ERROR(GetConfigField(j, "hidden_size_per_layer_input", &c.hidden_size_per_layer_input, true));
  c.vocab_size_per_layer_input = c.vocab_size;
  RETURN_IF_ERROR(GetConfigField(j, "vocab_size_per_layer_input", &c.vocab_size_per_layer_input, false));
  RETURN_IF_ERROR(GetConfigField(j, "sliding_window", &c.sliding_window, true));
  RETURN_IF_ERROR(GetConfigField(j, "num_kv_shared_layers", &c.num_kv_shared_layers, false));
  RETURN_IF_ERROR(GetConfigField(j, "max_position_embeddings", &c.max_position_embeddings, false));
  RETURN_IF_ERROR(GetConfigField(j, "use_double_wide_mlp", &c.use_double_wide_mlp, false));
  RETURN_IF_ERROR(GetConfigField(j, "rms_norm_eps", &c.rms_norm_eps, false));
  RETURN_IF_ERROR(GetConfigField(j, "final_logit_softcapping", &c.final_logit_softcapping, false));
  RETURN_IF_ERROR(GetConfigField(j, "bos_token_id", &c.bos_token_id, false));
  RETURN_IF_ERROR(GetConfigField(j, "pad_token_id", &c.pad_token_id, false));
  if (j.contains("eos_token_id") && j["eos_token_id"].is_number_integer()) {
    c.eos_token_id = j["eos_token_id"].get<int64_t>();
  }

  bool flag = false;
  RETURN_IF_ERROR(GetConfigField(j, "attention_k_eq_v", &flag, false));
  if (flag) return Unsupported("config: attention_k_eq_v = true is not supported (E2B/E4B use false)");
  flag = false;
  RETURN_IF_ERROR(GetConfigField(j, "enable_moe_block", &flag, false));
  if (flag) return Unsupported("config: enable_moe_block = true (MoE) is not supported");
  flag = false;
  RETURN_IF_ERROR(GetConfigField(j, "attention_bias", &flag, false));
  if (flag) return Unsupported("config: attention_bias = true is not supported");
  if (j.contains("hidden_activation") && j["hidden_activation"] != "gelu_pytorch_tanh") {
    return Unsupported("config: hidden_activation must be gelu_pytorch_tanh");
  }
  if (j.contains("num_global_key_value_heads") && !j["num_global_key_value_heads"].is_null() &&
      j["num_global_key_value_heads"] != c.num_kv_heads) {
    return Unsupported("config: num_global_key_value_heads different from num_key_value_heads");
  }

  auto lt = j.find("layer_types");
  if (lt == j.end() || !lt->is_array()) return InvalidArgument("config has no \"layer_types\" array");
  for (const auto& t : *lt) {
    if (t == "sliding_attention") {
      c.layer_types.push_back(AttnType::kSliding);
    } else if (t == "full_attention") {
      c.layer_types.push_back(AttnType::kFull);
    } else {
      return InvalidArgument("config: unknown layer type " + t.dump());
    }
  }

  auto rp = j.find("rope_parameters");
  if (rp != j.end() && rp->is_object()) {
    if (rp->contains("sliding_attention")) {
      const auto& s = (*rp)["sliding_attention"];
      RETURN_IF_ERROR(GetConfigField(s, "rope_theta", &c.rope_theta_sliding, false));
      if (s.contains("rope_type") && s["rope_type"] != "default") {
        return Unsupported("config: sliding rope_type " + s["rope_type"].dump());
      }
    }
    if (rp->contains("full_attention")) {
      const auto& f = (*rp)["full_attention"];
      RETURN_IF_ERROR(GetConfigField(f, "rope_theta", &c.rope_theta_full, false));
      RETURN_IF_ERROR(GetConfigField(f, "partial_rotary_factor", &c.partial_rotary_factor_full, false));
      if (f.contains("rope_type") && f["rope_type"] != "proportional" && f["rope_type"] != "default") {
        return Unsupported("config: full-attention rope_type " + f["rope_type"].dump());
      }
      if (f.contains("rope_type") && f["rope_type"] == "default") c.partial_rotary_factor_full = 1.0;
      double factor = 1.0;
      RETURN_IF_ERROR(GetConfigField(f, "factor", &factor, false));
      if (factor != 1.0) return Unsupported("config: rope scaling factor != 1");
    }
  }
  RETURN_IF_ERROR(c.Validate());
  return c;
}

nlohmann::json Gemma4Config::ToJson() const {
  nlohmann::json j;
  j["model_type"] = "gemma4_text";
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["num_hidden_layers"] = num_layers;
  j["num_attention_heads"] = num_heads;
  j["num_key_value_heads"] = num_kv_heads;
  j["head_dim"] = head_dim;
  j["global_head_dim"] = global_head_dim;
  j["intermediate_size"] = intermediate_size;
  j["hidden_size_per_layer_input"] = hidden_size_per_layer_input;
  j["vocab_size_per_layer_input"] = vocab_size_per_layer_input;
  j["sliding_window"] = sliding_window;
  j["num_kv_shared_layers"] = num_kv_shared_layers;
  j["max_position_embeddings"] = max_position_embeddings;
  j["use_double_wide_mlp"] = use_double_wide_mlp;
  j["rms_norm_eps"] = rms_norm_eps;
  j["final_logit_softcapping"] = final_logit_softcapping;
  j["hidden_activation"] = "gelu_pytorch_tanh";
  j["attention_k_eq_v"] = false;
  j["enable_moe_block"] = false;
  j["attention_bias"] = false;
  j["tie_word_embeddings"] = true;
  j["bos_token_id"] = bos_token_id;
  j["eos_token_id"] = eos_token_id;
  j["pad_token_id"] = pad_token_id;
  nlohmann::json types = nlohmann::json::array();
  for (AttnType t : layer_types) types.push_back(t == AttnType::kFull ? "full_attention" : "sliding_attention");
  j["layer_types"] = types;
  j["rope_parameters"] = {
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", rope_theta_sliding}}},
      {"full_attention",
       {{"rope_type", "proportional"},
        {"rope_theta", rope_theta_full},
        {"partial_rotary_factor", partial_rotary_factor_full}}}};
  return j;
}

Status Gemma4Config::Validate() const {
  auto bad = [](const std::string& m) { return InvalidArgument("config: " + m); };
  auto pos = [&](int64_t v, const char* name) -> Status {
    if (v <= 0 || v > (int64_t{1} << 31)) return bad(std::string(name) + " = " + std::to_string(v) + " is out of range");
    return Status::Ok();
  };
  RETURN_IF_ERROR(pos(vocab_size, "vocab_size"));
  RETURN_IF_ERROR(pos(hidden_size, "hidden_size"));
  RETURN_IF_ERROR(pos(num_layers, "num_hidden_layers"));
  RETURN_IF_ERROR(pos(num_heads, "num_attention_heads"));
  RETURN_IF_ERROR(pos(num_kv_heads, "num_key_value_heads"));
  RETURN_IF_ERROR(pos(head_dim, "head_dim"));
  RETURN_IF_ERROR(pos(global_head_dim, "global_head_dim"));
  RETURN_IF_ERROR(pos(intermediate_size, "intermediate_size"));
  RETURN_IF_ERROR(pos(hidden_size_per_layer_input, "hidden_size_per_layer_input"));
  RETURN_IF_ERROR(pos(vocab_size_per_layer_input, "vocab_size_per_layer_input"));
  RETURN_IF_ERROR(pos(sliding_window, "sliding_window"));
  RETURN_IF_ERROR(pos(max_position_embeddings, "max_position_embeddings"));
  if (num_layers > 1024) return bad("num_hidden_layers above 1024");
  if (static_cast<int64_t>(layer_types.size()) != num_layers) {
    return bad("layer_types has " + std::to_string(layer_types.size()) + " entries for " +
               std::to_string(num_layers) + " layers");
  }
  if (num_heads % num_kv_heads != 0) return bad("num_attention_heads is not a multiple of num_key_value_heads");
  if (head_dim % 2 || global_head_dim % 2) return bad("head dims must be even");
  if (num_kv_shared_layers < 0 || num_kv_shared_layers >= num_layers) {
    return bad("num_kv_shared_layers = " + std::to_string(num_kv_shared_layers) + " out of range");
  }
  if (vocab_size_per_layer_input != vocab_size) return bad("vocab_size_per_layer_input differs from vocab_size");
  if (!(rms_norm_eps > 0) || !(rope_theta_sliding > 0) || !(rope_theta_full > 0)) {
    return bad("eps and rope thetas must be positive");
  }
  if (!(partial_rotary_factor_full > 0 && partial_rotary_factor_full <= 1)) {
    return bad("partial_rotary_factor must be in (0, 1]");
  }
  if (!(final_logit_softcapping >= 0)) return bad("final_logit_softcapping must be >= 0");
  for (int64_t l = first_kv_shared(); l < num_layers; ++l) {
    bool found = false;
    for (int64_t s = 0; s < first_kv_shared(); ++s) found |= layer_types[s] == layer_types[l];
    if (!found) return bad("KV-shared layer " + std::to_string(l) + " has no producer of its type");
  }
  return Status::Ok();
}

int64_t Gemma4Config::kv_source(int64_t l) const {
  if (has_kv(l)) return l;
  for (int64_t s = first_kv_shared() - 1; s >= 0; --s) {
    if (layer_types[s] == layer_types[l]) return s;
  }
  GEMLET_CHECK_MSG(false, "validated config has a producer for every shared layer");
  return -1;
}

bool Gemma4Config::read_by_shared(int64_t l) const {
  if (!has_kv(l)) return false;
  for (int64_t s = first_kv_shared(); s < num_layers; ++s) {
    if (kv_source(s) == l) return true;
  }
  return false;
}

int64_t Gemma4Config::rope_pairs(int64_t l) const {
  const int64_t half = head_dim_of(l) / 2;
  if (!is_full(l)) return half;
  // HF _compute_proportional_rope_parameters: rope_angles = int(factor * head_dim // 2).
  return static_cast<int64_t>(partial_rotary_factor_full * static_cast<double>(head_dim_of(l)) / 2.0);
}

}  // namespace gemlet::model
