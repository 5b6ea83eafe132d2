#include "model/gemma4_model.h"

#include <unordered_map>

#include "model/tensor_binding.h"
#include "model/gemma4_tensors.h"
#include "ops/rope.h"

namespace gemlet::model {


Result<std::unique_ptr<Gemma4Model>> Gemma4Model::Bind(const GemletFile& file) {
  const auto& meta = file.metadata();
  if (!meta.is_object() || !meta.contains("config")) {
    return Corrupt(file.path() + ": metadata has no \"config\" object");
  }
  if (meta.value("kind", "") == "gemma4-drafter") {
    return InvalidArgument(file.path() + " is an MTP drafter, not a model; give it with --drafter beside a target model");
  }
  auto cfg = Gemma4Config::FromJson(meta["config"]);
  if (!cfg.ok()) return cfg.status().WithContext(file.path());

  std::unique_ptr<Gemma4Model> m(new Gemma4Model());
  m->cfg_ = *cfg;
  m->file_mapped_ = file.mapping() != nullptr;
  const Gemma4Config& c = m->cfg_;
  m->layers_.resize(c.num_layers);

  for (const TensorSpec& spec : ExpectedTensors(c)) {
    ASSIGN_OR_RETURN(const TensorView* t, FindChecked(file, spec));
    m->weight_bytes_ += t->nbytes;
    const std::string& n = spec.name;
    if (spec.layer < 0) {
      if (n == "token_embd") {
        m->token_embd_ = ToWeight(*t);
      } else if (n == "per_layer_token_embd") {
        m->per_layer_token_embd_ = ToWeight(*t);
      } else if (n == "per_layer_model_proj") {
        m->per_layer_model_proj_ = ToWeight(*t);
      } else if (n == "per_layer_proj_norm") {
        m->per_layer_proj_norm_ = ToF32(*t);
      } else if (n == "output_norm") {
        m->output_norm_ = ToF32(*t);
      } else {
        return Internal("model binder does not know global tensor '" + n + "'");
      }
      continue;
    }
    Gemma4Layer& L = m->layers_[spec.layer];
    const std::string suffix = n.substr(n.find('.', 4) + 1);  // after "blk.N."
    static const std::unordered_map<std::string, ops::Weight Gemma4Layer::*> kMatrices = {
        {"attn_q", &Gemma4Layer::attn_q},     {"attn_k", &Gemma4Layer::attn_k},
        {"attn_v", &Gemma4Layer::attn_v},     {"attn_output", &Gemma4Layer::attn_output},
        {"ffn_gate", &Gemma4Layer::ffn_gate}, {"ffn_up", &Gemma4Layer::ffn_up},
        {"ffn_down", &Gemma4Layer::ffn_down}, {"inp_gate", &Gemma4Layer::inp_gate},
        {"proj", &Gemma4Layer::proj},
    };
    static const std::unordered_map<std::string, std::vector<float> Gemma4Layer::*> kVectors = {
        {"attn_norm", &Gemma4Layer::attn_norm}, {"attn_q_norm", &Gemma4Layer::q_norm},
        {"attn_k_norm", &Gemma4Layer::k_norm},  {"post_attention_norm", &Gemma4Layer::post_attention_norm},
        {"ffn_norm", &Gemma4Layer::ffn_norm},   {"post_ffw_norm", &Gemma4Layer::post_ffw_norm},
        {"post_norm", &Gemma4Layer::post_norm},
    };
    if (auto it = kMatrices.find(suffix); it != kMatrices.end()) {
      L.*(it->second) = ToWeight(*t);
    } else if (auto iv = kVectors.find(suffix); iv != kVectors.end()) {
      L.*(iv->second) = ToF32(*t);
    } else if (suffix == "layer_output_scale") {
      L.layer_scalar = ToF32(*t)[0];
    } else {
      return Internal("model binder does not know layer tensor '" + n + "'");
    }
  }

  m->rope_sliding_ = ops::RopeInvFreq(c.head_dim, c.rope_theta_sliding, c.head_dim / 2);
  // The full-attention pair count is the same for every full layer; find one to ask.
  int64_t full_pairs = c.global_head_dim / 2;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    if (c.is_full(l)) {
      full_pairs = c.rope_pairs(l);
      break;
    }
  }
  m->rope_full_ = ops::RopeInvFreq(c.global_head_dim, c.rope_theta_full, full_pairs);
  return m;
}

uint64_t Gemma4Model::decode_bytes_per_token() const {
  uint64_t b = token_embd_.row_bytes * token_embd_.rows;  // the LM head, streamed whole
  b += token_embd_.row_bytes + per_layer_token_embd_.row_bytes;  // the gathered rows
  b += per_layer_model_proj_.row_bytes * per_layer_model_proj_.rows;
  b += (per_layer_proj_norm_.size() + output_norm_.size()) * sizeof(float);
  for (const Gemma4Layer& L : layers_) {
    for (const ops::Weight* w : {&L.attn_q, &L.attn_k, &L.attn_v, &L.attn_output, &L.ffn_gate, &L.ffn_up,
                                 &L.ffn_down, &L.inp_gate, &L.proj}) {
      if (w->valid()) b += w->row_bytes * w->rows;
    }
    for (const std::vector<float>* v : {&L.attn_norm, &L.q_norm, &L.k_norm, &L.post_attention_norm, &L.ffn_norm,
                                         &L.post_ffw_norm, &L.post_norm}) {
      b += v->size() * sizeof(float);
    }
  }
  return b;
}

uint64_t Gemma4Model::MacsPerToken(bool all_layers) const {
  auto macs = [](const ops::Weight& w) { return w.valid() ? static_cast<uint64_t>(w.rows * w.cols) : 0; };
  uint64_t n = macs(per_layer_model_proj_) + (all_layers ? macs(token_embd_) : 0);
  const int64_t end = all_layers ? cfg_.num_layers : cfg_.first_kv_shared();
  for (int64_t l = 0; l < end; ++l) {
    const Gemma4Layer& L = layers_[l];
    // (KV-shared layers bind no K and V projections: not valid, no work.)
    for (const ops::Weight* w : {&L.attn_q, &L.attn_k, &L.attn_v, &L.attn_output, &L.ffn_gate, &L.ffn_up,
                                 &L.ffn_down, &L.inp_gate, &L.proj}) {
      n += macs(*w);
    }
  }
  return n;
}

}  // namespace gemlet::model
