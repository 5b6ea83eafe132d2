#include "model/gemma4_forward_batch.h"

#include <algorithm>
#include <cmath>

#include "model/forward_steps.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/embedding.h"
#include "ops/norm.h"
#include "ops/rope.h"

namespace gemlet::model {

// Mirrors Forward() (gemma4_forward.cc) step for step with T = N rows at per-row positions.
Status ForwardBatch(const Gemma4Model& model, std::span<const int32_t> tokens, std::span<KvStore* const> kvs,
                    ForwardScratch* s, const ForwardOptions& opt, float* logits) {
  const Gemma4Config& c = model.config();
  const int64_t N = static_cast<int64_t>(tokens.size());
  const int64_t D = c.hidden_size, H = c.num_heads, Hkv = c.num_kv_heads, V = c.vocab_size;
  const int64_t L = c.num_layers, P = c.hidden_size_per_layer_input;
  const float eps = static_cast<float>(c.rms_norm_eps);
  GEMLET_CHECK(static_cast<int64_t>(kvs.size()) == N);
  if (N == 0) return Status::Ok();
  GEMLET_CHECK(logits != nullptr);
  for (int64_t i = 0; i < N; ++i) {
    if (tokens[i] < 0 || tokens[i] >= V) {
      return InvalidArgument("token id " + std::to_string(tokens[i]) + " of batch row " + std::to_string(i) +
                             " is outside the vocabulary [0, " + std::to_string(V) + ")");
    }
    for (int64_t j = 0; j < i; ++j) GEMLET_CHECK_MSG(kvs[i] != kvs[j], "a sequence appears twice in a batch");
  }
  int64_t* pos = Sized(s->pos, N);
  for (int64_t i = 0; i < N; ++i) {
    pos[i] = kvs[i]->size();
    RETURN_IF_ERROR(kvs[i]->Reserve(pos[i] + 1).WithContext("batch row " + std::to_string(i)));
  }

  auto matmul = [&](const ops::Weight& w, const float* in, float* out) {
    ops::MatMul(w, in, N, out, opt.mode, opt.pool);
  };

  // ---- Embedding (Gemma4TextScaledWordEmbedding): E[id] · √D ----
  float* x = Sized(s->x, N * D);
  ops::GatherRows(model.token_embd(), tokens.data(), N, x);
  ops::Scale(x, N * D, static_cast<float>(std::sqrt(static_cast<double>(D))));

  // ---- Per-layer inputs (Gemma4TextModel.project_per_layer_inputs) [N, L, P] ----
  const int64_t LP = L * P;
  float* ple = Sized(s->ple, N * LP);
  float* ple_tok = Sized(s->ple_tok, N * LP);
  matmul(model.per_layer_model_proj(), x, ple);
  GatherPerLayerTokenRows(model, tokens, ple_tok);
  CombinePerLayerInputs(model, N, ple, ple_tok, opt.pool);

  // ---- RoPE tables at each row's own position ----
  const int64_t half_s = c.head_dim / 2, half_f = c.global_head_dim / 2;
  ops::RopeAngles(model.rope_sliding(), pos, N, Sized(s->cos_s, N * half_s), Sized(s->sin_s, N * half_s));
  ops::RopeAngles(model.rope_full(), pos, N, Sized(s->cos_f, N * half_f), Sized(s->sin_f, N * half_f));

  if (static_cast<int64_t>(s->k.size()) < L) {
    s->k.resize(L);
    s->v.resize(L);
  }
  float* a = Sized(s->a, N * D);
  float* d = Sized(s->d, N * D);
  kernels::ActBlock* aq = Sized(s->aq, N * D / kQBlock);
  auto add_normed = [&](const std::vector<float>& w, float scale) {  // x = (x + RMSNorm(d; w))·scale
    ops::AddRmsNorm(x, d, w.data(), N, D, eps, scale, opt.pool);
  };

  for (int64_t l = 0; l < L; ++l) {
    const Gemma4Layer& Ly = model.layer(l);
    const int64_t hd = c.head_dim_of(l);
    const bool full = c.is_full(l);
    const float* cs = full ? s->cos_f.data() : s->cos_s.data();
    const float* sn = full ? s->sin_f.data() : s->sin_s.data();

    // ---- attention block (Gemma4TextAttention.forward) ----
    const ops::MatMulInput an = ops::RmsNormQuantize(
        x, Ly.attn_norm.data(), N, D, eps, a, Int8(opt, {&Ly.attn_q, &Ly.attn_k, &Ly.attn_v}) ? aq : nullptr, opt.pool);
    float* q = Sized(s->q, N * H * hd);
    if (c.has_kv(l)) {
      float* k = Sized(s->k[l], N * Hkv * hd);
      float* v = Sized(s->v[l], N * Hkv * hd);
      const ops::MatMulOut qkv[] = {{&Ly.attn_q, q}, {&Ly.attn_k, k}, {&Ly.attn_v, v}};
      ops::MatMulShared(qkv, an, N, opt.mode, opt.pool);  // [N, H, hd], [N, Hkv, hd] ×2
      ops::RmsNorm(k, Ly.k_norm.data(), N * Hkv, hd, eps, k);
      ops::ApplyRope(k, N, Hkv, hd, cs, sn);
      ops::RmsNorm(v, nullptr, N * Hkv, hd, eps, v);
      for (int64_t i = 0; i < N; ++i) {  // the values each sequence's cache will hold (kv_store.h)
        if (kvs[i]->row_type() == TensorType::kF32) continue;
        ops::RoundToKvType(kvs[i]->row_type(), k + i * Hkv * hd, Hkv * hd);
        ops::RoundToKvType(kvs[i]->row_type(), v + i * Hkv * hd, Hkv * hd);
      }
    } else {
      ops::MatMul(Ly.attn_q, an, N, q, opt.mode, opt.pool);  // [N, H, hd]
    }
    ops::RmsNorm(q, Ly.q_norm.data(), N * H, hd, eps, q);
    ops::ApplyRope(q, N, H, hd, cs, sn);
    // Each row attends over its own sequence's past plus its own fresh K/V row.
    const int64_t src = c.kv_source(l);
    const int64_t row = Hkv * hd;
    ops::AttentionShape shape{H, Hkv, hd, full ? 0 : c.sliding_window, 1.0f};
    float* o = Sized(s->o, N * H * hd);
    for (int64_t i = 0; i < N; ++i) {
      ops::KvSegment segs[3];
      int n_segs = kvs[i]->Past(src, segs);
      segs[n_segs++] = ops::KvSegment{s->k[src].data() + i * row, s->v[src].data() + i * row, row, pos[i], 1};
      ops::Attention(shape, q + i * H * hd, pos + i, 1, segs, n_segs, o + i * H * hd, opt.pool);
    }
    matmul(Ly.attn_output, o, d);
    add_normed(Ly.post_attention_norm, 1.0f);

    // ---- MLP block (Gemma4TextMLP) ----
    const int64_t I = c.ffn_dim(l);
    const ops::MatMulInput m = ops::RmsNormQuantize(
        x, Ly.ffn_norm.data(), N, D, eps, a, Int8(opt, {&Ly.ffn_gate, &Ly.ffn_up}) ? aq : nullptr, opt.pool);
    float* gate = Sized(s->gate, N * I);
    float* up = Sized(s->up, N * I);
    ops::MatMulGeGlu(Ly.ffn_gate, Ly.ffn_up, m, N, gate, up, opt.mode, opt.pool);  // gate = GELU(gate)·up
    matmul(Ly.ffn_down, gate, d);
    add_normed(Ly.post_ffw_norm, 1.0f);

    // ---- per-layer-input block, then layer_scalar ----
    float* g = Sized(s->g, N * P);
    ops::MatMulGeluGated(Ly.inp_gate, x, N, ple + l * P, LP, g, opt.mode, opt.pool);
    matmul(Ly.proj, g, d);
    add_normed(Ly.post_norm, Ly.layer_scalar);
  }

  for (int64_t i = 0; i < N; ++i) {
    for (int64_t l = 0; l < L; ++l) {
      if (c.has_kv(l)) {
        const int64_t row = c.kv_dim(l);
        kvs[i]->Commit(l, s->k[l].data() + i * row, s->v[l].data() + i * row, 1);
      }
    }
    kvs[i]->Advance(1);
  }

  // ---- Output head: final norm, tied embedding, softcap ----
  float* head = Sized(s->head, N * D);
  ops::RmsNorm(x, model.output_norm().data(), N, D, eps, head);
  ops::MatMul(model.token_embd(), head, N, logits, opt.mode, opt.pool);
  const float cap = static_cast<float>(c.final_logit_softcapping);
  Elementwise(opt.pool, N * V, [&](int64_t b, int64_t e) { ops::Softcap(logits + b, e - b, cap); });
  return Status::Ok();
}

}  // namespace gemlet::model
