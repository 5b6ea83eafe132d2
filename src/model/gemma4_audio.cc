#include "model/gemma4_audio.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "model/tensor_binding.h"
#include "ops/activation.h"
#include "ops/norm.h"

namespace gemlet::model {

namespace {

// A convolution kernel [C_out, …] viewed as the matrix [C_out, numel / C_out].
ops::Weight KernelMatrix(const TensorView& t) {
  ops::Weight w = ToWeight(t);
  w.rows = t.shape[0];
  w.cols = t.numel() / w.rows;
  w.row_bytes = t.nbytes / static_cast<uint64_t>(w.rows);
  return w;
}

// LayerNorm over the last dim with a weight and no bias (HF nn.LayerNorm(bias=False)):
// y = (x − mean) / √(var + eps) · w, in place over rows [rows, dim], then ReLU.
void LayerNormRelu(float* x, const float* w, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* p = x + r * dim;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < dim; ++i) mean += p[i];
    mean /= static_cast<double>(dim);
    for (int64_t i = 0; i < dim; ++i) var += (p[i] - mean) * (p[i] - mean);
    var /= static_cast<double>(dim);
    const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    for (int64_t i = 0; i < dim; ++i) p[i] = std::max(0.0f, (p[i] - static_cast<float>(mean)) * inv * w[i]);
  }
}

inline float Silu(float x) { return x / (1.0f + std::exp(-x)); }
inline float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// 3×3 stride-2 padding-1 patches of x [T, F, C] (channel fastest) for output rows
// [t0, t1): cols [(t1 − t0)·F', C·9], column ci·9 + kh·3 + kw (PyTorch's weight order).
void Im2Col(const float* x, int64_t T, int64_t F, int64_t C, int64_t t0, int64_t t1, float* cols) {
  const int64_t Fo = (F - 1) / 2 + 1;
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t f = 0; f < Fo; ++f) {
      float* p = cols + ((t - t0) * Fo + f) * C * 9;
      for (int64_t kh = 0; kh < 3; ++kh) {
        const int64_t ti = 2 * t - 1 + kh;
        for (int64_t kw = 0; kw < 3; ++kw) {
          const int64_t fi = 2 * f - 1 + kw;
          const bool in = ti >= 0 && ti < T && fi >= 0 && fi < F;
          const float* src = in ? x + (ti * F + fi) * C : nullptr;
          for (int64_t c = 0; c < C; ++c) p[c * 9 + kh * 3 + kw] = in ? src[c] : 0.0f;
        }
      }
    }
  }
}

// y [To, Fo, Co] = ReLU(LayerNorm(conv3x3s2(x [T, F, C]))), output rows with t·2 ≥ valid (the
// subsampled mask) zeroed. In chunks of output rows, to bound the patch buffer.
void ConvBlock(const float* x, int64_t T, int64_t F, int64_t C, const ops::Weight& w, const std::vector<float>& norm,
               float eps, int64_t valid_out, ops::MatMulMode mode, ThreadPool* pool, std::vector<float>* y) {
  const int64_t To = (T - 1) / 2 + 1, Fo = (F - 1) / 2 + 1, Co = w.rows;
  y->assign(static_cast<size_t>(To * Fo * Co), 0.0f);
  const int64_t chunk = std::max<int64_t>(1, (1 << 20) / std::max<int64_t>(1, Fo * C * 9));
  std::vector<float> cols(static_cast<size_t>(std::min(chunk, To) * Fo * C * 9));
  for (int64_t t0 = 0; t0 < To; t0 += chunk) {
    const int64_t t1 = std::min(To, t0 + chunk);
    Im2Col(x, T, F, C, t0, t1, cols.data());
    float* out = y->data() + t0 * Fo * Co;
    ops::MatMul(w, cols.data(), (t1 - t0) * Fo, out, mode, pool);
    LayerNormRelu(out, norm.data(), (t1 - t0) * Fo, Co, eps);
  }
  for (int64_t t = valid_out; t < To; ++t) std::fill_n(y->data() + t * Fo * Co, Fo * Co, 0.0f);
}

}  // namespace

bool Gemma4Audio::Present(const GemletFile& file) {
  const auto& m = file.metadata();
  return m.is_object() && m.contains("audio") && m["audio"].is_object();
}

Result<std::unique_ptr<Gemma4Audio>> Gemma4Audio::Bind(const GemletFile& file) {
  if (!Present(file)) {
    return NotFound(file.path() + ": the model has no audio tower (convert an HF checkpoint with an audio_config)");
  }
  auto cfg = Gemma4AudioConfig::FromJson(file.metadata()["audio"]);
  if (!cfg.ok()) return cfg.status().WithContext(file.path());
  std::unique_ptr<Gemma4Audio> m(new Gemma4Audio());
  m->cfg_ = *cfg;
  m->layers_.resize(cfg->num_layers);
  for (const TensorSpec& spec : ExpectedAudioTensors(*cfg)) {
    const TensorView* t = file.Find(spec.name);
    if (!t && spec.cls == TensorClass::kScalar) continue;  // an absent clip bound: unbounded
    ASSIGN_OR_RETURN(t, FindChecked(file, spec));
    const std::string& n = spec.name;
    if (spec.layer < 0) {
      if (n == "a.conv0") m->conv0_ = KernelMatrix(*t);
      else if (n == "a.conv1") m->conv1_ = KernelMatrix(*t);
      else if (n == "a.conv0_norm") m->conv0_norm_ = ToF32(*t);
      else if (n == "a.conv1_norm") m->conv1_norm_ = ToF32(*t);
      else if (n == "a.input_proj") m->input_proj_ = ToWeight(*t);
      else if (n == "a.output_proj") m->output_proj_ = ToWeight(*t);
      else if (n == "a.output_proj_bias") m->output_bias_ = ToF32(*t);
      else if (n == "mm.a.input_projection") m->embed_proj_ = ToWeight(*t);
      else return Internal("audio binder does not know tensor '" + n + "'");
      continue;
    }
    Gemma4AudioLayer& L = m->layers_[spec.layer];
    std::string suffix = n.substr(n.find('.', 6) + 1);  // after "a.blk.N."
    std::string bound;
    if (const size_t dot = suffix.find('.'); dot != std::string::npos) {
      bound = suffix.substr(dot + 1);
      suffix = suffix.substr(0, dot);
    }
    const std::map<std::string, ClippedLinear*> linears = {
        {"ffn1_up", &L.ffn1.up}, {"ffn1_down", &L.ffn1.down}, {"ffn2_up", &L.ffn2.up},
        {"ffn2_down", &L.ffn2.down}, {"attn_q", &L.q},       {"attn_k", &L.k},
        {"attn_v", &L.v},           {"attn_out", &L.o},      {"conv_start", &L.conv_start},
        {"conv_end", &L.conv_end}};
    const std::map<std::string, std::vector<float>*> vectors = {
        {"ffn1_pre_norm", &L.ffn1.pre_norm}, {"ffn1_post_norm", &L.ffn1.post_norm},
        {"ffn2_pre_norm", &L.ffn2.pre_norm}, {"ffn2_post_norm", &L.ffn2.post_norm},
        {"attn_pre_norm", &L.attn_pre_norm}, {"attn_post_norm", &L.attn_post_norm},
        {"per_dim_scale", &L.per_dim_scale}, {"conv_pre_norm", &L.conv_pre_norm},
        {"conv_norm", &L.conv_norm},         {"norm_out", &L.norm_out},
        {"conv_dw", &L.conv_dw}};
    bool known = false;
    if (auto it = linears.find(suffix); it != linears.end()) {
      if (bound.empty()) {
        it->second->w = ToWeight(*t);
        known = true;
      } else {
        ASSIGN_OR_RETURN(known, SetClipBound(*t, bound, file.path() + ": audio tensor '" + n + "'", it->second));
      }
    } else if (auto v = vectors.find(suffix); v != vectors.end() && bound.empty()) {
      *v->second = ToF32(*t);
      known = true;
    } else if (suffix == "attn_rel_k" && bound.empty()) {
      L.rel_k = ToWeight(*t);
      known = true;
    }
    if (!known) return Internal("audio binder does not know tensor '" + n + "'");
  }
  for (int64_t l = 0; l < cfg->num_layers; ++l) {
    const Gemma4AudioLayer& L = m->layers_[l];
    for (const ClippedLinear* cl : {&L.ffn1.up, &L.ffn1.down, &L.ffn2.up, &L.ffn2.down, &L.q, &L.k, &L.v, &L.o,
                                    &L.conv_start, &L.conv_end}) {
      RETURN_IF_ERROR(CheckClipBounds(*cl, file.path() + ": audio layer " + std::to_string(l)));
    }
  }
  // Sinusoidal relative positions (Gemma4AudioRelativePositionEmbedding): distances 0..P,
  // [sin | cos] over Da/2 timescales from 1 to 1e4, geometric.
  const int64_t Da = cfg->hidden_size, P = cfg->past_horizon(), nt = Da / 2;
  m->rel_pos_.resize(static_cast<size_t>((P + 1) * Da));
  const double inc = std::log(1.0e4) / static_cast<double>(std::max<int64_t>(nt - 1, 1));
  for (int64_t d = 0; d <= P; ++d) {
    for (int64_t i = 0; i < nt; ++i) {
      const double a = static_cast<double>(d) * std::exp(-static_cast<double>(i) * inc);
      m->rel_pos_[d * Da + i] = static_cast<float>(std::sin(a));
      m->rel_pos_[d * Da + nt + i] = static_cast<float>(std::cos(a));
    }
  }
  return m;
}

void Gemma4Audio::Subsample(const AudioFeatures& f, ops::MatMulMode mode, ThreadPool* pool,
                            std::vector<float>* out) const {
  const float eps = static_cast<float>(cfg_.rms_norm_eps);
  const int64_t T = f.n_frames, F = f.n_mels, T1 = (T - 1) / 2 + 1, F1 = (F - 1) / 2 + 1;
  // The frame mask subsampled with [::2] after each convolution: row t of a stage is valid iff
  // 2t was valid before it.
  const int64_t v1 = (f.n_valid + 1) / 2, v2 = (v1 + 1) / 2;
  std::vector<float> y0, y1;
  ConvBlock(f.mel.data(), T, F, 1, conv0_, conv0_norm_, eps, v1, mode, pool, &y0);
  ConvBlock(y0.data(), T1, F1, cfg_.sscp_channels[0], conv1_, conv1_norm_, eps, v2, mode, pool, &y1);
  // [T2, F2, C1] rows are already (mel, channel) flattened, channel fastest.
  const int64_t T2 = (T1 - 1) / 2 + 1;
  out->resize(static_cast<size_t>(T2 * cfg_.hidden_size));
  ops::MatMul(input_proj_, y1.data(), T2, out->data(), mode, pool);
}

void Gemma4Audio::Attention(const Gemma4AudioLayer& L, float* x, int64_t T, ops::MatMulMode mode,
                            ThreadPool* pool) const {
  const int64_t Da = cfg_.hidden_size, H = cfg_.num_heads, hd = cfg_.head_dim(), W = cfg_.past_horizon();
  const float eps = static_cast<float>(cfg_.rms_norm_eps), clip = static_cast<float>(cfg_.gradient_clipping);
  const float cap = static_cast<float>(cfg_.logit_cap);
  std::vector<float> h(T * Da), q(T * Da), k(T * Da), v(T * Da), a(T * Da, 0.0f), R((W + 1) * Da);
  ops::Clamp(x, T * Da, {-clip, clip}, h.data());
  ops::RmsNorm(h.data(), L.attn_pre_norm.data(), T, Da, eps, h.data());
  ClippedMatMul(L.q, h.data(), T, q.data(), mode, pool);
  ClippedMatMul(L.k, h.data(), T, k.data(), mode, pool);
  ClippedMatMul(L.v, h.data(), T, v.data(), mode, pool);
  // q ·= hd^−½ / ln 2 · softplus(per_dim_scale), k ·= softplus(1) / softplus(0).
  const double ln2 = std::log(2.0);
  std::vector<float> qs(hd);
  for (int64_t d = 0; d < hd; ++d) {
    qs[d] = static_cast<float>(std::pow(static_cast<double>(hd), -0.5) / ln2 *
                               std::log1p(std::exp(static_cast<double>(L.per_dim_scale[d]))));
  }
  const float ks = static_cast<float>(std::log1p(std::exp(1.0)) / ln2);
  for (int64_t i = 0; i < T * H; ++i) {
    for (int64_t d = 0; d < hd; ++d) q[i * hd + d] *= qs[d];
  }
  ops::Scale(k.data(), T * Da, ks);
  ops::MatMul(L.rel_k, rel_pos_.data(), W + 1, R.data(), mode, pool);  // [P + 1, Da]
  // Each query t sees keys t − d for d < W (the current frame and W − 1 before it): logit
  // q·k + q·R[d] (the Transformer-XL shift puts distance q − k's embedding there), capped
  // cap·tanh(l/cap), softmax.
  std::vector<float> s(W);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t nk = std::min(W, t + 1);
    for (int64_t hh = 0; hh < H; ++hh) {
      const float* qp = q.data() + t * Da + hh * hd;
      float mx = -INFINITY;
      for (int64_t d = 0; d < nk; ++d) {
        const float* kp = k.data() + (t - d) * Da + hh * hd;
        const float* rp = R.data() + d * Da + hh * hd;
        float acc = 0;
        for (int64_t e = 0; e < hd; ++e) acc += qp[e] * (kp[e] + rp[e]);
        s[d] = cap * std::tanh(acc / cap);
        mx = std::max(mx, s[d]);
      }
      float sum = 0;
      for (int64_t d = 0; d < nk; ++d) sum += (s[d] = std::exp(s[d] - mx));
      float* ap = a.data() + t * Da + hh * hd;
      for (int64_t d = 0; d < nk; ++d) {
        const float p = s[d] / sum;
        const float* vp = v.data() + (t - d) * Da + hh * hd;
        for (int64_t e = 0; e < hd; ++e) ap[e] += p * vp[e];
      }
    }
  }
  ClippedMatMul(L.o, a.data(), T, h.data(), mode, pool);
  ops::Clamp(h.data(), T * Da, {-clip, clip}, h.data());
  ops::RmsNorm(h.data(), L.attn_post_norm.data(), T, Da, eps, h.data());
  ops::AddInPlace(x, h.data(), T * Da);
}

Status Gemma4Audio::Encode(const AudioFeatures& f, ops::MatMulMode mode, ThreadPool* pool, std::vector<float>* soft,
                           AudioTrace* trace) const {
  const Gemma4AudioConfig& c = cfg_;
  if (f.n_mels != c.n_mels || f.n_frames <= 0 || f.n_valid <= 0 || f.n_valid > f.n_frames ||
      static_cast<int64_t>(f.mel.size()) != f.n_frames * f.n_mels) {
    return InvalidArgument("audio features: [" + std::to_string(f.n_frames) + ", " + std::to_string(f.n_mels) +
                           "] with " + std::to_string(f.n_valid) + " valid frames; the tower needs " +
                           std::to_string(c.n_mels) + " mel bins and at least one valid frame");
  }
  const int64_t Da = c.hidden_size, I = 4 * Da, K = c.conv_kernel_size, Po = c.output_proj_dims;
  const float eps = static_cast<float>(c.rms_norm_eps), clip = static_cast<float>(c.gradient_clipping);
  const float rw = static_cast<float>(c.residual_weight);
  std::vector<float> x;
  Subsample(f, mode, pool, &x);
  if (trace) trace->sscp = x;
  const int64_t T = n_soft(f.n_valid);  // the valid rows (a prefix; see the header)
  x.resize(static_cast<size_t>(T * Da));

  std::vector<float> h(T * std::max(I, 2 * Da)), u(T * I), g(T * Da);
  auto feed_forward = [&](const Gemma4AudioFeedForward& F) {
    ops::Clamp(x.data(), T * Da, {-clip, clip}, h.data());
    ops::RmsNorm(h.data(), F.pre_norm.data(), T, Da, eps, h.data());
    ClippedMatMul(F.up, h.data(), T, u.data(), mode, pool);
    for (int64_t i = 0; i < T * I; ++i) u[i] = Silu(u[i]);
    ClippedMatMul(F.down, u.data(), T, h.data(), mode, pool);
    ops::Clamp(h.data(), T * Da, {-clip, clip}, h.data());
    ops::RmsNorm(h.data(), F.post_norm.data(), T, Da, eps, h.data());
    for (int64_t i = 0; i < T * Da; ++i) x[i] += rw * h[i];
  };
  for (const Gemma4AudioLayer& L : layers_) {
    feed_forward(L.ffn1);
    Attention(L, x.data(), T, mode, pool);
    // ---- Gemma4AudioLightConv1d ----
    ops::RmsNorm(x.data(), L.conv_pre_norm.data(), T, Da, eps, g.data());
    ClippedMatMul(L.conv_start, g.data(), T, h.data(), mode, pool);  // [T, 2·Da]
    for (int64_t t = 0; t < T; ++t) {  // GLU: a·sigmoid(b)
      for (int64_t i = 0; i < Da; ++i) g[t * Da + i] = h[t * 2 * Da + i] * Sigmoid(h[t * 2 * Da + Da + i]);
    }
    // Causal depthwise conv: y[t] = Σ_j w[j]·g[t − (K − 1) + j] (w[K − 1] takes the current frame).
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t i = 0; i < Da; ++i) {
        float acc = 0;
        for (int64_t j = 0; j < K; ++j) {
          const int64_t ti = t - (K - 1) + j;
          if (ti >= 0) acc += L.conv_dw[i * K + j] * g[ti * Da + i];
        }
        h[t * Da + i] = acc;
      }
    }
    ops::Clamp(h.data(), T * Da, {-clip, clip}, h.data());
    ops::RmsNorm(h.data(), L.conv_norm.data(), T, Da, eps, h.data());
    for (int64_t i = 0; i < T * Da; ++i) h[i] = Silu(h[i]);
    ClippedMatMul(L.conv_end, h.data(), T, g.data(), mode, pool);
    ops::AddInPlace(x.data(), g.data(), T * Da);
    feed_forward(L.ffn2);
    ops::Clamp(x.data(), T * Da, {-clip, clip}, x.data());
    ops::RmsNorm(x.data(), L.norm_out.data(), T, Da, eps, x.data());
  }
  // ---- output_proj (with bias), then Gemma4MultimodalEmbedder: RMSNorm without weight, projection ----
  std::vector<float> o(T * Po);
  ops::MatMul(output_proj_, x.data(), T, o.data(), mode, pool);
  for (int64_t t = 0; t < T; ++t) ops::AddInPlace(o.data() + t * Po, output_bias_.data(), Po);
  if (trace) trace->tower = o;
  ops::RmsNorm(o.data(), nullptr, T, Po, eps, o.data());
  soft->resize(static_cast<size_t>(T * c.text_hidden_size));
  ops::MatMul(embed_proj_, o.data(), T, soft->data(), mode, pool);
  return Status::Ok();
}

}  // namespace gemlet::model
