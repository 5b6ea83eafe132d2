#include "model/gemma4_forward.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/forward_steps.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/embedding.h"
#include "ops/norm.h"
#include "ops/rope.h"

namespace gemlet::model {

namespace {

// The batch's shape against the model: programmer invariants abort, the outside world's
// errors (token ids) are returned.
Status CheckBatch(const Gemma4Config& c, const Batch& b) {
  const int64_t R = static_cast<int64_t>(b.tokens.size());
  int64_t rows = 0;
  for (size_t j = 0; j < b.seqs.size(); ++j) {
    GEMLET_CHECK_MSG(b.seqs[j].kv != nullptr && b.seqs[j].rows >= 1, "a batch sequence without a store or rows");
    for (size_t i = 0; i < j; ++i) GEMLET_CHECK_MSG(b.seqs[i].kv != b.seqs[j].kv, "a sequence appears twice in a batch");
    rows += b.seqs[j].rows;
  }
  GEMLET_CHECK_MSG(rows == R, "the batch's sequences do not add up to its rows");
  for (size_t i = 0; i < b.out_rows.size(); ++i) {
    GEMLET_CHECK(b.out_rows[i] >= 0 && b.out_rows[i] < R && (i == 0 || b.out_rows[i] > b.out_rows[i - 1]));
  }
  for (size_t i = 0; i < b.embed_rows.size(); ++i) {
    GEMLET_CHECK(b.embed_rows[i] >= 0 && b.embed_rows[i] < R && (i == 0 || b.embed_rows[i] > b.embed_rows[i - 1]));
  }
  GEMLET_CHECK(b.embed_rows.empty() || b.embeddings != nullptr);
  const bool one = b.seqs.size() == 1;
  for (int64_t r = 0; r < R; ++r) {
    if (b.tokens[r] < 0 || b.tokens[r] >= c.vocab_size) {
      return InvalidArgument("token id " + std::to_string(b.tokens[r]) + (one ? " at chunk position " : " of batch row ") +
                             std::to_string(r) + " is outside the vocabulary [0, " + std::to_string(c.vocab_size) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace

Status Forward(const Gemma4Model& model, const Batch& batch, ForwardScratch* s, const ForwardOptions& opt) {
  const Gemma4Config& c = model.config();
  const int64_t R = static_cast<int64_t>(batch.tokens.size());
  const int64_t S = static_cast<int64_t>(batch.seqs.size());
  const int64_t D = c.hidden_size, H = c.num_heads, Hkv = c.num_kv_heads, V = c.vocab_size;
  const int64_t L = c.num_layers, P = c.hidden_size_per_layer_input, LP = L * P;
  const float eps = static_cast<float>(c.rms_norm_eps);
  RETURN_IF_ERROR(CheckBatch(c, batch));
  if (R == 0) return Status::Ok();

  // Positions, and room in every store (nothing is computed if one is full).
  int64_t* pos = Sized(s->pos, R);
  int64_t* active0 = Sized(s->active0, S);  // first active row of each sequence
  int64_t* active_n = Sized(s->active_n, S);
  for (int64_t j = 0, r0 = 0; j < S; r0 += batch.seqs[j].rows, ++j) {
    KvStore* kv = batch.seqs[j].kv;
    const int64_t n = batch.seqs[j].rows, p0 = kv->size();
    for (int64_t t = 0; t < n; ++t) pos[r0 + t] = p0 + t;
    Status st = kv->Reserve(p0 + n);
    if (!st.ok()) return S == 1 ? st : st.WithContext("batch sequence " + std::to_string(j));
    active0[j] = r0;
    active_n[j] = n;
  }

  // ---- Embedding (Gemma4TextScaledWordEmbedding): E[id] · √D, √D exact in float; given
  //      input embeddings replace their rows (Gemma4Model.forward's masked_scatter). ----
  float* x = Sized(s->x, R * D);
  ops::GatherRows(model.token_embd(), batch.tokens.data(), R, x);
  ops::Scale(x, R * D, static_cast<float>(std::sqrt(static_cast<double>(D))));
  for (size_t i = 0; i < batch.embed_rows.size(); ++i) {
    std::copy(batch.embeddings + i * D, batch.embeddings + (i + 1) * D, x + batch.embed_rows[i] * D);
  }

  // ---- Per-layer inputs (Gemma4TextModel.get_per_layer_inputs / project_per_layer_inputs) ----
  // pl[r, l] = (RMSNorm((W_plm · e_r)·D^−½ [l]) + E_ple[id_r][l]·√P) · 2^−½      [R, L, P]
  // The table's rows are gathered and combined a slice of rows at a time (each row alone), so
  // they take [kPleSlice, L·P] of scratch, not [R, L·P] (E2B at R = 512: 0.6 MiB, not 17.5).
  constexpr int64_t kPleSlice = 32;
  float* ple = Sized(s->ple, R * LP);
  float* ple_tok = Sized(s->ple_tok, std::min(R, kPleSlice) * LP);
  ops::MatMul(model.per_layer_model_proj(), x, R, ple, opt.mode, opt.pool);
  for (int64_t r0 = 0; r0 < R; r0 += kPleSlice) {
    const int64_t n = std::min(kPleSlice, R - r0);
    GatherPerLayerTokenRows(model, batch.tokens.subspan(r0, n), ple_tok);
    CombinePerLayerInputs(model, n, ple + r0 * LP, ple_tok, opt.pool);
  }

  // ---- RoPE tables at each row's position, one per layer type (§2.5) ----
  const int64_t half_s = c.head_dim / 2, half_f = c.global_head_dim / 2;
  ops::RopeAngles(model.rope_sliding(), pos, R, Sized(s->cos_s, R * half_s), Sized(s->sin_s, R * half_s));
  ops::RopeAngles(model.rope_full(), pos, R, Sized(s->cos_f, R * half_f), Sized(s->sin_f, R * half_f));

  if (static_cast<int64_t>(s->k.size()) < L) {
    s->k.resize(L);
    s->v.resize(L);
    s->k8.resize(L);
    s->v8.resize(L);
  }
  float* a = Sized(s->a, R * D);
  float* d = Sized(s->d, R * D);
  kernels::ActBlock* aq = Sized(s->aq, R * D / kQBlock);

  // The active rows: all R while layers write K/V; from the first KV-shared layer on only the
  // rows with outputs, since those layers write nothing another position reads (spec §5.3).
  // Row math is independent of the row set, so the outputs are the same either way.
  const int64_t n_out = static_cast<int64_t>(batch.out_rows.size());
  int64_t* out = Sized(s->out, n_out);  // active row of each output
  std::copy(batch.out_rows.begin(), batch.out_rows.end(), out);
  int64_t A = R;
  for (int64_t l = 0; l < L; ++l) {
    if (opt.skip_shared_rows && l == c.first_kv_shared() && n_out < A) {
      for (int64_t j = 0, i = 0, r0 = 0; j < S; r0 += batch.seqs[j].rows, ++j) {
        active0[j] = i;
        while (i < n_out && out[i] < r0 + batch.seqs[j].rows) ++i;
        active_n[j] = i - active0[j];
      }
      A = n_out;
      if (A == 0) break;  // no outputs from this batch: the rest of the stack is unused
      for (int64_t i = 0; i < A; ++i) {  // compact (out[i] ≥ i, so in place)
        const int64_t r = out[i];
        std::copy(x + r * D, x + (r + 1) * D, x + i * D);
        std::copy(ple + r * LP, ple + (r + 1) * LP, ple + i * LP);
        pos[i] = pos[r];
        out[i] = i;
      }
      ops::RopeAngles(model.rope_sliding(), pos, A, s->cos_s.data(), s->sin_s.data());
      ops::RopeAngles(model.rope_full(), pos, A, s->cos_f.data(), s->sin_f.data());
    }
    // Gemma4TextDecoderLayer.forward
    const Gemma4Layer& Ly = model.layer(l);
    const int64_t hd = c.head_dim_of(l);
    const bool full = c.is_full(l);
    const float* cs = full ? s->cos_f.data() : s->cos_s.data();
    const float* sn = full ? s->sin_f.data() : s->sin_s.data();
    auto matmul = [&](const ops::Weight& w, const float* in, float* o) { ops::MatMul(w, in, A, o, opt.mode, opt.pool); };

    // ---- attention block (Gemma4TextAttention.forward) ----
    // The pre-norm and, in the fast path, the int8 blocks q, k and v all read (one pass per row).
    const ops::MatMulInput an = ops::RmsNormQuantize(
        x, Ly.attn_norm.data(), A, D, eps, a, Int8(opt, {&Ly.attn_q, &Ly.attn_k, &Ly.attn_v}) ? aq : nullptr, opt.pool);
    float* q = Sized(s->q, A * H * hd);
    const int64_t row = Hkv * hd;
    // The fresh K/V of a layer that KV-shared layers read later in the step stay until the
    // step's end (s->k[l]); any other layer's go to its store right after its attention, so
    // they share one buffer (s->k_fresh).
    const bool keep = c.read_by_shared(l);
    if (c.has_kv(l)) {  // (all R rows are active here)
      float* k = Sized(keep ? s->k[l] : s->k_fresh, R * row);
      float* v = Sized(keep ? s->v[l] : s->v_fresh, R * row);
      const ops::MatMulOut qkv[] = {{&Ly.attn_q, q}, {&Ly.attn_k, k}, {&Ly.attn_v, v}};
      ops::MatMulShared(qkv, an, A, opt.mode, opt.pool);  // [R, H, hd], [R, Hkv, hd] ×2
      ops::RmsNorm(k, Ly.k_norm.data(), R * Hkv, hd, eps, k);
      ops::ApplyRope(k, R, Hkv, hd, cs, sn);
      ops::RmsNorm(v, nullptr, R * Hkv, hd, eps, v);  // v_norm: no weight, no RoPE
      BlockQ8* k8 = nullptr;  // [R, row / 32], sized on the first q8 store's rows
      BlockQ8* v8 = nullptr;
      for (int64_t j = 0, r0 = 0; j < S; r0 += batch.seqs[j].rows, ++j) {  // what each store will hold
        const TensorType type = batch.seqs[j].kv->row_type(l);               // (kv_store.h)
        const int64_t n = batch.seqs[j].rows * row;
        if (type == TensorType::kF16) {
          ops::RoundToF16(k + r0 * row, n);
          ops::RoundToF16(v + r0 * row, n);
        } else if (type == TensorType::kQ8) {
          // The blocks Commit will store (it quantizes these rows alike): attention scores q8
          // keys with int8 dot products, so a key must be attended over as those blocks,
          // whether it comes from this chunk or from the cache.
          if (k8 == nullptr) {
            k8 = Sized(keep ? s->k8[l] : s->k8_fresh, R * row / kQBlock);
            v8 = Sized(keep ? s->v8[l] : s->v8_fresh, R * row / kQBlock);
          }
          ops::QuantizeKvRowQ8(k + r0 * row, k8 + r0 * row / kQBlock, n);
          ops::QuantizeKvRowQ8(v + r0 * row, v8 + r0 * row / kQBlock, n);
        }
      }
    } else {
      ops::MatMul(Ly.attn_q, an, A, q, opt.mode, opt.pool);  // [A, H, hd]
    }
    ops::RmsNorm(q, Ly.q_norm.data(), A * H, hd, eps, q);  // q_norm per head
    ops::ApplyRope(q, A, H, hd, cs, sn);
    // Each sequence's active rows attend over its store's past and its own fresh rows. A
    // KV-shared layer attends with its own queries and mask type over the K/V its producer
    // wrote in this same step (spec §5.2).
    const int64_t src = c.kv_source(l);
    const bool src_kept = src != l || keep;
    const float* k_src = (src_kept ? s->k[src] : s->k_fresh).data();
    const float* v_src = (src_kept ? s->v[src] : s->v_fresh).data();
    const BlockQ8* k8_src = (src_kept ? s->k8[src] : s->k8_fresh).data();
    const BlockQ8* v8_src = (src_kept ? s->v8[src] : s->v8_fresh).data();
    const ops::AttentionShape shape{H, Hkv, hd, full ? 0 : c.sliding_window, 1.0f};  // scaling = 1.0
    float* o = q;  // the attention's output replaces the queries (ops/attention.h)
    for (int64_t j = 0, r0 = 0; j < S; r0 += batch.seqs[j].rows, ++j) {
      if (active_n[j] == 0) continue;
      KvStore* kv = batch.seqs[j].kv;
      ops::KvSegment segs[3];
      int n_segs = kv->Past(src, segs);
      if (kv->row_type(src) == TensorType::kQ8) {
        segs[n_segs++] = ops::KvSegment{k8_src + r0 * row / kQBlock, v8_src + r0 * row / kQBlock,
                                        row, kv->size(), batch.seqs[j].rows, TensorType::kQ8};
      } else {
        segs[n_segs++] = ops::KvSegment{k_src + r0 * row, v_src + r0 * row, row, kv->size(), batch.seqs[j].rows};
      }
      ops::Attention(shape, q + active0[j] * H * hd, pos + active0[j], active_n[j], segs, n_segs,
                     o + active0[j] * H * hd, opt.pool);
    }
    if (c.has_kv(l) && !keep) {  // no later layer of this step reads layer l's past: store its rows
      for (int64_t j = 0, r0 = 0; j < S; r0 += batch.seqs[j].rows, ++j) {
        batch.seqs[j].kv->Commit(l, k_src + r0 * row, v_src + r0 * row, batch.seqs[j].rows);
      }
    }
    matmul(Ly.attn_output, o, d);
    ops::AddRmsNorm(x, d, Ly.post_attention_norm.data(), A, D, eps, 1.0f, opt.pool);  // x += RMSNorm(d)

    // ---- MLP block (Gemma4TextMLP: down(gelu_tanh(gate(m)) ⊙ up(m))) ----
    const int64_t I = c.ffn_dim(l);
    const ops::MatMulInput m = ops::RmsNormQuantize(
        x, Ly.ffn_norm.data(), A, D, eps, a, Int8(opt, {&Ly.ffn_gate, &Ly.ffn_up}) ? aq : nullptr, opt.pool);
    float* gate = Sized(s->gate, A * I);
    ops::MatMulGeGlu(Ly.ffn_gate, Ly.ffn_up, m, A, gate, opt.mode, opt.pool);  // gate = GELU(gate)·up
    matmul(Ly.ffn_down, gate, d);
    ops::AddRmsNorm(x, d, Ly.post_ffw_norm.data(), A, D, eps, 1.0f, opt.pool);

    // ---- per-layer-input block, then layer_scalar on the whole residual stream:
    //      x = (x + RMSNorm(W_plp · (gelu(W_plg · x) ⊙ pl[:, l]))) · layer_scalar ----
    float* g = Sized(s->g, A * P);
    ops::MatMulGeluGated(Ly.inp_gate, x, A, ple + l * P, LP, g, opt.mode, opt.pool);
    matmul(Ly.proj, g, d);
    ops::AddRmsNorm(x, d, Ly.post_norm.data(), A, D, eps, Ly.layer_scalar, opt.pool);
  }

  // The step is complete: hand each sequence's fresh rows of the layers KV-shared layers read
  // to its store (the other cached layers' went right after their attention).
  for (int64_t j = 0, r0 = 0; j < S; r0 += batch.seqs[j].rows, ++j) {
    KvStore* kv = batch.seqs[j].kv;
    for (int64_t l = 0; l < L; ++l) {
      if (!c.read_by_shared(l)) continue;
      const int64_t row = c.kv_dim(l);
      kv->Commit(l, s->k[l].data() + r0 * row, s->v[l].data() + r0 * row, batch.seqs[j].rows);
    }
    kv->Advance(batch.seqs[j].rows);
  }

  // ---- Output head: final norm, tied embedding, softcap (only the rows asked for) ----
  if (n_out == 0 || (batch.logits == nullptr && batch.hidden == nullptr)) return Status::Ok();
  float* head = Sized(s->head, n_out * D);
  for (int64_t i = 0; i < n_out; ++i) {
    ops::RmsNorm(x + out[i] * D, model.output_norm().data(), 1, D, eps, head + i * D);
  }
  if (batch.hidden != nullptr) std::copy(head, head + n_out * D, batch.hidden);
  if (batch.logits == nullptr) return Status::Ok();
  ops::MatMul(model.token_embd(), head, n_out, batch.logits, opt.mode, opt.pool);
  const float cap = static_cast<float>(c.final_logit_softcapping);
  Elementwise(opt.pool, n_out * V, [&](int64_t b, int64_t e) { ops::Softcap(batch.logits + b, e - b, cap); });
  return Status::Ok();
}

Status Forward(const Gemma4Model& model, std::span<const int32_t> tokens, std::span<const int64_t> logit_rows,
               KvStore* kv, ForwardScratch* scratch, const ForwardOptions& options, float* logits) {
  if (tokens.empty()) return Status::Ok();
  const BatchSequence seq{kv, static_cast<int64_t>(tokens.size())};
  Batch b;
  b.tokens = tokens;
  b.seqs = std::span<const BatchSequence>(&seq, 1);
  b.out_rows = logit_rows;
  b.logits = logits;
  GEMLET_CHECK(logit_rows.empty() || logits != nullptr);
  return Forward(model, b, scratch, options);
}

}  // namespace gemlet::model
