// The Gemma 4 MTP drafter (../shared/spec/gemma4-multimodal-mtp.md §3.3–3.4, HF
// Gemma4AssistantForCausalLM; the conventions of ../shared/oracle/tiny-e2b-assistant/README.md).
// One draft step proposes the token after `token` from the target's hidden state h and the
// target's KV cache, which is the drafter's only context (it has no cache of its own):
//
//   in     = concat(target_embed(token) · √B, h)                  [2B]
//   x      = pre_projection(in)                                   [D]
//   L × (Q-only layer; attends the target KV of the last non-shared layer of its type)
//   y      = final_norm(x)                                        [D]
//   logits = sparse centroid head(y), or the dense y · E^T         [V]
//   h_next = post_projection(y)                                   [B]  (the next step's h)
//
// Every step of a round uses the same position P = the target KV's size (the index of the
// round's last token, which is not yet in the KV); the first step's h is the target's
// post-final-norm hidden state at P − 1 (model::Batch::hidden).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "format/gemlet_file.h"
#include "model/forward_types.h"
#include "model/gemma4_drafter_config.h"
#include "model/gemma4_model.h"
#include "model/kv_store.h"
#include "ops/weight.h"

namespace gemlet::model {

struct Gemma4DrafterLayer {
  ops::Weight attn_q;       // [H·hd, D]
  ops::Weight attn_output;  // [D, H·hd]
  ops::Weight ffn_gate;     // [I, D]
  ops::Weight ffn_up;       // [I, D]
  ops::Weight ffn_down;     // [D, I]
  std::vector<float> attn_norm, q_norm, post_attention_norm, ffn_norm, post_ffw_norm;  // [D] ([hd] q_norm)
  float layer_scalar = 1.0f;
};

class Gemma4Drafter {
 public:
  // True if the file carries a drafter (a drafter file, or a target file with one embedded).
  static bool InFile(const GemletFile& file);
  // Binds the drafter of `file` (its metadata's "drafter" config and the "drafter.*"
  // tensors); `file` must outlive it. Errors name the file and the tensor.
  static Result<std::unique_ptr<Gemma4Drafter>> Bind(const GemletFile& file);

  // The drafter can run on `target` (Gemma4DrafterConfig::CheckFits), with the file named.
  Status CheckFits(const Gemma4Model& target) const;

  const Gemma4DrafterConfig& config() const { return cfg_; }
  const ops::Weight& token_embd() const { return token_embd_; }  // [V, D], the tied LM head
  // The same rows in token_ordering's order [V, D], row-major: each centroid's tokens are
  // contiguous rows (row c · V/C + j is token_ordering[c · V/C + j]), so the sparse head reads
  // its k clusters as k runs, not as k · V/C scattered rows. Invalid without a sparse head.
  const ops::Weight& clustered_embd() const { return clustered_embd_.view; }
  const ops::Weight& pre_proj() const { return pre_proj_; }      // [D, 2B]
  const ops::Weight& post_proj() const { return post_proj_; }    // [B, D]
  const std::vector<float>& output_norm() const { return output_norm_; }
  const Gemma4DrafterLayer& layer(int64_t l) const { return layers_[l]; }
  // The sparse head: centroids [C, D] and the tokens of each cluster [C, V / C].
  bool has_sparse_head() const { return centroids_.valid(); }
  const ops::Weight& centroids() const { return centroids_; }
  const std::vector<int32_t>& token_ordering() const { return token_ordering_; }
  const std::vector<float>& rope_inv_freq(int64_t l) const {
    return cfg_.is_full(l) ? rope_full_ : rope_sliding_;
  }
  const std::string& path() const { return path_; }

 private:
  Gemma4Drafter() = default;

  std::string path_;
  Gemma4DrafterConfig cfg_;
  ops::Weight token_embd_, pre_proj_, post_proj_, centroids_;
  ops::OwnedWeight clustered_embd_;
  std::vector<float> output_norm_;
  std::vector<int32_t> token_ordering_;
  std::vector<Gemma4DrafterLayer> layers_;
  std::vector<float> rope_sliding_, rope_full_;
};

enum class DraftHead {
  kSparse,  // the centroid head (the draft path); the dense head if the file has no centroids
  kDense,   // y · E^T over the whole vocabulary
};

// What one draft step writes. Null pointers are not written.
struct DraftOutput {
  float* h_next = nullptr;         // [B] post_projection(y)
  float* sparse_logits = nullptr;  // [V] candidates' logits; every other one min(candidates) − 1
  float* dense_logits = nullptr;   // [V] (computed only if asked for, or if `head` is kDense)
  int32_t token = -1;              // the draft: argmax of `head`'s logits, ties to the lowest id
};

// Working memory of draft steps, reused from step to step.
struct DraftScratch {
  std::vector<float> in, x, a, q, o, d, gate, y, cos, sin, scores, cand, row, dense;
  std::vector<int32_t> top, ids;
};

// One draft step: the proposal after `token` given the target hidden state h [B], attending
// `kv` (the target's KV cache holding positions 0 … P − 1, P = kv.size(); the query is at
// position P). Reads neither more nor less than one row of the target's embedding and, on the
// sparse path, the centroids and the candidates' rows of the drafter's table (never the whole
// table). Errors: a token id outside the vocabulary, an empty KV, a sliding ring that no
// longer holds the W + 1 positions the drafter sees.
Status DraftStep(const Gemma4Drafter& drafter, const Gemma4Model& target, const KvStore& kv, int32_t token,
                 const float* h, DraftHead head, DraftScratch* scratch, const ForwardOptions& options,
                 DraftOutput* out);

}  // namespace gemlet::model
