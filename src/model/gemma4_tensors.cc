#include "model/gemma4_tensors.h"

#include <cstdlib>

namespace gemlet::model {

const char kHfTextPrefix[] = "model.language_model.";

namespace {
struct ClassName {
  TensorClass cls;
  const char* name;
};
constexpr ClassName kClassNames[] = {
    {TensorClass::kTokenEmbedding, "token_embd"}, {TensorClass::kPleTable, "ple_table"},
    {TensorClass::kPleModelProj, "ple_model_proj"}, {TensorClass::kAttention, "attn"},
    {TensorClass::kFeedForward, "ffn"}, {TensorClass::kPleGate, "ple_gate"},
    {TensorClass::kPleProj, "ple_proj"}, {TensorClass::kNorm, "norm"},
    {TensorClass::kScalar, "scalar"}, {TensorClass::kDrafterProj, "drafter_proj"},
    {TensorClass::kCentroids, "centroids"}, {TensorClass::kTokenOrder, "token_order"},
    {TensorClass::kVisionMatrix, "vision"}, {TensorClass::kVisionPosTable, "vision_pos"},
    {TensorClass::kVisionProj, "vision_proj"}, {TensorClass::kAudioMatrix, "audio"},
    {TensorClass::kAudioConv, "audio_conv"}, {TensorClass::kAudioProj, "audio_proj"},
};

// Parses "layers.N." / "blk.N." after `prefix`; returns N or -1.
int64_t LayerIndex(const std::string& name, const std::string& prefix) {
  if (name.compare(0, prefix.size(), prefix) != 0) return -1;
  const char* p = name.c_str() + prefix.size();
  char* end = nullptr;
  long v = std::strtol(p, &end, 10);
  if (end == p || *end != '.') return -1;
  return v;
}
}  // namespace

const char* TensorClassName(TensorClass c) {
  for (const auto& cn : kClassNames) {
    if (cn.cls == c) return cn.name;
  }
  return "?";
}

Result<TensorClass> ParseTensorClass(const std::string& name) {
  for (const auto& cn : kClassNames) {
    if (name == cn.name) return cn.cls;
  }
  return InvalidArgument("unknown tensor class '" + name +
                         "' (expected token_embd, ple_table, ple_model_proj, attn, ffn, "
                         "ple_gate, ple_proj, norm, scalar, drafter_proj, centroids, token_order, "
                         "vision, vision_pos, vision_proj, audio, audio_conv or audio_proj)");
}

std::vector<TensorSpec> ExpectedTensors(const Gemma4Config& c) {
  std::vector<TensorSpec> out;
  const std::string hf = kHfTextPrefix;
  const int64_t D = c.hidden_size, V = c.vocab_size, P = c.hidden_size_per_layer_input;
  auto add = [&](std::string name, std::string hf_name, std::string gguf, std::vector<int64_t> shape,
                 TensorClass cls, int64_t layer) {
    out.push_back({std::move(name), hf + hf_name, std::move(gguf) + ".weight", std::move(shape), cls, layer});
  };
  add("token_embd", "embed_tokens.weight", "token_embd", {V, D}, TensorClass::kTokenEmbedding, -1);
  add("per_layer_token_embd", "embed_tokens_per_layer.weight", "per_layer_token_embd",
      {c.vocab_size_per_layer_input, c.ple_total()}, TensorClass::kPleTable, -1);
  add("per_layer_model_proj", "per_layer_model_projection.weight", "per_layer_model_proj",
      {c.ple_total(), D}, TensorClass::kPleModelProj, -1);
  add("per_layer_proj_norm", "per_layer_projection_norm.weight", "per_layer_proj_norm", {P},
      TensorClass::kNorm, -1);
  add("output_norm", "norm.weight", "output_norm", {D}, TensorClass::kNorm, -1);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const std::string h = "layers." + std::to_string(l) + ".";
    const int64_t hd = c.head_dim_of(l), I = c.ffn_dim(l);
    add(b + "attn_norm", h + "input_layernorm.weight", b + "attn_norm", {D}, TensorClass::kNorm, l);
    add(b + "attn_q", h + "self_attn.q_proj.weight", b + "attn_q", {c.q_dim(l), D}, TensorClass::kAttention, l);
    if (c.has_kv(l)) {
      add(b + "attn_k", h + "self_attn.k_proj.weight", b + "attn_k", {c.kv_dim(l), D}, TensorClass::kAttention, l);
      add(b + "attn_v", h + "self_attn.v_proj.weight", b + "attn_v", {c.kv_dim(l), D}, TensorClass::kAttention, l);
    }
    add(b + "attn_output", h + "self_attn.o_proj.weight", b + "attn_output", {D, c.q_dim(l)},
        TensorClass::kAttention, l);
    add(b + "attn_q_norm", h + "self_attn.q_norm.weight", b + "attn_q_norm", {hd}, TensorClass::kNorm, l);
    if (c.has_kv(l)) {
      add(b + "attn_k_norm", h + "self_attn.k_norm.weight", b + "attn_k_norm", {hd}, TensorClass::kNorm, l);
    }
    add(b + "post_attention_norm", h + "post_attention_layernorm.weight", b + "post_attention_norm", {D},
        TensorClass::kNorm, l);
    add(b + "ffn_norm", h + "pre_feedforward_layernorm.weight", b + "ffn_norm", {D}, TensorClass::kNorm, l);
    add(b + "ffn_gate", h + "mlp.gate_proj.weight", b + "ffn_gate", {I, D}, TensorClass::kFeedForward, l);
    add(b + "ffn_up", h + "mlp.up_proj.weight", b + "ffn_up", {I, D}, TensorClass::kFeedForward, l);
    add(b + "ffn_down", h + "mlp.down_proj.weight", b + "ffn_down", {D, I}, TensorClass::kFeedForward, l);
    add(b + "post_ffw_norm", h + "post_feedforward_layernorm.weight", b + "post_ffw_norm", {D},
        TensorClass::kNorm, l);
    add(b + "inp_gate", h + "per_layer_input_gate.weight", b + "inp_gate", {P, D}, TensorClass::kPleGate, l);
    add(b + "proj", h + "per_layer_projection.weight", b + "proj", {D, P}, TensorClass::kPleProj, l);
    add(b + "post_norm", h + "post_per_layer_input_norm.weight", b + "post_norm", {D}, TensorClass::kNorm, l);
    out.push_back({b + "layer_output_scale", hf + h + "layer_scalar", b + "layer_output_scale.weight", {1},
                   TensorClass::kScalar, l});
  }
  return out;
}

bool IsSkippedHfTensor(const Gemma4Config& c, const std::string& name) {
  const std::string text = kHfTextPrefix;
  if (name.compare(0, text.size(), text) != 0) return true;  // towers, embedders, lm_head
  const int64_t l = LayerIndex(name, text + "layers.");
  if (l >= 0 && l < c.num_layers && !c.has_kv(l)) {
    const std::string rest = name.substr(name.find('.', text.size() + 7) + 1);
    return rest == "self_attn.k_proj.weight" || rest == "self_attn.v_proj.weight" ||
           rest == "self_attn.k_norm.weight";
  }
  return false;
}

bool IsSkippedGgufTensor(const Gemma4Config& c, const std::string& name) {
  if (name == "rope_freqs.weight" || name == "output.weight") return true;  // derived / tied
  const int64_t l = LayerIndex(name, "blk.");
  if (l >= 0 && l < c.num_layers && !c.has_kv(l)) {
    const std::string rest = name.substr(name.find('.', 4) + 1);
    return rest == "attn_k.weight" || rest == "attn_v.weight" || rest == "attn_k_norm.weight";
  }
  return false;
}

}  // namespace gemlet::model
