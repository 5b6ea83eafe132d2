// The Gemma 4 text decoder's forward pass (../shared/spec/gemma4-text.md §2) over a batch of
// rows: one pass over the weights serves every row. A row is a token (or an input-embedding
// row, for image and audio soft tokens) of one sequence at that sequence's next position.
// Rows of one sequence are consecutive and in position order, so a prefill chunk, a decode
// step, a verify of K drafted tokens and several sequences decoding side by side are all
// one batch. Every matrix product and the attention go through src/ops.
//
// A row's outputs do not depend on which other rows share its batch, bit for bit: every
// product computes each row in a fixed order (ops/matmul.h), and each sequence attends only
// over its own store and its own fresh rows (ops/attention.h: results do not depend on how
// rows are grouped into blocks or keys into segments).
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "model/forward_types.h"
#include "model/gemma4_model.h"
#include "model/kv_store.h"

namespace gemlet::model {

// One sequence's part of a batch: the next `rows` rows, at positions kv->size() … +rows − 1.
struct BatchSequence {
  KvStore* kv = nullptr;
  int64_t rows = 0;
};

// The rows of one forward pass and what it should return. R = tokens.size().
struct Batch {
  // [R] token ids. At an embedding row the id is the one whose per-layer embedding the row
  // uses (Gemma 4: the pad id 0 at image and audio positions, spec-multimodal §1.4).
  std::span<const int32_t> tokens;
  // Rows whose input embedding is given instead of looked up (increasing), and those
  // embeddings [embed_rows.size(), D], used as they are (not scaled by √D).
  std::span<const int64_t> embed_rows = {};
  const float* embeddings = nullptr;
  // The sequences in row order; their rows add up to R; each store appears once.
  std::span<const BatchSequence> seqs;
  // Rows whose outputs are wanted (increasing), and where to write them (either may be null):
  // logits [out_rows.size(), V] (softcapped) and hidden [out_rows.size(), D] (the final hidden
  // state after the final norm, Gemma4TextModel's last_hidden_state, which the MTP drafter reads).
  std::span<const int64_t> out_rows = {};
  float* logits = nullptr;
  float* hidden = nullptr;
};

// Runs the decoder over the batch, each row attending over what its sequence's store holds
// and over its sequence's earlier rows in the batch, and stores every row's K/V in its
// sequence's store (each store advances by its rows). With options.skip_shared_rows, a
// sequence none of whose rows has an output stops after the last layer that writes K/V.
// Errors (nothing is computed or stored): a token id outside [0, V), a store over its limit.
Status Forward(const Gemma4Model& model, const Batch& batch, ForwardScratch* scratch, const ForwardOptions& options);

// A batch of one sequence: `tokens` after what `kv` holds, with the logits of the rows
// listed in `logit_rows` written to logits [logit_rows.size(), V] (null when none are asked).
Status Forward(const Gemma4Model& model, std::span<const int32_t> tokens, std::span<const int64_t> logit_rows,
               KvStore* kv, ForwardScratch* scratch, const ForwardOptions& options, float* logits);

}  // namespace gemlet::model
