// Steps shared by Forward (gemma4_forward.cc) and ForwardBatch (gemma4_forward_batch.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/thread_pool.h"
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

}  // namespace gemlet::model
