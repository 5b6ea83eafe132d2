#include "model/forward_steps.h"

#include <cmath>

#include "ops/embedding.h"
#include "ops/norm.h"

namespace gemlet::model {

void Elementwise(ThreadPool* pool, int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (pool != nullptr && n >= (int64_t{1} << 16)) {
    pool->ParallelFor(n, fn, int64_t{1} << 14);
  } else {
    fn(0, n);
  }
}

void GatherPerLayerTokenRows(const Gemma4Model& model, std::span<const int32_t> tokens, float* out) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (model.weights_file_mapped()) {
    ops::GatherRowsFromFileMapping(model.per_layer_token_embd(), tokens.data(), n, out);
  } else {
    ops::GatherRows(model.per_layer_token_embd(), tokens.data(), n, out);
  }
}

bool Int8(const ForwardOptions& options, std::initializer_list<const ops::Weight*> ws) {
  for (const ops::Weight* w : ws) {
    if (w != nullptr && ops::UsesInt8Activations(*w, options.mode)) return true;
  }
  return false;
}

void CombinePerLayerInputs(const Gemma4Model& model, int64_t n, float* ple, const float* ple_tok, ThreadPool* pool) {
  const Gemma4Config& c = model.config();
  const int64_t P = c.hidden_size_per_layer_input, rows = n * c.num_layers;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const float inv_sqrt_d = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.hidden_size)));
  const float sqrt_p = static_cast<float>(std::sqrt(static_cast<double>(P)));
  const float inv_sqrt2 = static_cast<float>(1.0 / std::sqrt(2.0));
  const float* norm_w = model.per_layer_proj_norm().data();
  auto run = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      float* p = ple + r * P;
      const float* e = ple_tok + r * P;
      for (int64_t i = 0; i < P; ++i) p[i] *= inv_sqrt_d;
      ops::RmsNorm(p, norm_w, 1, P, eps, p);
      for (int64_t i = 0; i < P; ++i) p[i] = (p[i] + e[i] * sqrt_p) * inv_sqrt2;
    }
  };
  if (pool != nullptr && rows >= 64) {
    pool->ParallelFor(rows, run, 32);
  } else {
    run(0, rows);
  }
}

}  // namespace gemlet::model
