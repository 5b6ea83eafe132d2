#include "model/gemma4_drafter_config.h"

#include <string>

#include "model/config_field.h"

namespace gemlet::model {

namespace {

template <typename T>
Status Get(const nlohmann::json& j, const char* key, T* out, bool required) {
  return GetConfigField(j, key, out, required, "drafter config");
}

Status RejectTrue(const nlohmann::json& j, const char* key) {
  bool flag = false;
  RETURN_IF_ERROR(Get(j, key, &flag, false));
  if (flag) return Unsupported(std::string("drafter config: ") + key + " = true is not supported");
  return Status::Ok();
}

}  // namespace

Result<Gemma4DrafterConfig> Gemma4DrafterConfig::FromJson(const nlohmann::json& j) {
  if (!j.is_object()) return InvalidArgument("drafter config is not a JSON object");
  if (auto mt = j.find("model_type"); mt == j.end() || *mt != "gemma4_assistant") {
    return Unsupported("drafter config: model_type is not gemma4_assistant");
  }
  auto tc = j.find("text_config");
  if (tc == j.end() || !tc->is_object()) return InvalidArgument("drafter config has no \"text_config\" object");
  const nlohmann::json& t = *tc;
  Gemma4DrafterConfig c;
  RETURN_IF_ERROR(Get(j, "backbone_hidden_size", &c.backbone_hidden_size, true));
  RETURN_IF_ERROR(Get(j, "use_ordered_embeddings", &c.use_ordered_embeddings, false));
  RETURN_IF_ERROR(Get(j, "num_centroids", &c.num_centroids, c.use_ordered_embeddings));
  RETURN_IF_ERROR(Get(j, "centroid_intermediate_top_k", &c.centroid_top_k, c.use_ordered_embeddings));
  RETURN_IF_ERROR(Get(t, "vocab_size", &c.vocab_size, true));
  RETURN_IF_ERROR(Get(t, "hidden_size", &c.hidden_size, true));
  RETURN_IF_ERROR(Get(t, "num_hidden_layers", &c.num_layers, true));
  RETURN_IF_ERROR(Get(t, "num_attention_heads", &c.num_heads, true));
  RETURN_IF_ERROR(Get(t, "num_key_value_heads", &c.num_kv_heads, true));
  RETURN_IF_ERROR(Get(t, "head_dim", &c.head_dim, true));
  c.global_head_dim = c.head_dim;
  RETURN_IF_ERROR(Get(t, "global_head_dim", &c.global_head_dim, false));
  RETURN_IF_ERROR(Get(t, "intermediate_size", &c.intermediate_size, true));
  RETURN_IF_ERROR(Get(t, "sliding_window", &c.sliding_window, true));
  RETURN_IF_ERROR(Get(t, "rms_norm_eps", &c.rms_norm_eps, false));

  int64_t shared = c.num_layers, ple = 0;
  RETURN_IF_ERROR(Get(t, "num_kv_shared_layers", &shared, false));
  if (shared != c.num_layers) {
    return Unsupported("drafter config: num_kv_shared_layers = " + std::to_string(shared) +
                       "; a drafter's layers all read the target's KV (expected " + std::to_string(c.num_layers) +
                       ")");
  }
  RETURN_IF_ERROR(Get(t, "hidden_size_per_layer_input", &ple, false));
  if (ple != 0) return Unsupported("drafter config: per-layer inputs (hidden_size_per_layer_input > 0)");
  double softcap = 0;
  RETURN_IF_ERROR(Get(t, "final_logit_softcapping", &softcap, false));
  if (softcap != 0) return Unsupported("drafter config: final_logit_softcapping is not supported on a drafter");
  RETURN_IF_ERROR(RejectTrue(t, "attention_k_eq_v"));
  RETURN_IF_ERROR(RejectTrue(t, "enable_moe_block"));
  RETURN_IF_ERROR(RejectTrue(t, "attention_bias"));
  RETURN_IF_ERROR(RejectTrue(t, "use_double_wide_mlp"));
  if (t.contains("hidden_activation") && t["hidden_activation"] != "gelu_pytorch_tanh") {
    return Unsupported("drafter config: hidden_activation must be gelu_pytorch_tanh");
  }
  bool tied = true;
  RETURN_IF_ERROR(Get(j, "tie_word_embeddings", &tied, false));
  if (!tied) return Unsupported("drafter config: tie_word_embeddings = false (an untied LM head)");

  auto lt = t.find("layer_types");
  if (lt == t.end() || !lt->is_array()) return InvalidArgument("drafter config has no \"layer_types\" array");
  for (const auto& ty : *lt) {
    if (ty == "sliding_attention") {
      c.layer_types.push_back(AttnType::kSliding);
    } else if (ty == "full_attention") {
      c.layer_types.push_back(AttnType::kFull);
    } else {
      return InvalidArgument("drafter config: unknown layer type " + ty.dump());
    }
  }
  if (auto rp = t.find("rope_parameters"); rp != t.end() && rp->is_object()) {
    if (auto s = rp->find("sliding_attention"); s != rp->end()) {
      RETURN_IF_ERROR(Get(*s, "rope_theta", &c.rope_theta_sliding, false));
      if (s->contains("rope_type") && (*s)["rope_type"] != "default") {
        return Unsupported("drafter config: sliding rope_type " + (*s)["rope_type"].dump());
      }
    }
    if (auto f = rp->find("full_attention"); f != rp->end()) {
      RETURN_IF_ERROR(Get(*f, "rope_theta", &c.rope_theta_full, false));
      RETURN_IF_ERROR(Get(*f, "partial_rotary_factor", &c.partial_rotary_factor_full, false));
      if (f->contains("rope_type") && (*f)["rope_type"] == "default") c.partial_rotary_factor_full = 1.0;
      if (f->contains("rope_type") && (*f)["rope_type"] != "default" && (*f)["rope_type"] != "proportional") {
        return Unsupported("drafter config: full-attention rope_type " + (*f)["rope_type"].dump());
      }
    }
  }
  RETURN_IF_ERROR(c.Validate());
  return c;
}

nlohmann::json Gemma4DrafterConfig::ToJson() const {
  nlohmann::json types = nlohmann::json::array();
  for (AttnType t : layer_types) types.push_back(t == AttnType::kFull ? "full_attention" : "sliding_attention");
  nlohmann::json t = {
      {"model_type", "gemma4_text"},
      {"vocab_size", vocab_size},
      {"hidden_size", hidden_size},
      {"num_hidden_layers", num_layers},
      {"num_attention_heads", num_heads},
      {"num_key_value_heads", num_kv_heads},
      {"head_dim", head_dim},
      {"global_head_dim", global_head_dim},
      {"intermediate_size", intermediate_size},
      {"sliding_window", sliding_window},
      {"num_kv_shared_layers", num_layers},
      {"hidden_size_per_layer_input", 0},
      {"final_logit_softcapping", nullptr},
      {"hidden_activation", "gelu_pytorch_tanh"},
      {"rms_norm_eps", rms_norm_eps},
      {"layer_types", types},
      {"rope_parameters",
       {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", rope_theta_sliding}}},
        {"full_attention",
         {{"rope_type", "proportional"},
          {"rope_theta", rope_theta_full},
          {"partial_rotary_factor", partial_rotary_factor_full}}}}},
  };
  nlohmann::json j = {{"model_type", "gemma4_assistant"},
                      {"backbone_hidden_size", backbone_hidden_size},
                      {"tie_word_embeddings", true},
                      {"use_ordered_embeddings", use_ordered_embeddings},
                      {"text_config", t}};
  if (use_ordered_embeddings) {
    j["num_centroids"] = num_centroids;
    j["centroid_intermediate_top_k"] = centroid_top_k;
  }
  return j;
}

Status Gemma4DrafterConfig::Validate() const {
  auto bad = [](const std::string& m) { return InvalidArgument("drafter config: " + m); };
  for (auto [v, name] : {std::pair{backbone_hidden_size, "backbone_hidden_size"}, {vocab_size, "vocab_size"},
                         {hidden_size, "hidden_size"}, {num_layers, "num_hidden_layers"},
                         {num_heads, "num_attention_heads"}, {num_kv_heads, "num_key_value_heads"},
                         {head_dim, "head_dim"}, {global_head_dim, "global_head_dim"},
                         {intermediate_size, "intermediate_size"}, {sliding_window, "sliding_window"}}) {
    if (v <= 0 || v > (int64_t{1} << 31)) return bad(std::string(name) + " = " + std::to_string(v) + " is out of range");
  }
  if (num_layers > 64) return bad("num_hidden_layers above 64");
  if (static_cast<int64_t>(layer_types.size()) != num_layers) {
    return bad("layer_types has " + std::to_string(layer_types.size()) + " entries for " +
               std::to_string(num_layers) + " layers");
  }
  if (num_heads % num_kv_heads != 0) return bad("num_attention_heads is not a multiple of num_key_value_heads");
  if (head_dim % 2 || global_head_dim % 2) return bad("head dims must be even");
  if (!(rms_norm_eps > 0) || !(rope_theta_sliding > 0) || !(rope_theta_full > 0)) {
    return bad("eps and rope thetas must be positive");
  }
  if (!(partial_rotary_factor_full > 0 && partial_rotary_factor_full <= 1)) {
    return bad("partial_rotary_factor must be in (0, 1]");
  }
  if (use_ordered_embeddings) {
    if (vocab_size >= (int64_t{1} << 24)) return bad("vocab_size above 2^24 (token ids are stored as f32)");
    if (num_centroids <= 0 || vocab_size % num_centroids != 0) {
      return bad("num_centroids = " + std::to_string(num_centroids) + " does not divide vocab_size " +
                 std::to_string(vocab_size));
    }
    if (centroid_top_k <= 0 || centroid_top_k > num_centroids) {
      return bad("centroid_intermediate_top_k = " + std::to_string(centroid_top_k) + " is not in [1, " +
                 std::to_string(num_centroids) + "]");
    }
  }
  return Status::Ok();
}

Status Gemma4DrafterConfig::CheckFits(const Gemma4Config& t) const {
  auto bad = [](const std::string& m) {
    return InvalidArgument("the drafter does not fit the target model: " + m);
  };
  auto differ = [&](const char* what, int64_t mine, int64_t theirs) {
    return bad(std::string(what) + " is " + std::to_string(mine) + " in the drafter, " + std::to_string(theirs) +
               " in the target");
  };
  if (backbone_hidden_size != t.hidden_size) return differ("the hidden size", backbone_hidden_size, t.hidden_size);
  if (vocab_size != t.vocab_size) return differ("the vocabulary", vocab_size, t.vocab_size);
  if (num_kv_heads != t.num_kv_heads) return differ("the KV head count", num_kv_heads, t.num_kv_heads);
  for (int64_t l = 0; l < num_layers; ++l) {
    const int64_t src = TargetKvLayer(t, layer_types[l]);
    if (src < 0) {
      return bad("drafter layer " + std::to_string(l) + " is " + (is_full(l) ? "full" : "sliding") +
                 " attention, and the target has no KV layer of that type");
    }
    if (head_dim_of(l) != t.head_dim_of(src)) {
      return bad("drafter layer " + std::to_string(l) + " has head dim " + std::to_string(head_dim_of(l)) +
                 ", its target KV layer " + std::to_string(src) + " has " + std::to_string(t.head_dim_of(src)));
    }
  }
  if (sliding_window != t.sliding_window) return differ("the sliding window", sliding_window, t.sliding_window);
  return Status::Ok();
}

int64_t TargetKvLayer(const Gemma4Config& target, AttnType type) {
  for (int64_t l = target.first_kv_shared() - 1; l >= 0; --l) {
    if (target.layer_types[l] == type) return l;
  }
  return -1;
}

}  // namespace gemlet::model
