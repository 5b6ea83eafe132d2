#include "model/gemma4_forward.h"

#include <algorithm>
#include <cmath>

#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/embedding.h"
#include "ops/norm.h"
#include "ops/rope.h"

namespace gemlet::model {

namespace {

template <typename T>
T* Sized(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(n);
  return v.data();
}

struct Dims {
  int64_t T, D, H, Hkv, V, L, P;
};

// x [T, D] += RMSNorm(d [T, D]; w): the post-norm residual add of every block.
void AddNormed(float* x, float* d, const std::vector<float>& w, const Dims& n, float eps) {
  ops::RmsNorm(d, w.data(), n.T, n.D, eps, d);
  ops::AddInPlace(x, d, n.T * n.D);
}

}  // namespace

Status Forward(const Gemma4Model& model, std::span<const int32_t> tokens, std::span<const int64_t> logit_rows,
               KvStore* kv, ForwardScratch* s, const ForwardOptions& opt, float* logits) {
  const Gemma4Config& c = model.config();
  const Dims n{static_cast<int64_t>(tokens.size()), c.hidden_size, c.num_heads, c.num_kv_heads, c.vocab_size,
               c.num_layers, c.hidden_size_per_layer_input};
  const float eps = static_cast<float>(c.rms_norm_eps);
  const int64_t T = n.T, D = n.D;
  if (T == 0) return Status::Ok();
  for (int64_t t = 0; t < T; ++t) {
    if (tokens[t] < 0 || tokens[t] >= n.V) {
      return InvalidArgument("token id " + std::to_string(tokens[t]) + " at chunk position " + std::to_string(t) +
                             " is outside the vocabulary [0, " + std::to_string(n.V) + ")");
    }
  }
  for (size_t i = 0; i < logit_rows.size(); ++i) {
    GEMLET_CHECK(logit_rows[i] >= 0 && logit_rows[i] < T && (i == 0 || logit_rows[i] > logit_rows[i - 1]));
  }
  const int64_t pos0 = kv->size();
  RETURN_IF_ERROR(kv->Reserve(pos0 + T));

  auto matmul = [&](const ops::Weight& w, const float* in, float* out) {
    ops::MatMul(w, in, T, out, opt.mode, opt.pool);
  };

  // ---- Embedding (Gemma4TextScaledWordEmbedding): E[id] · √D, √D exact in float. ----
  float* x = Sized(s->x, T * D);
  ops::GatherRows(model.token_embd(), tokens.data(), T, x);
  ops::Scale(x, T * D, static_cast<float>(std::sqrt(static_cast<double>(D))));

  // ---- Per-layer inputs (Gemma4TextModel.get_per_layer_inputs / project_per_layer_inputs) ----
  // pl[t, l] = (RMSNorm((W_plm · e_t)·D^−½ [l]) + E_ple[id_t][l]·√P) · 2^−½      [T, L, P]
  const int64_t LP = n.L * n.P;
  float* ple = Sized(s->ple, T * LP);
  float* ple_tok = Sized(s->ple_tok, T * LP);
  matmul(model.per_layer_model_proj(), x, ple);
  ops::Scale(ple, T * LP, static_cast<float>(1.0 / std::sqrt(static_cast<double>(D))));
  ops::RmsNorm(ple, model.per_layer_proj_norm().data(), T * n.L, n.P, eps, ple);
  ops::GatherRows(model.per_layer_token_embd(), tokens.data(), T, ple_tok);
  ops::Scale(ple_tok, T * LP, static_cast<float>(std::sqrt(static_cast<double>(n.P))));
  const float inv_sqrt2 = static_cast<float>(1.0 / std::sqrt(2.0));
  for (int64_t i = 0; i < T * LP; ++i) ple[i] = (ple[i] + ple_tok[i]) * inv_sqrt2;

  // ---- RoPE tables for this chunk's positions, one per layer type (§2.5) ----
  int64_t* pos = Sized(s->pos, T);
  for (int64_t t = 0; t < T; ++t) pos[t] = pos0 + t;
  const int64_t half_s = c.head_dim / 2, half_f = c.global_head_dim / 2;
  ops::RopeAngles(model.rope_sliding(), pos, T, Sized(s->cos_s, T * half_s), Sized(s->sin_s, T * half_s));
  ops::RopeAngles(model.rope_full(), pos, T, Sized(s->cos_f, T * half_f), Sized(s->sin_f, T * half_f));

  if (static_cast<int64_t>(s->k.size()) < n.L) {
    s->k.resize(n.L);
    s->v.resize(n.L);
  }
  float* a = Sized(s->a, T * D);
  float* d = Sized(s->d, T * D);

  for (int64_t l = 0; l < n.L; ++l) {
    // Gemma4TextDecoderLayer.forward
    const Gemma4Layer& L = model.layer(l);
    const int64_t hd = c.head_dim_of(l);
    const bool full = c.is_full(l);
    const float* cs = full ? s->cos_f.data() : s->cos_s.data();
    const float* sn = full ? s->sin_f.data() : s->sin_s.data();

    // ---- attention block (Gemma4TextAttention.forward) ----
    ops::RmsNorm(x, L.attn_norm.data(), T, D, eps, a);
    float* q = Sized(s->q, T * n.H * hd);
    matmul(L.attn_q, a, q);                                    // [T, H, hd]
    ops::RmsNorm(q, L.q_norm.data(), T * n.H, hd, eps, q);     // q_norm per head
    ops::ApplyRope(q, T, n.H, hd, cs, sn);
    if (c.has_kv(l)) {
      float* k = Sized(s->k[l], T * n.Hkv * hd);
      float* v = Sized(s->v[l], T * n.Hkv * hd);
      matmul(L.attn_k, a, k);                                  // [T, Hkv, hd]
      ops::RmsNorm(k, L.k_norm.data(), T * n.Hkv, hd, eps, k);
      ops::ApplyRope(k, T, n.Hkv, hd, cs, sn);
      matmul(L.attn_v, a, v);
      ops::RmsNorm(v, nullptr, T * n.Hkv, hd, eps, v);         // v_norm: no weight, no RoPE
    }
    // A KV-shared layer attends with its own queries and its own mask type over the K/V its
    // producer wrote in this same step (spec §5.2).
    const int64_t src = c.kv_source(l);
    ops::KvSegment segs[3];
    int n_segs = kv->Past(src, segs);
    segs[n_segs++] = ops::KvSegment{s->k[src].data(), s->v[src].data(), n.Hkv * hd, pos0, T};
    ops::AttentionShape shape{n.H, n.Hkv, hd, full ? 0 : c.sliding_window, 1.0f};  // scaling = 1.0
    float* o = Sized(s->o, T * n.H * hd);
    ops::Attention(shape, q, pos, T, segs, n_segs, o, opt.pool);
    matmul(L.attn_output, o, d);
    AddNormed(x, d, L.post_attention_norm, n, eps);

    // ---- MLP block (Gemma4TextMLP: down(gelu_tanh(gate(m)) ⊙ up(m))) ----
    const int64_t I = c.ffn_dim(l);
    ops::RmsNorm(x, L.ffn_norm.data(), T, D, eps, a);
    float* gate = Sized(s->gate, T * I);
    float* up = Sized(s->up, T * I);
    matmul(L.ffn_gate, a, gate);
    matmul(L.ffn_up, a, up);
    ops::GeGlu(gate, up, T * I, gate);
    matmul(L.ffn_down, gate, d);
    AddNormed(x, d, L.post_ffw_norm, n, eps);

    // ---- per-layer-input block: x += RMSNorm(W_plp · (gelu(W_plg · x) ⊙ pl[:, l])) ----
    float* g = Sized(s->g, T * n.P);
    matmul(L.inp_gate, x, g);
    ops::GeluTanhInPlace(g, T * n.P);
    for (int64_t t = 0; t < T; ++t) {
      const float* pl = ple + t * LP + l * n.P;
      for (int64_t i = 0; i < n.P; ++i) g[t * n.P + i] *= pl[i];
    }
    matmul(L.proj, g, d);
    AddNormed(x, d, L.post_norm, n, eps);

    // ---- layer_scalar on the whole residual stream ----
    ops::Scale(x, T * D, L.layer_scalar);
  }

  // The step is complete: hand each cached layer's fresh rows to the store.
  for (int64_t l = 0; l < n.L; ++l) {
    if (c.has_kv(l)) kv->Commit(l, s->k[l].data(), s->v[l].data(), T);
  }
  kv->Advance(T);

  // ---- Output head: final norm, tied embedding, softcap (only the rows asked for) ----
  const int64_t R = static_cast<int64_t>(logit_rows.size());
  if (R == 0) return Status::Ok();
  GEMLET_CHECK(logits != nullptr);
  float* head = Sized(s->head, R * D);
  for (int64_t i = 0; i < R; ++i) {
    ops::RmsNorm(x + logit_rows[i] * D, model.output_norm().data(), 1, D, eps, head + i * D);
  }
  ops::MatMul(model.token_embd(), head, R, logits, opt.mode, opt.pool);
  ops::Softcap(logits, R * n.V, static_cast<float>(c.final_logit_softcapping));
  return Status::Ok();
}

}  // namespace gemlet::model
