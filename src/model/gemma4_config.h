// Gemma 4 text-decoder configuration (../shared/spec/gemma4-text.md §1) and the per-layer
// facts derived from it (§1.2): layer types, head dims, MLP widths, KV sharing, RoPE.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace gemlet::model {

enum class AttnType { kSliding, kFull };

struct Gemma4Config {
  int64_t vocab_size = 0;                  // V
  int64_t hidden_size = 0;                 // D
  int64_t num_layers = 0;                  // L
  int64_t num_heads = 0;                   // H
  int64_t num_kv_heads = 0;                // Hkv
  int64_t head_dim = 0;                    // sliding layers
  int64_t global_head_dim = 0;             // full layers
  int64_t intermediate_size = 0;           // I (doubled on KV-shared layers if double_wide)
  int64_t hidden_size_per_layer_input = 0; // P
  int64_t vocab_size_per_layer_input = 0;
  int64_t sliding_window = 0;              // W: keys t−W < u ≤ t
  int64_t num_kv_shared_layers = 0;
  int64_t max_position_embeddings = 131072;
  bool use_double_wide_mlp = false;
  double rms_norm_eps = 1e-6;
  double final_logit_softcapping = 30.0;   // 0 = none
  double rope_theta_sliding = 10000.0;
  double rope_theta_full = 1000000.0;
  double partial_rotary_factor_full = 0.25;  // proportional RoPE on full layers
  std::vector<AttnType> layer_types;       // [L]
  int64_t bos_token_id = 2;
  int64_t eos_token_id = 1;
  int64_t pad_token_id = 0;

  // Reads an HF `text_config` object (also the "config" of a .gemlet file). Rejects
  // features this engine does not implement (MoE, k_eq_v, attention bias, ...).
  static Result<Gemma4Config> FromJson(const nlohmann::json& text_config);
  nlohmann::json ToJson() const;  // HF text_config keys; FromJson(ToJson()) round-trips
  Status Validate() const;

  // ---- derived (spec §1.2) ----
  int64_t first_kv_shared() const { return num_layers - num_kv_shared_layers; }
  bool is_full(int64_t l) const { return layer_types[l] == AttnType::kFull; }
  bool has_kv(int64_t l) const { return l < first_kv_shared(); }
  // The layer whose K/V layer l attends over: itself, or for a KV-shared layer the last
  // non-shared layer of the same type (HF Gemma4TextAttention.__init__).
  int64_t kv_source(int64_t l) const;
  // Whether a KV-shared layer attends over cached layer l's K/V (l is some kv_source(l') ≠ l').
  bool read_by_shared(int64_t l) const;
  int64_t head_dim_of(int64_t l) const { return is_full(l) ? global_head_dim : head_dim; }
  int64_t ffn_dim(int64_t l) const {
    return use_double_wide_mlp && l >= first_kv_shared() && first_kv_shared() > 0
               ? 2 * intermediate_size
               : intermediate_size;
  }
  // Pairs (i, i + hd/2) that rotate: all hd/2 on sliding layers, partial·hd/2 on full ones.
  int64_t rope_pairs(int64_t l) const;
  double rope_theta(int64_t l) const { return is_full(l) ? rope_theta_full : rope_theta_sliding; }
  int64_t q_dim(int64_t l) const { return num_heads * head_dim_of(l); }
  int64_t kv_dim(int64_t l) const { return num_kv_heads * head_dim_of(l); }
  int64_t ple_total() const { return num_layers * hidden_size_per_layer_input; }  // L·P
};

}  // namespace gemlet::model
