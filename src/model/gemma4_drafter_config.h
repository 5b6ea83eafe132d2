// The Gemma 4 MTP drafter's configuration (the "assistant" checkpoint,
// ../shared/spec/gemma4-multimodal-mtp.md §3.2; HF Gemma4AssistantConfig): a small decoder of
// Q-only layers that attends over its target's KV cache, with a sparse centroid LM head.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "model/gemma4_config.h"

namespace gemlet::model {

struct Gemma4DrafterConfig {
  int64_t backbone_hidden_size = 0;  // B: the target's hidden size
  int64_t vocab_size = 0;            // V (the target's)
  int64_t hidden_size = 0;           // D of the drafter
  int64_t num_layers = 0;            // every one Q-only (num_kv_shared_layers == num_layers)
  int64_t num_heads = 0;             // H
  int64_t num_kv_heads = 0;          // Hkv (must equal the target's)
  int64_t head_dim = 0;              // sliding layers (the target's)
  int64_t global_head_dim = 0;       // full layers (the target's)
  int64_t intermediate_size = 0;     // I
  int64_t sliding_window = 0;        // W; a drafter query sees the last W + 1 target positions
  double rms_norm_eps = 1e-6;
  double rope_theta_sliding = 10000.0;
  double rope_theta_full = 1000000.0;
  double partial_rotary_factor_full = 0.25;
  std::vector<AttnType> layer_types;  // [L]
  // The sparse ("ordered embedding") head: num_centroids clusters of V / num_centroids tokens;
  // the top centroid_top_k clusters' tokens are the candidates. false: dense head only.
  bool use_ordered_embeddings = false;
  int64_t num_centroids = 0;
  int64_t centroid_top_k = 0;

  // Reads a Gemma4AssistantConfig (config.json: top-level fields + "text_config"), or the
  // object ToJson wrote. Rejects what this engine does not implement (softcap, PLE, K/V
  // projections of its own, ...).
  static Result<Gemma4DrafterConfig> FromJson(const nlohmann::json& j);
  nlohmann::json ToJson() const;  // FromJson(ToJson()) round-trips
  Status Validate() const;
  // The drafter can run on this target: same vocabulary, hidden size, KV heads and head dims,
  // and the target has a non-shared layer of every attention type the drafter uses.
  Status CheckFits(const Gemma4Config& target) const;

  bool is_full(int64_t l) const { return layer_types[l] == AttnType::kFull; }
  int64_t head_dim_of(int64_t l) const { return is_full(l) ? global_head_dim : head_dim; }
  int64_t q_dim(int64_t l) const { return num_heads * head_dim_of(l); }
  int64_t tokens_per_centroid() const { return num_centroids > 0 ? vocab_size / num_centroids : 0; }
  int64_t candidates() const { return centroid_top_k * tokens_per_centroid(); }
  // Rotating pairs of the full layers' proportional RoPE (as Gemma4Config::rope_pairs).
  int64_t rope_pairs_full() const {
    return static_cast<int64_t>(partial_rotary_factor_full * static_cast<double>(global_head_dim) / 2.0);
  }
};

// The target layer whose KV a drafter layer of type `type` reads: the last non-shared target
// layer of that type (HF: shared_kv_states keyed by layer type); −1 if there is none.
int64_t TargetKvLayer(const Gemma4Config& target, AttnType type);

}  // namespace gemlet::model
