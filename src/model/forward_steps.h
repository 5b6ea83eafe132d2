// Steps of the forward pass (gemma4_forward.cc) that stand on their own.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <vector>

#include "base/thread_pool.h"
#include "model/forward_types.h"
#include "model/gemma4_model.h"

namespace gemlet::model {

// fn over [0, n) split across the pool when n is large (element-wise work: GeGLU, softcap).
void Elementwise(ThreadPool* pool, int64_t n, const std::function<void(int64_t, int64_t)>& fn);

// v grown to at least n elements; its data.
template <typename T>
T* Sized(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(n);
  return v.data();
}

// The per-layer-embedding rows of `tokens` as floats: out [n, L * P]. From a mapped file the
// touched pages are dropped again, so the 1.3 GB table stays out of the resident set.
void GatherPerLayerTokenRows(const Gemma4Model& model, std::span<const int32_t> tokens, float* out);

// True if a product of any of `ws` (null entries skipped) quantizes its activations in
// options.mode: then a block's pre-norm makes the int8 blocks (ops::RmsNormQuantize).
bool Int8(const ForwardOptions& options, std::initializer_list<const ops::Weight*> ws);

// The per-layer inputs of n tokens (Gemma4TextModel.project_per_layer_inputs), in one pass per
// (token, layer) row of P values while it is in cache:
//   ple[t, l] = (RMSNorm(ple[t, l]·D^−½; per_layer_proj_norm) + ple_tok[t, l]·√P) · 2^−½
// ple [n, L, P] holds the projection W_plm · e_t on entry; ple_tok [n, L, P] the gathered
// per-layer token embeddings. The same bits as the separate passes (scale, norm, scale, add,
// scale). Rows split across `pool` (may be null).
void CombinePerLayerInputs(const Gemma4Model& model, int64_t n, float* ple, const float* ple_tok, ThreadPool* pool);

}  // namespace gemlet::model
