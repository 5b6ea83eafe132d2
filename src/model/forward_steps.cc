#include "model/forward_steps.h"

#include "ops/embedding.h"

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

}  // namespace gemlet::model
