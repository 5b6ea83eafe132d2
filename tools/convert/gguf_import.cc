#include "tools/convert/gguf_import.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include "format/gguf_vocab.h"
#include "model/gemma4_drafter_config.h"
#include "model/gemma4_drafter_tensors.h"

namespace gemlet::convert {

double ShortestDecimal(float f) {
  if (!std::isfinite(f)) return f;
  char buf[64];
  for (int p = 1; p <= 9; ++p) {
    std::snprintf(buf, sizeof(buf), "%.*g", p, static_cast<double>(f));
    if (std::strtof(buf, nullptr) == f) return std::strtod(buf, nullptr);
  }
  return f;
}

namespace {

// A per-layer integer: a scalar (same for every layer) or an array of n_layer entries.
Result<std::vector<int64_t>> PerLayer(const GgufFile& g, const std::string& key, int64_t n_layer) {
  const GgufValue* v = g.Find(key);
  if (!v) return NotFound(g.path() + ": metadata key " + key + " is missing");
  if (v->type == GgufValueType::kArray) {
    ASSIGN_OR_RETURN(std::vector<int64_t> a, g.GetIntArray(key));
    if (static_cast<int64_t>(a.size()) != n_layer) {
      return Corrupt(g.path() + ": " + key + " has " + std::to_string(a.size()) + " entries for " +
                     std::to_string(n_layer) + " layers");
    }
    return a;
  }
  ASSIGN_OR_RETURN(int64_t x, g.GetI64(key));
  return std::vector<int64_t>(static_cast<size_t>(n_layer), x);
}

Result<int64_t> Uniform(const GgufFile& g, const std::string& key, int64_t n_layer) {
  ASSIGN_OR_RETURN(std::vector<int64_t> a, PerLayer(g, key, n_layer));
  for (int64_t x : a) {
    if (x != a[0])
      return Unsupported(g.path() + ": " + key + " differs between layers, which gemma4 E2B/E4B never do");
  }
  return a[0];
}

// The attention and RoPE geometry that gemma4 and gemma4-assistant GGUFs share, under the
// architecture prefix `a` ("gemma4."), as HF text_config fields.
struct GgufAttention {
  uint32_t n_layer = 0;
  nlohmann::json fields;  // the text_config fields below
  int64_t rotated = 0;    // pairs the full layers rotate (the rope_freqs pattern)
};

Result<GgufAttention> ReadGgufAttention(const GgufFile& g, const std::string& a) {
  const std::string& path = g.path();
  GgufAttention out;
  ASSIGN_OR_RETURN(uint32_t n_layer, g.GetU32(a + "block_count"));
  if (n_layer == 0 || n_layer > 1024) return Corrupt(path + ": block_count " + std::to_string(n_layer));
  out.n_layer = n_layer;
  ASSIGN_OR_RETURN(uint64_t ctx, g.GetU64(a + "context_length"));
  ASSIGN_OR_RETURN(uint64_t d_model, g.GetU64(a + "embedding_length"));
  ASSIGN_OR_RETURN(int64_t n_head, Uniform(g, a + "attention.head_count", n_layer));
  ASSIGN_OR_RETURN(int64_t n_kv, Uniform(g, a + "attention.head_count_kv", n_layer));
  ASSIGN_OR_RETURN(uint32_t k_full, g.GetU32(a + "attention.key_length"));
  ASSIGN_OR_RETURN(uint32_t k_swa, g.GetU32(a + "attention.key_length_swa"));
  for (auto [vk, k] :
       {std::pair{"attention.value_length", k_full}, std::pair{"attention.value_length_swa", k_swa}}) {
    if (g.Has(a + vk)) {
      ASSIGN_OR_RETURN(uint32_t v, g.GetU32(a + vk));
      if (v != k)
        return Unsupported(path + ": " + a + vk + " " + std::to_string(v) + " differs from the key length " +
                           std::to_string(k));
    }
  }
  ASSIGN_OR_RETURN(std::vector<bool> pattern, g.GetBoolArray(a + "attention.sliding_window_pattern"));
  if (pattern.size() != n_layer) {
    return Corrupt(path + ": attention.sliding_window_pattern has " + std::to_string(pattern.size()) +
                   " entries for " + std::to_string(n_layer) + " layers");
  }
  ASSIGN_OR_RETURN(uint64_t window, g.GetU64(a + "attention.sliding_window"));
  uint64_t shared = 0;
  if (g.Has(a + "attention.shared_kv_layers")) {
    ASSIGN_OR_RETURN(shared, g.GetU64(a + "attention.shared_kv_layers"));
  }
  ASSIGN_OR_RETURN(float eps, g.GetF32(a + "attention.layer_norm_rms_epsilon"));
  float softcap = 0.0f;
  if (g.Has(a + "final_logit_softcapping")) {
    ASSIGN_OR_RETURN(softcap, g.GetF32(a + "final_logit_softcapping"));
  }
  float theta_full = 10000.0f, theta_swa = 10000.0f;
  if (g.Has(a + "rope.freq_base")) {
    ASSIGN_OR_RETURN(theta_full, g.GetF32(a + "rope.freq_base"));
  }
  theta_swa = theta_full;
  if (g.Has(a + "rope.freq_base_swa")) {
    ASSIGN_OR_RETURN(theta_swa, g.GetF32(a + "rope.freq_base_swa"));
  }
  uint32_t rot_full = k_full, rot_swa = k_swa;
  if (g.Has(a + "rope.dimension_count")) {
    ASSIGN_OR_RETURN(rot_full, g.GetU32(a + "rope.dimension_count"));
  }
  if (g.Has(a + "rope.dimension_count_swa")) {
    ASSIGN_OR_RETURN(rot_swa, g.GetU32(a + "rope.dimension_count_swa"));
  }
  if (rot_swa != k_swa) {
    return Unsupported(path + ": rope.dimension_count_swa " + std::to_string(rot_swa) +
                       " differs from key_length_swa " + std::to_string(k_swa) +
                       " (sliding layers rotate every dimension)");
  }
  if (rot_full != k_full) {
    return Unsupported(path + ": rope.dimension_count " + std::to_string(rot_full) +
                       " differs from key_length " + std::to_string(k_full) +
                       " (gemma4 expresses partial rotation with rope_freqs)");
  }
  // Proportional RoPE: rope_freqs [k_full / 2] = [1]·n + [≥1e30]·rest.
  double partial = 1.0;
  int64_t rotated = k_full / 2;
  if (const GgufTensorInfo* rf = g.FindTensor("rope_freqs.weight")) {
    if (rf->ggml_type != static_cast<uint32_t>(GgmlType::kF32) || rf->shape.size() != 1 ||
        rf->shape[0] != k_full / 2) {
      return Unsupported(path + ": rope_freqs.weight is " + rf->type_name() + " " + ShapeString(rf->shape) +
                         ", expected F32 [" + std::to_string(k_full / 2) + "]");
    }
    std::vector<float> f(static_cast<size_t>(rf->shape[0]));
    std::memcpy(f.data(), rf->data, f.size() * 4);
    rotated = 0;
    while (rotated < static_cast<int64_t>(f.size()) && f[rotated] == 1.0f) ++rotated;
    for (size_t i = rotated; i < f.size(); ++i) {
      if (!(f[i] >= 1e20f)) {
        return Unsupported(path + ": rope_freqs.weight[" + std::to_string(i) + "] = " + std::to_string(f[i]) +
                           " does not follow the proportional pattern (1.0 for rotated pairs, then >= 1e20)");
      }
    }
    if (rotated == 0) return Unsupported(path + ": rope_freqs.weight rotates no pair");
    partial = static_cast<double>(rotated) / static_cast<double>(k_full / 2);
  }
  out.rotated = rotated;
  nlohmann::json types = nlohmann::json::array();
  for (bool sliding : pattern) types.push_back(sliding ? "sliding_attention" : "full_attention");
  out.fields = {
      {"model_type", "gemma4_text"},
      {"hidden_size", d_model},
      {"num_hidden_layers", n_layer},
      {"num_attention_heads", n_head},
      {"num_key_value_heads", n_kv},
      {"head_dim", k_swa},
      {"global_head_dim", k_full},
      {"sliding_window", window},
      {"num_kv_shared_layers", shared},
      {"max_position_embeddings", ctx},
      {"rms_norm_eps", ShortestDecimal(eps)},
      {"final_logit_softcapping", ShortestDecimal(softcap)},
      {"hidden_activation", "gelu_pytorch_tanh"},
      {"layer_types", types},
      {"rope_parameters",
       {{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", ShortestDecimal(theta_swa)}}},
        {"full_attention",
         {{"rope_type", "proportional"},
          {"rope_theta", ShortestDecimal(theta_full)},
          {"partial_rotary_factor", partial}}}}},
  };
  return out;
}

Status NotThisArchitecture(const GgufFile& g, const std::string& arch, const std::string& want) {
  return Unsupported(g.path() + ": general.architecture is '" + arch + "', not " + want);
}

Status RotationNotExpressible(const GgufFile& g, int64_t rotated) {
  return Unsupported(g.path() + ": rope_freqs rotates " + std::to_string(rotated) +
                     " pairs, which no partial_rotary_factor expresses exactly");
}

// The sparse head's top-k: llama.cpp writes no key for it (its converter drops the head); gemlet
// reads "<arch>.centroid_intermediate_top_k" (HF's config name), else HF's default.
constexpr char kGgufCentroidTopK[] = "centroid_intermediate_top_k";
constexpr int64_t kHfDefaultCentroidTopK = 32;  // Gemma4AssistantConfig; the released E2B/E4B value

}  // namespace

Result<nlohmann::json> GgufTextConfig(const GgufFile& g) {
  const std::string& path = g.path();
  ASSIGN_OR_RETURN(std::string arch, g.GetString("general.architecture"));
  if (arch != "gemma4") return NotThisArchitecture(g, arch, "gemma4 (or gemma4-assistant, an MTP drafter)");
  const std::string a = "gemma4.";
  if (g.Has(a + "expert_count")) {
    ASSIGN_OR_RETURN(uint64_t experts, g.GetU64(a + "expert_count"));
    if (experts > 0)
      return Unsupported(path + ": gemma4 MoE models (expert_count " + std::to_string(experts) +
                         ") are not supported");
  }
  ASSIGN_OR_RETURN(GgufAttention att, ReadGgufAttention(g, a));
  const uint32_t n_layer = att.n_layer;
  const uint64_t shared = att.fields["num_kv_shared_layers"].get<uint64_t>();
  if (shared >= n_layer)
    return Corrupt(path + ": attention.shared_kv_layers " + std::to_string(shared) + " >= block_count");
  ASSIGN_OR_RETURN(std::vector<int64_t> ff, PerLayer(g, a + "feed_forward_length", n_layer));
  ASSIGN_OR_RETURN(uint64_t ple, g.GetU64(a + "embedding_length_per_layer_input"));
  if (ple == 0)
    return Unsupported(
        path +
        ": embedding_length_per_layer_input is 0 (models without per-layer embeddings are not supported)");

  ASSIGN_OR_RETURN(uint64_t n_vocab, g.GetArrayLength("tokenizer.ggml.tokens"));
  const int64_t first_shared = static_cast<int64_t>(n_layer - shared);
  const int64_t inter = ff[0];
  bool double_wide = false;
  for (int64_t l = 0; l < n_layer; ++l) {
    const bool wide = first_shared > 0 && l >= first_shared && ff[l] == 2 * inter && inter > 0;
    if (wide) double_wide = true;
    if (ff[l] != inter && !wide) {
      return Unsupported(path + ": feed_forward_length[" + std::to_string(l) +
                         "] = " + std::to_string(ff[l]) + " fits neither " + std::to_string(inter) +
                         " nor the double-wide KV-shared layers");
    }
  }
  if (double_wide) {
    for (int64_t l = first_shared; l < n_layer; ++l) {
      if (ff[l] != 2 * inter)
        return Unsupported(path + ": feed_forward_length doubles on some KV-shared layers only");
    }
  }
  nlohmann::json j = att.fields;
  j["vocab_size"] = n_vocab;
  j["vocab_size_per_layer_input"] = n_vocab;
  j["intermediate_size"] = inter;
  j["use_double_wide_mlp"] = double_wide;
  j["hidden_size_per_layer_input"] = ple;
  for (auto [key, field] : {std::pair{"tokenizer.ggml.bos_token_id", "bos_token_id"},
                            std::pair{"tokenizer.ggml.eos_token_id", "eos_token_id"},
                            std::pair{"tokenizer.ggml.padding_token_id", "pad_token_id"}}) {
    if (g.Has(key)) {
      ASSIGN_OR_RETURN(uint32_t id, g.GetU32(key));
      j[field] = id;
    }
  }
  // Gemma4Config::rope_pairs truncates factor·hd/2; make sure it lands on the pattern's count.
  auto cfg = model::Gemma4Config::FromJson(j);
  if (!cfg.ok()) return cfg.status().WithContext(path);
  for (int64_t l = 0; l < n_layer; ++l) {
    if (cfg->is_full(l) && cfg->rope_pairs(l) != att.rotated) return RotationNotExpressible(g, att.rotated);
  }
  return j;
}

Result<nlohmann::json> GgufDrafterConfig(const GgufFile& g) {
  const std::string& path = g.path();
  ASSIGN_OR_RETURN(std::string arch, g.GetString("general.architecture"));
  if (arch != "gemma4-assistant") return NotThisArchitecture(g, arch, "gemma4-assistant (an MTP drafter)");
  const std::string a = "gemma4-assistant.";
  ASSIGN_OR_RETURN(GgufAttention att, ReadGgufAttention(g, a));
  nlohmann::json t = att.fields;
  ASSIGN_OR_RETURN(t["intermediate_size"], Uniform(g, a + "feed_forward_length", att.n_layer));
  if (g.Has(a + "embedding_length_per_layer_input")) {
    ASSIGN_OR_RETURN(t["hidden_size_per_layer_input"], g.GetU64(a + "embedding_length_per_layer_input"));
  }
  if (t["final_logit_softcapping"] == 0.0) t["final_logit_softcapping"] = nullptr;
  // The vocabulary: the token list, else the rows of the tied table (whose shape the loader
  // checks against it).
  int64_t n_vocab = 0;
  if (g.Has("tokenizer.ggml.tokens")) {
    ASSIGN_OR_RETURN(n_vocab, g.GetArrayLength("tokenizer.ggml.tokens"));
  } else if (const GgufTensorInfo* embd = g.FindTensor("token_embd.weight"); embd && embd->shape.size() == 2) {
    n_vocab = embd->shape[0];
  } else {
    return NotFound(path +
                    ": neither tokenizer.ggml.tokens nor token_embd.weight [vocab, hidden] gives the vocabulary");
  }
  t["vocab_size"] = n_vocab;
  nlohmann::json j = {{"model_type", "gemma4_assistant"}, {"tie_word_embeddings", true}, {"text_config", t}};
  ASSIGN_OR_RETURN(j["backbone_hidden_size"], g.GetU64(a + "embedding_length_out"));
  // The sparse head, if its two tensors are there (llama.cpp's converter leaves them out):
  // num_centroids from the centroid table; top-k from the key gemlet's reading of HF's
  // config name, or HF's default (32, the released E2B/E4B assistants' value).
  const std::string kGgufCentroids = model::kDrafterGgufCentroids;
  const std::string kGgufTokenOrdering = model::kDrafterGgufTokenOrdering;
  const GgufTensorInfo* centroids = g.FindTensor(kGgufCentroids);
  const bool ordering = g.FindTensor(kGgufTokenOrdering) != nullptr;
  if ((centroids != nullptr) != ordering) {
    return Corrupt(path + ": has " + (ordering ? kGgufTokenOrdering : kGgufCentroids) + " but not " +
                   (ordering ? kGgufCentroids : kGgufTokenOrdering) + " (the sparse head needs both)");
  }
  j["use_ordered_embeddings"] = centroids != nullptr;
  if (centroids) {
    if (centroids->shape.size() != 2) {
      return Corrupt(path + ": " + kGgufCentroids + " has shape " + ShapeString(centroids->shape) +
                     ", expected [centroids, hidden]");
    }
    j["num_centroids"] = centroids->shape[0];
    j["centroid_intermediate_top_k"] = kHfDefaultCentroidTopK;
    if (g.Has(a + kGgufCentroidTopK)) {
      ASSIGN_OR_RETURN(j["centroid_intermediate_top_k"], g.GetU64(a + kGgufCentroidTopK));
    }
  }
  auto cfg = model::Gemma4DrafterConfig::FromJson(j);
  if (!cfg.ok()) return cfg.status().WithContext(path);
  if (cfg->rope_pairs_full() != att.rotated) return RotationNotExpressible(g, att.rotated);
  return j;
}

Result<const GgufTensorInfo*> FindGgufTensor(const GgufFile& g, const model::TensorSpec& spec,
                                             const std::string& what) {
  const GgufTensorInfo* t = g.FindTensor(spec.gguf_name);
  if (!t) return NotFound(g.path() + ": " + what + " " + spec.gguf_name + " is missing");
  if (t->shape != spec.shape) {
    return Corrupt(g.path() + ": tensor " + spec.gguf_name + " has shape " + ShapeString(t->shape) +
                   " but the config needs " + ShapeString(spec.shape));
  }
  return t;
}

Status CheckNoOtherGgufTensors(const GgufFile& g, const std::function<bool(const std::string&)>& expected,
                               const std::string& model) {
  for (const GgufTensorInfo& t : g.tensors()) {
    if (expected(t.name)) continue;
    return Corrupt(g.path() + ": unexpected tensor " + t.name + " " + ShapeString(t.shape) + " (not part of " +
                   model + " with this config)");
  }
  return Status::Ok();
}

Result<Checkpoint> LoadGgufCheckpoint(const std::string& path) {
  Checkpoint ck;
  ck.source = path;
  ck.format = "gguf";
  ck.files = {path};
  ASSIGN_OR_RETURN(ck.gguf, GgufFile::Open(path));
  const GgufFile& g = *ck.gguf;
  ASSIGN_OR_RETURN(nlohmann::json text_config, GgufTextConfig(g));
  auto cfg = model::Gemma4Config::FromJson(text_config);
  if (!cfg.ok()) return cfg.status().WithContext(path);
  ck.config = *cfg;
  ck.full_config = nullptr;

  std::unordered_set<std::string> expected;
  for (const model::TensorSpec& spec : model::ExpectedTensors(ck.config)) {
    expected.insert(spec.gguf_name);
    ASSIGN_OR_RETURN(const GgufTensorInfo* t, FindGgufTensor(g, spec, "tensor"));
    ASSIGN_OR_RETURN(SourceTensor src, FromGguf(g, *t));
    ck.tensors.push_back({spec, std::move(src)});
  }
  RETURN_IF_ERROR(CheckNoOtherGgufTensors(
      g, [&](const std::string& name) { return expected.count(name) || model::IsSkippedGgufTensor(ck.config, name); },
      "a Gemma 4 text model"));
  ASSIGN_OR_RETURN(ck.tokenizer, TokenizerFromGguf(g));
  return ck;
}

}  // namespace gemlet::convert
