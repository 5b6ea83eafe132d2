// Gemma 4's vision tower and embed_vision on the project's ops (spec-multimodal §1.3–1.4;
// HF modeling_gemma4.py: Gemma4VisionPatchEmbedder, Gemma4VisionEncoderLayer, Gemma4VisionAttention,
// Gemma4VisionMLP, Gemma4VisionPooler, Gemma4MultimodalEmbedder): the patches of one image in,
// its soft tokens [n_soft, D] (rows of the decoder's input embedding) out.
//
// Bound from a .gemlet file only when an image is encoded: a text-only engine never touches
// the tower's pages (the mapping is shared, nothing is read at startup).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "format/gemlet_file.h"
#include "model/clipped_linear.h"
#include "model/gemma4_image.h"
#include "model/gemma4_vision_tensors.h"
#include "ops/matmul.h"
#include "ops/weight.h"

namespace gemlet::model {

struct Gemma4VisionLayer {
  ClippedLinear q, k, v, o, gate, up, down;
  std::vector<float> ln1, q_norm, k_norm, attn_post_norm, ln2, ffn_post_norm;  // RMSNorm weights (as stored)
};

// Intermediates an encode can hand back (for tests that localise a difference).
struct VisionTrace {
  std::vector<float> patch_embed;  // [n_patches, Dv] after the position table
  std::vector<float> pooled;       // [n_soft, Dv] after the pooler's ×√Dv
};

class Gemma4Vision {
 public:
  // True if the file's metadata has a "vision" config (a converted checkpoint with a tower).
  static bool Present(const GemletFile& file);
  // Binds every tensor of ExpectedVisionTensors; `file` must outlive the tower.
  static Result<std::unique_ptr<Gemma4Vision>> Bind(const GemletFile& file);

  const Gemma4VisionConfig& config() const { return cfg_; }
  int64_t n_soft(const VisionInput& in) const {
    return (in.grid_h / cfg_.pooling_kernel_size) * (in.grid_w / cfg_.pooling_kernel_size);
  }

  // soft [n_soft, D] for one image. `pool` may be null. Deterministic for any thread count.
  Status Encode(const VisionInput& in, ops::MatMulMode mode, ThreadPool* pool, std::vector<float>* soft,
                VisionTrace* trace = nullptr) const;

 private:
  Gemma4Vision() = default;
  Gemma4VisionConfig cfg_;
  ops::Weight patch_embd_;  // [Dv, p·p·3]
  ops::Weight pos_table_;   // [2·P, Dv]: rows [0, P) by column x, [P, 2P) by row y
  ops::Weight proj_;        // [D, Dv]
  std::vector<Gemma4VisionLayer> layers_;
  std::vector<float> rope_inv_freq_;  // [hd/4]
};

}  // namespace gemlet::model
