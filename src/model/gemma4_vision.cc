#include "model/gemma4_vision.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "ops/activation.h"
#include "ops/dense_attention.h"
#include "ops/norm.h"
#include "ops/rope.h"
#include "model/tensor_binding.h"

namespace gemlet::model {

namespace {

std::string ShapeString(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// A block's post-norm residual add of a clipped linear's output d [N, D]: d clamped, then
// ops::AddRmsNorm, a block of rows at a time while they are in cache.
void ClampAddRmsNorm(ops::ClampRange out, float* x, float* d, const float* w, int64_t N, int64_t D, float eps,
                     ThreadPool* pool) {
  ParallelForOrInline(pool, N, [&](int64_t t0, int64_t t1) {
    ops::Clamp(d + t0 * D, (t1 - t0) * D, out, d + t0 * D);
    ops::AddRmsNorm(x + t0 * D, d + t0 * D, w, t1 - t0, D, eps, 1.0f, nullptr);
  }, 16);
}

}  // namespace

bool Gemma4Vision::Present(const GemletFile& file) {
  const auto& m = file.metadata();
  return m.is_object() && m.contains("vision") && m["vision"].is_object();
}

Result<std::unique_ptr<Gemma4Vision>> Gemma4Vision::Bind(const GemletFile& file) {
  if (!Present(file)) {
    return NotFound(file.path() + ": the model has no vision tower (convert an HF checkpoint with a vision_config)");
  }
  auto cfg = Gemma4VisionConfig::FromJson(file.metadata()["vision"]);
  if (!cfg.ok()) return cfg.status().WithContext(file.path());
  std::unique_ptr<Gemma4Vision> m(new Gemma4Vision());
  m->cfg_ = *cfg;
  m->layers_.resize(cfg->num_layers);
  for (const TensorSpec& spec : ExpectedVisionTensors(*cfg)) {
    const TensorView* t = file.Find(spec.name);
    if (!t && spec.cls == TensorClass::kScalar) continue;  // an absent clip bound: unbounded
    if (!t) return NotFound(file.path() + ": vision tensor '" + spec.name + "' is missing");
    if (t->shape != spec.shape) {
      return InvalidArgument(file.path() + ": vision tensor '" + spec.name + "' has shape " + ShapeString(t->shape) +
                             ", the config needs " + ShapeString(spec.shape));
    }
    RETURN_IF_ERROR(CheckLayout(file, *t, spec));
    const std::string& n = spec.name;
    if (spec.layer < 0) {
      if (n == "v.patch_embd") {
        m->patch_embd_ = ToWeight(*t);
      } else if (n == "v.position_embd") {
        m->pos_table_ = ToWeight(*t);
        m->pos_table_.rows = 2 * cfg->position_embedding_size;
        m->pos_table_.row_bytes = t->nbytes / static_cast<uint64_t>(m->pos_table_.rows);
      } else if (n == "mm.input_projection") {
        m->proj_ = ToWeight(*t);
      } else {
        return Internal("vision binder does not know tensor '" + n + "'");
      }
      continue;
    }
    Gemma4VisionLayer& L = m->layers_[spec.layer];
    std::string suffix = n.substr(n.find('.', 6) + 1);  // after "v.blk.N."
    std::string bound;
    if (const size_t dot = suffix.find('.'); dot != std::string::npos) {
      bound = suffix.substr(dot + 1);
      suffix = suffix.substr(0, dot);
    }
    static const std::pair<const char*, ClippedLinear Gemma4VisionLayer::*> kLinears[] = {
        {"attn_q", &Gemma4VisionLayer::q},      {"attn_k", &Gemma4VisionLayer::k},
        {"attn_v", &Gemma4VisionLayer::v},      {"attn_out", &Gemma4VisionLayer::o},
        {"ffn_gate", &Gemma4VisionLayer::gate}, {"ffn_up", &Gemma4VisionLayer::up},
        {"ffn_down", &Gemma4VisionLayer::down}};
    static const std::pair<const char*, std::vector<float> Gemma4VisionLayer::*> kNorms[] = {
        {"ln1", &Gemma4VisionLayer::ln1},
        {"attn_q_norm", &Gemma4VisionLayer::q_norm},
        {"attn_k_norm", &Gemma4VisionLayer::k_norm},
        {"attn_post_norm", &Gemma4VisionLayer::attn_post_norm},
        {"ln2", &Gemma4VisionLayer::ln2},
        {"ffn_post_norm", &Gemma4VisionLayer::ffn_post_norm}};
    bool known = false;
    for (const auto& [name, member] : kLinears) {
      if (suffix != name) continue;
      known = true;
      ClippedLinear& cl = L.*member;
      if (bound.empty()) {
        cl.w = ToWeight(*t);
      } else {
        ASSIGN_OR_RETURN(known, SetClipBound(*t, bound, file.path() + ": vision tensor '" + n + "'", &cl));
      }
    }
    for (const auto& [name, member] : kNorms) {
      if (suffix == name && bound.empty()) {
        L.*member = ToF32(*t);
        known = true;
      }
    }
    if (!known) return Internal("vision binder does not know tensor '" + n + "'");
  }
  for (int64_t l = 0; l < cfg->num_layers; ++l) {
    for (const ClippedLinear* cl : {&m->layers_[l].q, &m->layers_[l].k, &m->layers_[l].v, &m->layers_[l].o,
                                    &m->layers_[l].gate, &m->layers_[l].up, &m->layers_[l].down}) {
      RETURN_IF_ERROR(CheckClipBounds(*cl, file.path() + ": vision layer " + std::to_string(l)));
    }
  }
  // 2-D RoPE: each axis rotates hd/2 channels, inv_freq_i = θ^(−2i/(hd/2)) (HF spatial_dim = hd/2).
  const int64_t sec = cfg->head_dim / 2;
  m->rope_inv_freq_ = ops::RopeInvFreq(sec, cfg->rope_theta, sec / 2);
  return m;
}

Status Gemma4Vision::Encode(const VisionInput& in, ops::MatMulMode mode, ThreadPool* pool, std::vector<float>* soft,
                            VisionTrace* trace) const {
  // The fast path multiplies the (bf16) tower's weights with activations rounded to bf16, and
  // runs the attention's products in bf16, where the CPU has the bf16 dot products: well within
  // the reduced tier on the vision oracle (tools/convert/quant_plan.cc, tests/oracle_vision_test.cc).
  if (mode == ops::MatMulMode::kFast) mode = ops::MatMulMode::kFastBf16;
  const Gemma4VisionConfig& c = cfg_;
  const int64_t N = in.n_patches(), Dv = c.hidden_size, Iv = c.intermediate_size, H = c.num_heads;
  const int64_t hd = c.head_dim, QD = H * hd, k = c.pooling_kernel_size, D = c.text_hidden_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  if (N <= 0 || in.grid_h % k != 0 || in.grid_w % k != 0 ||
      static_cast<int64_t>(in.patches.size()) != N * c.patch_dim()) {
    return InvalidArgument("vision input: a " + std::to_string(in.grid_h) + "×" + std::to_string(in.grid_w) +
                           " patch grid must be non-empty, in multiples of " + std::to_string(k) +
                           ", with patch_dim values per patch");
  }
  if (in.grid_h > c.position_embedding_size || in.grid_w > c.position_embedding_size) {
    return InvalidArgument("vision input: the patch grid exceeds the position table");
  }

  // ---- Gemma4VisionPatchEmbedder: input_proj(2·(pixel − 0.5)) + table[0][x] + table[1][y] ----
  const int64_t P = c.patch_dim();
  std::vector<float> px(in.patches.size());  // [N, p·p·3]
  ParallelForOrInline(pool, N, [&](int64_t t0, int64_t t1) {
    for (int64_t i = t0 * P; i < t1 * P; ++i) px[i] = 2.0f * (in.patches[i] - 0.5f);
  }, 64);
  std::vector<float> x(static_cast<size_t>(N * Dv));  // [N, Dv] residual stream
  ops::MatMul(patch_embd_, px.data(), N, x.data(), mode, pool);
  ParallelForOrInline(pool, N, [&](int64_t t0, int64_t t1) {
    std::vector<float> row(static_cast<size_t>(Dv));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t col = t % in.grid_w, rw = t / in.grid_w;
      ops::DequantizeWeightRow(pos_table_, col, row.data());
      ops::AddInPlace(x.data() + t * Dv, row.data(), Dv);
      ops::DequantizeWeightRow(pos_table_, c.position_embedding_size + rw, row.data());
      ops::AddInPlace(x.data() + t * Dv, row.data(), Dv);
    }
  }, 64);
  if (trace) trace->patch_embed = x;

  // 2-D RoPE tables: [N, hd/4] by column x (first half of each head), by row y (second half).
  const int64_t quarter = hd / 4;
  std::vector<int64_t> pos_x(N), pos_y(N);
  for (int64_t t = 0; t < N; ++t) {
    pos_x[t] = t % in.grid_w;
    pos_y[t] = t / in.grid_w;
  }
  std::vector<float> cos_x(N * quarter), sin_x(N * quarter), cos_y(N * quarter), sin_y(N * quarter);
  ops::RopeAngles(rope_inv_freq_, pos_x.data(), N, cos_x.data(), sin_x.data());
  ops::RopeAngles(rope_inv_freq_, pos_y.data(), N, cos_y.data(), sin_y.data());

  // Gemma4VisionAttention: scaling 1.0 (q/k norms instead of 1/√hd), every patch sees every patch.
  const ops::DenseAttentionShape shape{H, H, hd, 1.0f,
                                      mode == ops::MatMulMode::kFastBf16 ? ops::DenseAttentionMath::kBf16
                                                                         : ops::DenseAttentionMath::kF32};
  // scratch: the attention's packed keys and values.
  std::vector<float> h(N * Dv), scratch(ops::DenseAttentionScratch(shape, N)), q(N * QD), kk(N * QD), v(N * QD),
      a(N * QD), d(N * Dv), gate(N * Iv);
  for (const Gemma4VisionLayer& L : layers_) {
    // ---- Gemma4VisionAttention, bidirectional over the image's patches ----
    ops::RmsNormQuantize(x.data(), L.ln1.data(), N, Dv, eps, h.data(), nullptr, pool);
    // The clipped linears' input clamps inside the products, their output clamps in the passes
    // that read the outputs next (a pass of their own would read them back from memory).
    ops::MatMul(L.q.w, ops::MatMulInput(h.data(), L.q.input()), N, q.data(), mode, pool);
    ops::MatMul(L.k.w, ops::MatMulInput(h.data(), L.k.input()), N, kk.data(), mode, pool);
    ops::MatMul(L.v.w, ops::MatMulInput(h.data(), L.v.input()), N, v.data(), mode, pool);
    // Per patch, while its rows are in cache: the output clamps, the q/k norms, the weightless v
    // norm, 2-D RoPE.
    ParallelForOrInline(pool, N, [&](int64_t t0, int64_t t1) {
      const int64_t n = t1 - t0, off = t0 * QD;
      ops::Clamp(q.data() + off, n * QD, L.q.output(), q.data() + off);
      ops::Clamp(kk.data() + off, n * QD, L.k.output(), kk.data() + off);
      ops::Clamp(v.data() + off, n * QD, L.v.output(), v.data() + off);
      ops::RmsNorm(q.data() + off, L.q_norm.data(), n * H, hd, eps, q.data() + off);
      ops::RmsNorm(kk.data() + off, L.k_norm.data(), n * H, hd, eps, kk.data() + off);
      ops::RmsNorm(v.data() + off, nullptr, n * H, hd, eps, v.data() + off);
      const float* cos_s[2] = {cos_x.data() + t0 * quarter, cos_y.data() + t0 * quarter};
      const float* sin_s[2] = {sin_x.data() + t0 * quarter, sin_y.data() + t0 * quarter};
      ops::ApplyRopeSections(q.data() + off, n, H, hd, 2, cos_s, sin_s);
      ops::ApplyRopeSections(kk.data() + off, n, H, hd, 2, cos_s, sin_s);
    }, 16);
    ops::DenseAttention(shape, q.data(), QD, N, kk.data(), v.data(), QD, N, a.data(), QD, scratch.data(), pool);
    ops::MatMul(L.o.w, ops::MatMulInput(a.data(), L.o.input()), N, d.data(), mode, pool);
    ClampAddRmsNorm(L.o.output(), x.data(), d.data(), L.attn_post_norm.data(), N, Dv, eps, pool);
    // ---- Gemma4VisionMLP: down(gelu_tanh(gate(h')) · up(h')) ----
    ops::RmsNormQuantize(x.data(), L.ln2.data(), N, Dv, eps, h.data(), nullptr, pool);
    // Fused: the up product and the GeGLU a tile at a time while it is in cache.
    ops::MatMulGeGlu(L.gate.w, L.up.w, ops::MatMulInput(h.data(), L.gate.input()), N, gate.data(), mode, pool,
                     L.gate.output(), L.up.output(), L.up.input());
    ops::MatMul(L.down.w, ops::MatMulInput(gate.data(), L.down.input()), N, d.data(), mode, pool);
    ClampAddRmsNorm(L.down.output(), x.data(), d.data(), L.ffn_post_norm.data(), N, Dv, eps, pool);
  }

  // ---- Gemma4VisionPooler: mean of each k×k block (row-major over the pooled grid), ×√Dv ----
  // Each pooled token sums its block's patches in patch order (t = y·grid_w + x increasing).
  const int64_t pw = in.grid_w / k, n_soft = (in.grid_h / k) * pw;
  std::vector<float> pooled(static_cast<size_t>(n_soft * Dv), 0.0f);
  const float scale = static_cast<float>(std::sqrt(static_cast<double>(Dv)) / static_cast<double>(k * k));
  ParallelForOrInline(pool, n_soft, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      float* dst = pooled.data() + b * Dv;
      const int64_t x0 = b % pw * k, y0 = b / pw * k;
      for (int64_t y = y0; y < y0 + k; ++y) {
        for (int64_t xp = x0; xp < x0 + k; ++xp) ops::AddInPlace(dst, x.data() + (y * in.grid_w + xp) * Dv, Dv);
      }
      ops::Scale(dst, Dv, scale);
    }
  }, 4);
  if (trace) trace->pooled = pooled;

  // ---- Gemma4MultimodalEmbedder: RMSNorm without weight, then the projection to D ----
  ops::RmsNorm(pooled.data(), nullptr, n_soft, Dv, eps, pooled.data());
  soft->resize(static_cast<size_t>(n_soft * D));
  ops::MatMul(proj_, pooled.data(), n_soft, soft->data(), mode, pool);
  return Status::Ok();
}

}  // namespace gemlet::model
