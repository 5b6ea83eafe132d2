// The tensors of a Gemma 4 text model: their .gemlet names, shapes (outermost first),
// Hugging Face and GGUF names, and the class a quantization plan assigns types by.
// This table is the single source of truth for the converter, the synthesizer and the loader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/gemma4_config.h"

namespace gemlet::model {

enum class TensorClass {
  kTokenEmbedding,   // token_embd [V, D]; also the tied LM head
  kPleTable,         // per_layer_token_embd [V, L·P]
  kPleModelProj,     // per_layer_model_proj [L·P, D]
  kAttention,        // attn_q/k/v/output
  kFeedForward,      // ffn_gate/up/down
  kPleGate,          // inp_gate [P, D]
  kPleProj,          // proj [D, P]
  kNorm,             // every RMSNorm weight
  kScalar,           // layer_output_scale [1]; the vision tower's clip bounds [1]
  kDrafterProj,      // the MTP drafter's pre_projection / post_projection
  kCentroids,        // the drafter's sparse-head centroids [C, D]
  kTokenOrder,       // the drafter's token_ordering [V] (token ids, stored as f32: exact below 2^24)
  kVisionMatrix,     // the vision tower's linears (patch embedding, attention, GeGLU)
  kVisionPosTable,   // v.position_embd [2, P, Dv] (rows gathered by patch position)
  kVisionProj,       // mm.input_projection [D, Dv] (embed_vision)
  kAudioMatrix,      // the audio tower's linears (input_proj, conformer, output_proj)
  kAudioConv,        // the audio tower's convolution kernels (subsampling, depthwise)
  kAudioProj,        // mm.a.input_projection [D, Da'] (embed_audio)
};
const char* TensorClassName(TensorClass c);  // "token_embd", "ple_table", "attn", ...
// Parses the names TensorClassName returns.
Result<TensorClass> ParseTensorClass(const std::string& name);

struct TensorSpec {
  std::string name;       // .gemlet name, e.g. "blk.3.attn_q"
  std::string hf_name;    // e.g. "model.language_model.layers.3.self_attn.q_proj.weight"
  std::string gguf_name;  // e.g. "blk.3.attn_q.weight"
  std::vector<int64_t> shape;  // outermost first, [out, in] for matrices
  TensorClass cls;
  int64_t layer = -1;     // -1 for global tensors
};

// Every tensor a text model needs, in file order (globals, then layer by layer). KV-shared
// layers have no attn_k / attn_v / attn_k_norm.
std::vector<TensorSpec> ExpectedTensors(const Gemma4Config& cfg);

// The Hugging Face prefix of text tensors ("model.language_model.").
extern const char kHfTextPrefix[];
// True for checkpoint tensors that a text model skips: vision/audio towers and embedders,
// lm_head (tied), and the unused k/v projections and k norm of KV-shared layers.
bool IsSkippedHfTensor(const Gemma4Config& cfg, const std::string& hf_name);
bool IsSkippedGgufTensor(const Gemma4Config& cfg, const std::string& gguf_name);

}  // namespace gemlet::model
