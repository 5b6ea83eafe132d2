#include "model/gemma4_drafter.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>

#include "model/forward_steps.h"
#include "model/gemma4_drafter_tensors.h"
#include "model/tensor_binding.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/embedding.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/rope.h"

namespace gemlet::model {

bool Gemma4Drafter::InFile(const GemletFile& file) {
  return file.metadata().is_object() && file.metadata().contains(kDrafterMetadataKey);
}

Result<std::unique_ptr<Gemma4Drafter>> Gemma4Drafter::Bind(const GemletFile& file) {
  if (!InFile(file)) return NotFound(file.path() + ": the file holds no drafter (no \"drafter\" metadata)");
  auto cfg = Gemma4DrafterConfig::FromJson(file.metadata()[kDrafterMetadataKey]);
  if (!cfg.ok()) return cfg.status().WithContext(file.path());
  std::unique_ptr<Gemma4Drafter> m(new Gemma4Drafter());
  m->path_ = file.path();
  m->cfg_ = *cfg;
  const Gemma4DrafterConfig& c = m->cfg_;
  m->layers_.resize(c.num_layers);
  const std::string g = kDrafterPrefix;
  for (const TensorSpec& spec : DrafterTensors(c)) {
    ASSIGN_OR_RETURN(const TensorView* t, FindChecked(file, spec));
    const std::string n = spec.name.substr(g.size());
    if (spec.layer < 0) {
      if (n == "token_embd") {
        m->token_embd_ = ToWeight(*t);
      } else if (n == "pre_proj") {
        m->pre_proj_ = ToWeight(*t);
      } else if (n == "post_proj") {
        m->post_proj_ = ToWeight(*t);
      } else if (n == "centroids") {
        m->centroids_ = ToWeight(*t);
      } else if (n == "output_norm") {
        m->output_norm_ = ToF32(*t);
      } else if (n == "token_ordering") {
        if (t->type != TensorType::kF32) {
          return Corrupt(file.path() + ": tensor '" + spec.name + "' must be f32 (token ids)");
        }
        // Each cluster's tokens; a permutation of the vocabulary.
        const std::vector<float> ids = ToF32(*t);
        std::vector<bool> seen(c.vocab_size, false);
        m->token_ordering_.resize(ids.size());
        for (size_t i = 0; i < ids.size(); ++i) {
          const float f = ids[i];
          if (!(f >= 0 && f < static_cast<float>(c.vocab_size)) || f != std::floor(f) ||
              seen[static_cast<size_t>(f)]) {
            return Corrupt(file.path() + ": tensor '" + spec.name + "' is not a permutation of the vocabulary (entry " +
                           std::to_string(i) + " is " + std::to_string(f) + ")");
          }
          seen[static_cast<size_t>(f)] = true;
          m->token_ordering_[i] = static_cast<int32_t>(f);
        }
      } else {
        return Internal("drafter binder does not know tensor '" + spec.name + "'");
      }
      continue;
    }
    Gemma4DrafterLayer& L = m->layers_[spec.layer];
    const std::string suffix = n.substr(n.find('.', 4) + 1);  // after "blk.N."
    static const std::unordered_map<std::string, ops::Weight Gemma4DrafterLayer::*> kMatrices = {
        {"attn_q", &Gemma4DrafterLayer::attn_q},     {"attn_output", &Gemma4DrafterLayer::attn_output},
        {"ffn_gate", &Gemma4DrafterLayer::ffn_gate}, {"ffn_up", &Gemma4DrafterLayer::ffn_up},
        {"ffn_down", &Gemma4DrafterLayer::ffn_down},
    };
    static const std::unordered_map<std::string, std::vector<float> Gemma4DrafterLayer::*> kVectors = {
        {"attn_norm", &Gemma4DrafterLayer::attn_norm},
        {"attn_q_norm", &Gemma4DrafterLayer::q_norm},
        {"post_attention_norm", &Gemma4DrafterLayer::post_attention_norm},
        {"ffn_norm", &Gemma4DrafterLayer::ffn_norm},
        {"post_ffw_norm", &Gemma4DrafterLayer::post_ffw_norm},
    };
    if (auto it = kMatrices.find(suffix); it != kMatrices.end()) {
      L.*(it->second) = ToWeight(*t);
    } else if (auto iv = kVectors.find(suffix); iv != kVectors.end()) {
      L.*(iv->second) = ToF32(*t);
    } else if (suffix == "layer_output_scale") {
      L.layer_scalar = ToF32(*t)[0];
    } else {
      return Internal("drafter binder does not know layer tensor '" + spec.name + "'");
    }
  }
  if (m->has_sparse_head()) {
    if (static_cast<int64_t>(m->token_ordering_.size()) != m->token_embd_.rows) {
      return Corrupt(file.path() + ": the drafter's token_ordering has " + std::to_string(m->token_ordering_.size()) +
                     " entries for " + std::to_string(m->token_embd_.rows) + " token rows");
    }
    m->clustered_embd_ = ops::GatherWeightRows(m->token_embd_, m->token_ordering_);
  }
  m->rope_sliding_ = ops::RopeInvFreq(c.head_dim, c.rope_theta_sliding, c.head_dim / 2);
  m->rope_full_ = ops::RopeInvFreq(c.global_head_dim, c.rope_theta_full, c.rope_pairs_full());
  return m;
}

Status Gemma4Drafter::CheckFits(const Gemma4Model& target) const {
  return cfg_.CheckFits(target.config()).WithContext(path_);
}

namespace {

// The draft among `n` logits `v` of ids `ids` (null: ids 0 … n − 1): the largest, ties to the
// lowest id (torch.argmax's first maximum over the vocabulary).
int32_t ArgMax(const float* v, const int32_t* ids, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    const int32_t id = ids ? ids[i] : static_cast<int32_t>(i), bid = ids ? ids[best] : static_cast<int32_t>(best);
    if (v[i] > v[best] || (v[i] == v[best] && id < bid)) best = i;
  }
  return ids ? ids[best] : static_cast<int32_t>(best);
}

}  // namespace

Status DraftStep(const Gemma4Drafter& dr, const Gemma4Model& target, const KvStore& kv, int32_t token,
                 const float* h, DraftHead head, DraftScratch* s, const ForwardOptions& opt, DraftOutput* out) {
  const Gemma4DrafterConfig& c = dr.config();
  const Gemma4Config& tc = target.config();
  const int64_t B = c.backbone_hidden_size, D = c.hidden_size, H = c.num_heads, Hkv = c.num_kv_heads;
  const int64_t V = c.vocab_size, I = c.intermediate_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  GEMLET_CHECK(B == tc.hidden_size && V == tc.vocab_size);  // (CheckFits at load)
  if (token < 0 || token >= V) {
    return InvalidArgument("draft input token " + std::to_string(token) + " is outside the vocabulary [0, " +
                           std::to_string(V) + ")");
  }
  const int64_t P = kv.size();  // the round's position: the last token, not yet in the KV
  if (P == 0) return InvalidArgument("a draft step needs the target's KV of at least one position");
  auto matmul = [&](const ops::Weight& w, const float* in, float* o) { ops::MatMul(w, in, 1, o, opt.mode, opt.pool); };

  // ---- Input (Gemma4AssistantForCausalLM.forward): concat(E_target[token] · √B, h) → pre_projection ----
  float* in = Sized(s->in, 2 * B);  // [2B]
  ops::GatherRows(target.token_embd(), &token, 1, in);
  ops::Scale(in, B, static_cast<float>(std::sqrt(static_cast<double>(B))));  // as model::Forward's √D
  std::copy(h, h + B, in + B);
  float* x = Sized(s->x, D);  // [D] residual stream
  matmul(dr.pre_proj(), in, x);

  float* a = Sized(s->a, D);
  float* d = Sized(s->d, D);
  const int64_t max_q = H * std::max(c.head_dim, c.global_head_dim);
  float* q = Sized(s->q, max_q);  // [H, hd]
  float* o = Sized(s->o, max_q);  // [H, hd]
  float* gate = Sized(s->gate, I);
  float* cs = Sized(s->cos, max_q / H / 2);
  float* sn = Sized(s->sin, max_q / H / 2);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    // ---- Q-only attention (Gemma4TextAttention with shared KV) ----
    const Gemma4DrafterLayer& Ly = dr.layer(l);
    const bool full = c.is_full(l);
    const int64_t hd = c.head_dim_of(l);
    ops::RmsNorm(x, Ly.attn_norm.data(), 1, D, eps, a);
    matmul(Ly.attn_q, a, q);                               // [H, hd]
    ops::RmsNorm(q, Ly.q_norm.data(), H, hd, eps, q);     // q_norm per head
    ops::RopeAngles(dr.rope_inv_freq(l), &P, 1, cs, sn);  // the constant position P
    ops::ApplyRope(q, 1, H, hd, cs, sn);
    // K/V: the target's last non-shared layer of this type, positions 0 … P − 1; a sliding
    // layer sees the last W + 1 of them (HF's bidirectional sliding mask |q − kv| ≤ W with the
    // query at index 0, flipped: oracle README convention 4).
    const int64_t src = TargetKvLayer(tc, c.layer_types[l]);
    const int64_t first = full ? 0 : std::max<int64_t>(0, P - (c.sliding_window + 1));
    ops::KvSegment segs[2];
    const int n_segs = kv.PastFrom(src, first, segs);
    if (n_segs < 0) {
      return OutOfRange("the target's KV cache no longer holds position " + std::to_string(first) + " of layer " +
                        std::to_string(src) + ", which the drafter reads at position " + std::to_string(P));
    }
    // One query at P over keys < P: the causal mask admits every given key (window 0), scale 1.
    const ops::AttentionShape shape{H, Hkv, hd, 0, 1.0f};  // head j reads KV head j / (H / Hkv)
    ops::Attention(shape, q, &P, 1, segs, n_segs, o, opt.pool);
    matmul(Ly.attn_output, o, d);
    ops::AddRmsNorm(x, d, Ly.post_attention_norm.data(), 1, D, eps, 1.0f, nullptr);

    // ---- MLP (Gemma4TextMLP), then layer_scalar on the residual stream ----
    const ops::MatMulInput m = ops::RmsNormQuantize(x, Ly.ffn_norm.data(), 1, D, eps, a, nullptr, nullptr);
    ops::MatMulGeGlu(Ly.ffn_gate, Ly.ffn_up, m, 1, gate, opt.mode, opt.pool);  // gate = GELU(gate)·up
    matmul(Ly.ffn_down, gate, d);
    ops::AddRmsNorm(x, d, Ly.post_ffw_norm.data(), 1, D, eps, Ly.layer_scalar, nullptr);
  }
  float* y = Sized(s->y, D);
  ops::RmsNorm(x, dr.output_norm().data(), 1, D, eps, y);
  if (out->h_next != nullptr) matmul(dr.post_proj(), y, out->h_next);

  // ---- Heads ----
  const bool sparse = head == DraftHead::kSparse && dr.has_sparse_head();
  float* dense = nullptr;
  if (out->dense_logits != nullptr || !sparse) {
    dense = out->dense_logits != nullptr ? out->dense_logits : Sized(s->dense, V);
    matmul(dr.token_embd(), y, dense);  // [V] y · E^T, no softcap
    out->token = ArgMax(dense, nullptr, V);
  }
  if (!sparse) return Status::Ok();
  // Gemma4AssistantMaskedEmbedder: the top-k centroids by y · c, their clusters' tokens as
  // candidates [k · V / C], each scored with its row of the tied table; the rest get
  // min(candidates) − 1.
  const int64_t C = c.num_centroids, k = c.centroid_top_k, per = c.tokens_per_centroid(), n = k * per;
  float* scores = Sized(s->scores, C);
  matmul(dr.centroids(), y, scores);
  int32_t* top = Sized(s->top, C);
  for (int64_t i = 0; i < C; ++i) top[i] = static_cast<int32_t>(i);
  std::partial_sort(top, top + k, top + C, [&](int32_t i, int32_t j) {
    return scores[i] > scores[j] || (scores[i] == scores[j] && i < j);
  });
  int32_t* ids = Sized(s->ids, n);
  for (int64_t t = 0; t < k; ++t) {
    std::copy_n(dr.token_ordering().data() + top[t] * per, per, ids + t * per);
  }
  float* cand = Sized(s->cand, n);
  float* row = Sized(s->row, D);
  float lo = 0;
  // Cluster top[t]'s tokens are rows top[t] · per … of the clustered table: the same bytes as
  // their rows of the tied table, read as one run per cluster.
  for (int64_t t = 0, i = 0; t < k; ++t) {
    for (int64_t j = 0; j < per; ++j, ++i) {
      ops::DequantizeWeightRow(dr.clustered_embd(), top[t] * per + j, row);
      cand[i] = ops::DotF32(row, y, D);  // (exact mode: the dense head's value, bit for bit)
      lo = i == 0 ? cand[i] : std::min(lo, cand[i]);
    }
  }
  out->token = ArgMax(cand, ids, n);
  if (out->sparse_logits != nullptr) {
    std::fill(out->sparse_logits, out->sparse_logits + V, lo - 1.0f);
    for (int64_t i = 0; i < n; ++i) out->sparse_logits[ids[i]] = cand[i];
  }
  return Status::Ok();
}

}  // namespace gemlet::model
