// The weights of a Gemma 4 text decoder bound from a .gemlet file: every tensor of
// ExpectedTensors(cfg) found, its type and shape checked, matrices kept as zero-copy views
// into the mapping, small vectors (norm weights, layer scalars) converted to f32 once.
// Immutable after Bind(); shared by every session of an engine.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/gemlet_file.h"
#include "model/gemma4_config.h"
#include "ops/weight.h"

namespace gemlet::model {

struct Gemma4Layer {
  // Matrices [out, in]. attn_k / attn_v are empty (!valid()) on KV-shared layers.
  ops::Weight attn_q;       // [H·hd, D]
  ops::Weight attn_k;       // [Hkv·hd, D]
  ops::Weight attn_v;       // [Hkv·hd, D]
  ops::Weight attn_output;  // [D, H·hd]
  ops::Weight ffn_gate;     // [I_l, D]
  ops::Weight ffn_up;       // [I_l, D]
  ops::Weight ffn_down;     // [D, I_l]
  ops::Weight inp_gate;     // [P, D]   per_layer_input_gate
  ops::Weight proj;         // [D, P]   per_layer_projection
  // RMSNorm weights as f32, used as stored (no 1 + w).
  std::vector<float> attn_norm;            // [D]  input_layernorm
  std::vector<float> q_norm;               // [hd]
  std::vector<float> k_norm;               // [hd] (empty on KV-shared layers)
  std::vector<float> post_attention_norm;  // [D]
  std::vector<float> ffn_norm;             // [D]  pre_feedforward_layernorm
  std::vector<float> post_ffw_norm;        // [D]  post_feedforward_layernorm
  std::vector<float> post_norm;            // [D]  post_per_layer_input_norm
  float layer_scalar = 1.0f;               // layer_output_scale / HF layer_scalar
};

class Gemma4Model {
 public:
  // Reads the config from the file's metadata "config" and binds every tensor. `file` must
  // outlive the model. Errors name the file, the tensor and the shapes or types involved.
  static Result<std::unique_ptr<Gemma4Model>> Bind(const GemletFile& file);

  const Gemma4Config& config() const { return cfg_; }
  const ops::Weight& token_embd() const { return token_embd_; }                           // [V, D]
  const ops::Weight& per_layer_token_embd() const { return per_layer_token_embd_; }       // [V, L·P]
  const ops::Weight& per_layer_model_proj() const { return per_layer_model_proj_; }       // [L·P, D]
  const std::vector<float>& per_layer_proj_norm() const { return per_layer_proj_norm_; }  // [P]
  const std::vector<float>& output_norm() const { return output_norm_; }                  // [D]
  const Gemma4Layer& layer(int64_t l) const { return layers_[l]; }

  // RoPE inverse frequencies per layer type: [hd/2] (zeros beyond the rotating pairs).
  const std::vector<float>& rope_inv_freq(int64_t l) const {
    return cfg_.is_full(l) ? rope_full_ : rope_sliding_;
  }
  const std::vector<float>& rope_sliding() const { return rope_sliding_; }
  const std::vector<float>& rope_full() const { return rope_full_; }

  // Bytes of weights the model references (what a forward pass may touch).
  uint64_t weight_bytes() const { return weight_bytes_; }
  // Bytes of weights one decode step reads: every matrix of every layer, the whole tied LM
  // head, the norms, and one row each of the token and per-layer embedding tables (the KV
  // cache comes on top). Decode on a CPU is bound by this ÷ the memory's read bandwidth.
  uint64_t decode_bytes_per_token() const;
  // Multiply-adds of the matrix products per token (rows × cols of each matrix it passes
  // through; the attention's, which grow with the context, come on top). A decode step's:
  // every layer (K and V only on the layers that compute them) and the LM head. A prompt
  // row's that gives no logits: the per-layer-embedding projection and the layers before the
  // first KV-shared one (the forward's skip_shared_rows), the int8 work prefill is bound by.
  uint64_t decode_macs_per_token() const { return MacsPerToken(/*all_layers=*/true); }
  uint64_t prompt_macs_per_token() const { return MacsPerToken(/*all_layers=*/false); }
  // True if the weights live in a read-only file mapping (GemletFile::Open, not FromMemory):
  // then the per-layer-embedding rows are gathered with ops::GatherRowsFromFileMapping,
  // which keeps the huge table out of the resident set.
  bool weights_file_mapped() const { return file_mapped_; }

 private:
  Gemma4Model() = default;
  uint64_t MacsPerToken(bool all_layers) const;

  Gemma4Config cfg_;
  ops::Weight token_embd_, per_layer_token_embd_, per_layer_model_proj_;
  std::vector<float> per_layer_proj_norm_, output_norm_;
  std::vector<Gemma4Layer> layers_;
  std::vector<float> rope_sliding_, rope_full_;
  uint64_t weight_bytes_ = 0;
  bool file_mapped_ = false;
};

}  // namespace gemlet::model
