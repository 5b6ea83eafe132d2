// Options and working memory of the forward pass (model/gemma4_forward.h), apart from it so
// that the steps it is built from (model/forward_steps.h) need not include it.
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernels.h"
#include "ops/matmul.h"

namespace gemlet::model {

struct ForwardOptions {
  ops::MatMulMode mode = ops::MatMulMode::kExact;
  ThreadPool* pool = nullptr;  // null: single-threaded
  // Shared-layer skip: from the first KV-shared layer on, compute only the rows whose outputs
  // are wanted (those layers write no K/V another position reads). Never changes an output;
  // false runs every row through every layer (for tests and `gemlet logits --no-skip`).
  bool skip_shared_rows = true;
};

// Working memory of the forward pass, owned by whoever runs it (a session, a batch stepper)
// and reused from step to step (steady-state decode allocates nothing). Sizes follow the
// largest batch seen. R = rows of the batch, A = rows still computed.
struct ForwardScratch {
  std::vector<float> x;                           // [R, D] residual stream
  std::vector<float> a;                           // [R, D] normed input of a block
  std::vector<kernels::ActBlock> aq;              // [R, D/32] its int8 blocks (fast path)
  std::vector<float> q;                           // [A, H·hd] queries, then the attention's output
  std::vector<float> d;                           // [R, D] block output before its post-norm
  std::vector<float> gate;                        // [A, I] the GeGLU product
  std::vector<float> ple;                         // [R, L·P] per-layer inputs
  std::vector<float> ple_tok;                     // [min(R, 32), L·P] token part of the per-layer inputs
  std::vector<float> g;                           // [A, P] per-layer-input gate
  std::vector<float> cos_s, sin_s, cos_f, sin_f;  // [R, hd/2] RoPE tables per layer type
  std::vector<int64_t> pos;                       // [R] position of each row
  std::vector<std::vector<float>> k, v;           // [L][R, Hkv·hd] fresh K/V of the layers KV-shared
                                                  // layers read (kept to the step's end)
  std::vector<std::vector<BlockQ8>> k8, v8;       // [L][R, Hkv·hd/32] the same, of q8 stores, in q8
  std::vector<float> k_fresh, v_fresh;            // [R, Hkv·hd] fresh K/V of the current other layer
  std::vector<BlockQ8> k8_fresh, v8_fresh;        // [R, Hkv·hd/32] the same, of q8 stores, in q8
  std::vector<float> head;                        // [outputs, D] rows after the final norm
  std::vector<int64_t> out;                       // [outputs] active row of each output
  std::vector<int64_t> keep;                      // [A] batch row of each active row
  std::vector<int64_t> active0, active_n;         // [S] each sequence's active rows
};

}  // namespace gemlet::model
