#include "model/gemma4_forward.h"

#include <algorithm>
#include <cmath>

#include "model/forward_steps.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/embedding.h"
#include "ops/norm.h"
#include "ops/rope.h"

namespace gemlet::model {

namespace {

struct Dims {
  int64_t T, D, H, Hkv, V, L, P;
};


}  // namespace

Status Forward(const Gemma4Model& model, std::span<const int32_t> tokens, std::span<const int64_t> logit_rows,
               KvStore* kv, ForwardScratch* s, const ForwardOptions& opt, float* logits) {
  const Gemma4Config& c = model.config();
  const Dims n{static_cast<int64_t>(tokens.size()),
               c.hidden_size,
               c.num_heads,
               c.num_kv_heads,
               c.vocab_size,
               c.num_layers,
               c.hidden_size_per_layer_input};
  const float eps = static_cast<float>(c.rms_norm_eps);
  const int64_t T = n.T, D = n.D;
  if (T == 0) return Status::Ok();
  for (int64_t t = 0; t < T; ++t) {
    if (tokens[t] < 0 || tokens[t] >= n.V) {
      return InvalidArgument("token id " + std::to_string(tokens[t]) + " at chunk position " +
                             std::to_string(t) + " is outside the vocabulary [0, " + std::to_string(n.V) +
                             ")");
    }
  }
  for (size_t i = 0; i < logit_rows.size(); ++i) {
    GEMLET_CHECK(logit_rows[i] >= 0 && logit_rows[i] < T && (i == 0 || logit_rows[i] > logit_rows[i - 1]));
  }
  const int64_t pos0 = kv->size();
  RETURN_IF_ERROR(kv->Reserve(pos0 + T));

  // ---- Embedding (Gemma4TextScaledWordEmbedding): E[id] · √D, √D exact in float. ----
  float* x = Sized(s->x, T * D);
  ops::GatherRows(model.token_embd(), tokens.data(), T, x);
  ops::Scale(x, T * D, static_cast<float>(std::sqrt(static_cast<double>(D))));

  // ---- Per-layer inputs (Gemma4TextModel.get_per_layer_inputs / project_per_layer_inputs) ----
  // pl[t, l] = (RMSNorm((W_plm · e_t)·D^−½ [l]) + E_ple[id_t][l]·√P) · 2^−½      [T, L, P]
  const int64_t LP = n.L * n.P;
  float* ple = Sized(s->ple, T * LP);
  float* ple_tok = Sized(s->ple_tok, T * LP);
  ops::MatMul(model.per_layer_model_proj(), x, T, ple, opt.mode, opt.pool);
  GatherPerLayerTokenRows(model, tokens, ple_tok);
  CombinePerLayerInputs(model, T, ple, ple_tok, opt.pool);

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
  kernels::ActBlock* aq = Sized(s->aq, T * D / kQBlock);

  // Rows still computed ("active"): all T rows while layers write K/V; from the first
  // KV-shared layer on only the rows whose logits are wanted, since those layers write
  // nothing another position reads (spec §5.3). Per-row math is independent of the row set,
  // so the logits are the same either way.
  int64_t A = T;
  std::vector<int64_t> out_rows(logit_rows.begin(), logit_rows.end());
  for (int64_t l = 0; l < n.L; ++l) {
    if (opt.skip_shared_rows && l == c.first_kv_shared() && static_cast<int64_t>(out_rows.size()) < A) {
      A = static_cast<int64_t>(out_rows.size());
      if (A == 0) break;  // no logits wanted from this chunk: the rest of the stack is unused
      for (int64_t i = 0; i < A; ++i) {
        const int64_t r = out_rows[i];
        std::copy(x + r * D, x + (r + 1) * D, x + i * D);
        std::copy(ple + r * LP, ple + (r + 1) * LP, ple + i * LP);
        pos[i] = pos[r];
        out_rows[i] = i;
      }
      ops::RopeAngles(model.rope_sliding(), pos, A, s->cos_s.data(), s->sin_s.data());
      ops::RopeAngles(model.rope_full(), pos, A, s->cos_f.data(), s->sin_f.data());
    }
    // Gemma4TextDecoderLayer.forward
    const Gemma4Layer& L = model.layer(l);
    const int64_t hd = c.head_dim_of(l);
    const bool full = c.is_full(l);
    const float* cs = full ? s->cos_f.data() : s->cos_s.data();
    const float* sn = full ? s->sin_f.data() : s->sin_s.data();
    auto matmul = [&](const ops::Weight& w, const float* in, float* out) {
      ops::MatMul(w, in, A, out, opt.mode, opt.pool);
    };

    // ---- attention block (Gemma4TextAttention.forward) ----
    // The pre-norm and, in the fast path, the int8 blocks q, k and v all read (one pass per row).
    const ops::MatMulInput an = ops::RmsNormQuantize(
        x, L.attn_norm.data(), A, D, eps, a, Int8(opt, {&L.attn_q, &L.attn_k, &L.attn_v}) ? aq : nullptr, opt.pool);
    float* q = Sized(s->q, A * n.H * hd);
    if (c.has_kv(l)) {  // (all T rows are active here)
      float* k = Sized(s->k[l], T * n.Hkv * hd);
      float* v = Sized(s->v[l], T * n.Hkv * hd);
      const ops::MatMulOut qkv[] = {{&L.attn_q, q}, {&L.attn_k, k}, {&L.attn_v, v}};
      ops::MatMulShared(qkv, an, A, opt.mode, opt.pool);  // [T, H, hd], [T, Hkv, hd] ×2
      ops::RmsNorm(k, L.k_norm.data(), T * n.Hkv, hd, eps, k);
      ops::ApplyRope(k, T, n.Hkv, hd, cs, sn);
      ops::RmsNorm(v, nullptr, T * n.Hkv, hd, eps, v);  // v_norm: no weight, no RoPE
      if (kv->row_type() != TensorType::kF32) {  // the values the cache will hold (kv_store.h)
        ops::RoundToKvType(kv->row_type(), k, T * n.Hkv * hd);
        ops::RoundToKvType(kv->row_type(), v, T * n.Hkv * hd);
      }
    } else {
      ops::MatMul(L.attn_q, an, A, q, opt.mode, opt.pool);  // [A, H, hd]
    }
    ops::RmsNorm(q, L.q_norm.data(), A * n.H, hd, eps, q);  // q_norm per head
    ops::ApplyRope(q, A, n.H, hd, cs, sn);
    // A KV-shared layer attends with its own queries and its own mask type over the K/V its
    // producer wrote in this same step (spec §5.2): the producer's past and all T fresh rows.
    const int64_t src = c.kv_source(l);
    ops::KvSegment segs[3];
    int n_segs = kv->Past(src, segs);
    segs[n_segs++] = ops::KvSegment{s->k[src].data(), s->v[src].data(), n.Hkv * hd, pos0, T};
    ops::AttentionShape shape{n.H, n.Hkv, hd, full ? 0 : c.sliding_window, 1.0f};  // scaling = 1.0
    float* o = Sized(s->o, A * n.H * hd);
    ops::Attention(shape, q, pos, A, segs, n_segs, o, opt.pool);
    matmul(L.attn_output, o, d);
    ops::AddRmsNorm(x, d, L.post_attention_norm.data(), A, D, eps, 1.0f, opt.pool);  // x += RMSNorm(d)

    // ---- MLP block (Gemma4TextMLP: down(gelu_tanh(gate(m)) ⊙ up(m))) ----
    const int64_t I = c.ffn_dim(l);
    const ops::MatMulInput m = ops::RmsNormQuantize(
        x, L.ffn_norm.data(), A, D, eps, a, Int8(opt, {&L.ffn_gate, &L.ffn_up}) ? aq : nullptr, opt.pool);
    float* gate = Sized(s->gate, A * I);
    float* up = Sized(s->up, A * I);
    ops::MatMulGeGlu(L.ffn_gate, L.ffn_up, m, A, gate, up, opt.mode, opt.pool);  // gate = GELU(gate)·up
    matmul(L.ffn_down, gate, d);
    ops::AddRmsNorm(x, d, L.post_ffw_norm.data(), A, D, eps, 1.0f, opt.pool);

    // ---- per-layer-input block, then layer_scalar on the whole residual stream:
    //      x = (x + RMSNorm(W_plp · (gelu(W_plg · x) ⊙ pl[:, l]))) · layer_scalar ----
    float* g = Sized(s->g, A * n.P);
    ops::MatMulGeluGated(L.inp_gate, x, A, ple + l * n.P, LP, g, opt.mode, opt.pool);
    matmul(L.proj, g, d);
    ops::AddRmsNorm(x, d, L.post_norm.data(), A, D, eps, L.layer_scalar, opt.pool);
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
    ops::RmsNorm(x + out_rows[i] * D, model.output_norm().data(), 1, D, eps, head + i * D);
  }
  ops::MatMul(model.token_embd(), head, R, logits, opt.mode, opt.pool);
  const float cap = static_cast<float>(c.final_logit_softcapping);
  Elementwise(opt.pool, R * n.V, [&](int64_t b, int64_t e) { ops::Softcap(logits + b, e - b, cap); });
  return Status::Ok();
}

}  // namespace gemlet::model
