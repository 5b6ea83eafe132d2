#include "model/gemma4_drafter_tensors.h"

namespace gemlet::model {

const char kDrafterPrefix[] = "drafter.";
const char kDrafterMetadataKey[] = "drafter";
const char kDrafterGgufCentroids[] = "masked_embd_centroids.weight";
const char kDrafterGgufTokenOrdering[] = "masked_embd_ordering";

std::vector<TensorSpec> DrafterTensors(const Gemma4DrafterConfig& c) {
  std::vector<TensorSpec> out;
  const std::string g = kDrafterPrefix;
  const int64_t D = c.hidden_size, B = c.backbone_hidden_size, V = c.vocab_size, I = c.intermediate_size;
  // llama.cpp's gemma4-assistant GGUF names are gemlet's with ".weight" (conversion/gemma.py,
  // Gemma4AssistantModel; the token ordering has no suffix), but for the two projections.
  auto add = [&](const std::string& name, const std::string& hf, std::vector<int64_t> shape, TensorClass cls,
                 int64_t layer, std::string gguf = "") {
    if (gguf.empty()) gguf = name + ".weight";
    out.push_back({g + name, hf, std::move(gguf), std::move(shape), cls, layer});
  };
  // HF Gemma4AssistantForCausalLM: model.embed_tokens is the tied LM head only (the input
  // token is embedded with the target's table).
  add("token_embd", "model.embed_tokens.weight", {V, D}, TensorClass::kTokenEmbedding, -1);
  add("pre_proj", "pre_projection.weight", {D, 2 * B}, TensorClass::kDrafterProj, -1,
      "nextn.pre_projection.weight");
  add("post_proj", "post_projection.weight", {B, D}, TensorClass::kDrafterProj, -1, "nextn.post_projection.weight");
  add("output_norm", "model.norm.weight", {D}, TensorClass::kNorm, -1);
  if (c.use_ordered_embeddings) {
    add("centroids", "masked_embedding.centroids.weight", {c.num_centroids, D}, TensorClass::kCentroids, -1,
        kDrafterGgufCentroids);
    add("token_ordering", "masked_embedding.token_ordering", {V}, TensorClass::kTokenOrder, -1,
        kDrafterGgufTokenOrdering);
  }
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const std::string h = "model.layers." + std::to_string(l) + ".";
    add(b + "attn_norm", h + "input_layernorm.weight", {D}, TensorClass::kNorm, l);
    add(b + "attn_q", h + "self_attn.q_proj.weight", {c.q_dim(l), D}, TensorClass::kAttention, l);
    add(b + "attn_q_norm", h + "self_attn.q_norm.weight", {c.head_dim_of(l)}, TensorClass::kNorm, l);
    add(b + "attn_output", h + "self_attn.o_proj.weight", {D, c.q_dim(l)}, TensorClass::kAttention, l);
    add(b + "post_attention_norm", h + "post_attention_layernorm.weight", {D}, TensorClass::kNorm, l);
    add(b + "ffn_norm", h + "pre_feedforward_layernorm.weight", {D}, TensorClass::kNorm, l);
    add(b + "ffn_gate", h + "mlp.gate_proj.weight", {I, D}, TensorClass::kFeedForward, l);
    add(b + "ffn_up", h + "mlp.up_proj.weight", {I, D}, TensorClass::kFeedForward, l);
    add(b + "ffn_down", h + "mlp.down_proj.weight", {D, I}, TensorClass::kFeedForward, l);
    add(b + "post_ffw_norm", h + "post_feedforward_layernorm.weight", {D}, TensorClass::kNorm, l);
    add(b + "layer_output_scale", h + "layer_scalar", {1}, TensorClass::kScalar, l);
  }
  return out;
}

}  // namespace gemlet::model
