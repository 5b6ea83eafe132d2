// One decode step for N independent sequences in one pass over the weights (the server's
// batched decoding, tools/server/scheduler.h). Row i is token tokens[i] at position
// kvs[i]->size() of its own sequence and attends only over kvs[i]. Every matrix product runs
// over the [N, D] batch, so the weights are read once for all N tokens; attention, RoPE and
// the KV commit run row by row.
//
// Each row's math is exactly Forward() on that sequence alone with one token (the same ops in
// the same order; MatMul rows are independent), so a row's logits do not depend on which
// other sequences share the batch (bit-identical in ops::MatMulMode::kExact).
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "model/gemma4_forward.h"
#include "model/gemma4_model.h"
#include "model/kv_store.h"

namespace gemlet::model {

// Writes the softcapped logits of every row to logits [N, V]. The stores must be distinct.
// Errors (nothing is computed or stored): a token id outside [0, V), a store over its limit.
Status ForwardBatch(const Gemma4Model& model, std::span<const int32_t> tokens, std::span<KvStore* const> kvs,
                    ForwardScratch* scratch, const ForwardOptions& options, float* logits);

}  // namespace gemlet::model
