// The Gemma 4 text decoder's forward pass (../shared/spec/gemma4-text.md §2) over a chunk
// of T ≥ 1 tokens: prefill chunks and decode steps are the same code. Every matrix product
// and the attention go through src/ops.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/gemma4_model.h"
#include "model/kv_store.h"
#include "ops/matmul.h"

namespace gemlet::model {

struct ForwardOptions {
  ops::MatMulMode mode = ops::MatMulMode::kExact;
  ThreadPool* pool = nullptr;  // null: single-threaded
  // Prefill skip: from the first KV-shared layer on, compute only the rows whose logits are
  // wanted (those layers write no K/V another position reads). Never changes a logit; false
  // runs every row through every layer (for tests and `gemlet logits --no-skip`).
  bool skip_shared_rows = true;
};

// Working memory of the forward pass, owned by a session and reused from step to step
// (steady-state decode allocates nothing). Sizes follow the largest chunk seen.
struct ForwardScratch {
  std::vector<float> x;                           // [T, D] residual stream
  std::vector<float> a;                           // [T, D] normed input of a block
  std::vector<kernels::ActBlock> aq;              // [T, D/32] its int8 blocks (fast path)
  std::vector<float> q;                           // [T, H·hd]
  std::vector<float> o;                           // [T, H·hd] attention output
  std::vector<float> d;                           // [T, D] block output before its post-norm
  std::vector<float> gate;                        // [T, I] (also the GeGLU product)
  std::vector<float> up;                          // [T, I]
  std::vector<float> ple;                         // [T, L·P] per-layer inputs
  std::vector<float> ple_tok;                     // [T, L·P] token part of the per-layer inputs
  std::vector<float> g;                           // [T, P] per-layer-input gate
  std::vector<float> cos_s, sin_s, cos_f, sin_f;  // [T, hd/2] RoPE tables per layer type
  std::vector<int64_t> pos;                       // [T]
  std::vector<std::vector<float>> k, v;           // [L][T, Hkv·hd] fresh K/V of each cached layer
  std::vector<float> head;                        // [rows, D] normed rows for the LM head
};

// Runs the decoder over `tokens` at positions kv->size() … kv->size() + T − 1, attending over
// what `kv` holds, and stores the chunk's K/V in `kv`. Writes the softcapped logits of the
// chunk rows listed in `logit_rows` (increasing indices into `tokens`) to
// logits [logit_rows.size(), V]; `logits` may be null when no rows are asked for.
// Errors (nothing is computed or stored): a token id outside [0, V), the KV limit.
Status Forward(const Gemma4Model& model, std::span<const int32_t> tokens, std::span<const int64_t> logit_rows,
               KvStore* kv, ForwardScratch* scratch, const ForwardOptions& options, float* logits);

}  // namespace gemlet::model
